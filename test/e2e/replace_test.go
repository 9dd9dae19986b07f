package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withUpdateStrategy annotates the CRD of a rendered template with kapp's
// kapp.k14s.io/update-strategy.
func withUpdateStrategy(t *testing.T, n names, crd []byte, strategy string) []byte {
	t.Helper()
	meta := "metadata:\n  name: " + n.CRD + "\n"
	require.Contains(t, string(crd), meta)
	return []byte(strings.Replace(string(crd), meta,
		meta+"  annotations:\n    kapp.k14s.io/update-strategy: "+strategy+"\n", 1))
}

// replaced rewrites a rendered template (old -> new pairs), each of which
// must occur.
func replaced(t *testing.T, data []byte, pairs ...string) []byte {
	t.Helper()
	s := string(data)
	for i := 0; i+1 < len(pairs); i += 2 {
		require.Contains(t, s, pairs[i])
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return []byte(s)
}

// countCRs returns how many custom resources of the test's CRD exist.
func (e *env) countCRs(t *testing.T, n names) int {
	t.Helper()
	list, err := e.dyn.Resource(n.gvr("v1")).List(tctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	return len(list.Items)
}

// TestAlwaysReplaceIsBlocked: with update strategy always-replace (the
// annotation, or kapp's --apply-default-update-strategy) kapp deletes and
// recreates the CRD, which deletes every custom resource. A safe schema
// change so made is blocked as a crdDeletion naming the strategy and the
// number of custom resources, and the cluster stays as it was. The control
// at the end deploys the same without the check: the custom resources are
// gone.
func TestAlwaysReplaceIsBlocked(t *testing.T) {
	cases := []struct {
		name     string
		annotate bool
		flags    []string
	}{
		{name: "annotation", annotate: true},
		{name: "default-update-strategy-flag", flags: []string{"--apply-default-update-strategy=always-replace"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, n := baseApp(t)
			before := e.snapshot(t, n)
			require.Len(t, before.CRs, 2)

			crd := n.render(t, "safe/new.yaml")
			if tc.annotate {
				crd = withUpdateStrategy(t, n, crd, "always-replace")
			}
			newDir := dir(t, map[string][]byte{"crd.yaml": crd, "marker.yaml": n.marker()})
			r := e.deploy(t, n.App, []string{newDir}, append([]string{preflightFlag}, tc.flags...)...)
			requireBlocked(t, r)
			requireFinding(t, r.out, "crdDeletion", n.CRD,
				"update strategy always-replace: kapp would delete and recreate the CRD, deleting its 2 existing custom resources")
			e.requireUnchanged(t, n, before)

			// Control: kapp really replaces the CRD, and the custom resources
			// go with it.
			withoutMarker := dir(t, map[string][]byte{"crd.yaml": crd})
			e.deployOK(t, n.App, []string{withoutMarker}, tc.flags...)
			require.Zero(t, e.countCRs(t, n), "kapp did not replace the CRD: the test proves nothing")
		})
	}
}

// TestFallbackOnReplace: with fallback-on-replace kapp deletes and
// recreates the CRD when the apiserver refuses the update as invalid. A
// change the apiserver refuses (names.kind or scope of an established CRD)
// is blocked as a crdDeletion naming the strategy, why, and the custom
// resources lost; an update the apiserver accepts cannot fall back and goes
// through.
func TestFallbackOnReplace(t *testing.T) {
	cases := []struct {
		name  string
		edits func(n names) []string
	}{
		{name: "names-kind-changed", edits: func(n names) []string {
			return []string{"kind: " + n.Kind + "\n", "kind: " + n.Kind + "Renamed\n",
				"listKind: " + n.Kind + "List\n", "listKind: " + n.Kind + "RenamedList\n"}
		}},
		{name: "scope-changed", edits: func(names) []string {
			return []string{"scope: Namespaced", "scope: Cluster"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, n := baseApp(t)
			before := e.snapshot(t, n)

			crd := withUpdateStrategy(t, n, replaced(t, n.render(t, "base/crd.yaml"), tc.edits(n)...), "fallback-on-replace")
			r := e.deploy(t, n.App, []string{dir(t, map[string][]byte{"crd.yaml": crd, "marker.yaml": n.marker()})}, preflightFlag)
			requireBlocked(t, r)
			requireFinding(t, r.out, "crdDeletion", n.CRD,
				"update strategy fallback-on-replace, and the apiserver refuses the update (", "field is immutable",
				"kapp would delete and recreate the CRD, deleting its 2 existing custom resources")
			e.requireUnchanged(t, n, before)
		})
	}

	t.Run("accepted-update", func(t *testing.T) {
		t.Parallel()
		e, n := baseApp(t)
		crd := withUpdateStrategy(t, n, n.render(t, "safe/new.yaml"), "fallback-on-replace")
		r := e.deployOK(t, n.App, []string{dir(t, map[string][]byte{"crd.yaml": crd})}, preflightFlag)
		requireNoFinding(t, r.out, "crdDeletion", n.CRD)
		require.Contains(t, e.crdSchemaJSON(t, n, "v1"), "priority", "the safe change was not applied")
		require.Equal(t, 2, e.countCRs(t, n), "an accepted update must not replace the CRD")
	})
}

// TestToolsReportsReplace: `kapp tools crd-upgrade-safety` against the live
// cluster reports a replace like the deploy does.
func TestToolsReportsReplace(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	before := e.snapshot(t, n)
	tools := func(file string, flags ...string) result {
		return e.kapp(t, "", append([]string{"tools", "crd-upgrade-safety", "--file2", file}, flags...)...)
	}
	write := func(crd []byte) string {
		return filepath.Join(dir(t, map[string][]byte{"crd.yaml": crd}), "crd.yaml")
	}
	safe := n.render(t, "safe/new.yaml")

	t.Run("annotation", func(t *testing.T) {
		r := tools(write(withUpdateStrategy(t, n, safe, "always-replace")))
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "crdDeletion", n.CRD, "update strategy always-replace", "deleting its 2 existing custom resources")
	})
	t.Run("default-update-strategy-flag", func(t *testing.T) {
		r := tools(write(safe), "--apply-default-update-strategy=always-replace")
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "crdDeletion", n.CRD, "update strategy always-replace", "deleting its 2 existing custom resources")
	})
	t.Run("fallback-on-replace-refused", func(t *testing.T) {
		crd := withUpdateStrategy(t, n, replaced(t, n.render(t, "base/crd.yaml"), "scope: Namespaced", "scope: Cluster"), "fallback-on-replace")
		r := tools(write(crd))
		require.Equalf(t, 3, r.exitCode, "output:\n%s", r.out)
		requireFinding(t, r.out, "crdDeletion", n.CRD, "update strategy fallback-on-replace", "deleting its 2 existing custom resources")
	})
	t.Run("fallback-on-replace-accepted", func(t *testing.T) {
		r := tools(write(withUpdateStrategy(t, n, safe, "fallback-on-replace")))
		require.Equalf(t, 0, r.exitCode, "output:\n%s", r.out)
		requireNoFinding(t, r.out, "crdDeletion", n.CRD)
	})
	e.requireUnchanged(t, n, before)
}
