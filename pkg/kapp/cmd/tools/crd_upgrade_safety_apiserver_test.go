package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// rowsOf returns "crd field check severity" of the rows naming check.
func rowsOf(t *testing.T, resp jsonResp, check string) []string {
	t.Helper()
	out := []string{}
	for _, r := range resp.rows(t) {
		if r["check"] == check {
			out = append(out, r["crd"]+" "+r["field"]+" "+r["check"]+" "+r["severity"]+": "+r["message"])
		}
	}
	return out
}

// TestCRDUpgradeSafetyAPIServerRejects: a new CRD the apiserver would refuse
// is an apiserverRejects error finding (exit status 3), found by the
// apiserver's own validation, offline; an old CRD from a file that the
// apiserver would refuse is a warning.
func TestCRDUpgradeSafetyAPIServerRejects(t *testing.T) {
	t.Run("invalid new CRD", func(t *testing.T) {
		resp, err := run(t, []string{td("old.yaml")}, []string{td("invalid-schema.yaml")}, nil)
		requireUnsafe(t, err)
		require.Equal(t, []string{"widgets.example.com spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[size].type " +
			"apiserverRejects error: the apiserver refuses the update: Required value: must not be empty for specified object fields"},
			rowsOf(t, resp, "apiserverRejects"))
	})

	t.Run("invalid new CRD, not on the cluster yet: validated as a create", func(t *testing.T) {
		resp, err := run(t, nil, []string{td("invalid-schema.yaml")}, &fakeCluster{})
		requireUnsafe(t, err)
		require.Equal(t, []string{"widgets.example.com spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[size].type " +
			"apiserverRejects error: the apiserver refuses the create: Required value: must not be empty for specified object fields"},
			rowsOf(t, resp, "apiserverRejects"))
	})

	const invalidOld = "widgets.example.com  apiserverRejects warning: the old CRD is itself invalid, the apiserver would refuse to create it: " +
		"spec.versions[*].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"
	t.Run("invalid old CRD, a valid update: nothing to explain", func(t *testing.T) {
		resp, err := run(t, []string{td("invalid-schema.yaml")}, []string{td("new-safe.yaml")}, nil)
		require.NotErrorIs(t, err, inputs.ErrInvalidInput)
		require.Empty(t, rowsOf(t, resp, "apiserverRejects"),
			"the apiserver accepts the update: the old CRD is not validated on its own")
	})

	t.Run("invalid old CRD, unchanged: a warning", func(t *testing.T) {
		resp, err := run(t, []string{td("invalid-schema.yaml")}, []string{td("invalid-schema.yaml")}, nil)
		require.NotErrorIs(t, err, inputs.ErrInvalidInput)
		require.Equal(t, []string{invalidOld}, rowsOf(t, resp, "apiserverRejects"))
	})

	t.Run("off", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte(`apiVersion: kapp.k14s.io/v1alpha1
kind: Config
preflightRules:
- name: CRDUpgradeSafety
  config: {checks: {crd: {apiserverRejects: {enabled: false}}}}
`), 0o644))
		resp, _ := run(t, []string{td("invalid-schema.yaml")}, []string{td("invalid-schema.yaml"), cfg}, nil)
		require.Empty(t, rowsOf(t, resp, "apiserverRejects"))
	})
}

// withStrategy writes new-safe.yaml with the widgets CRD annotated with
// kapp.k14s.io/update-strategy (none when empty), optionally edited.
func withStrategy(t *testing.T, strategy string, edits ...string) string {
	t.Helper()
	data, err := os.ReadFile(td("new-safe.yaml"))
	require.NoError(t, err)
	s := string(data)
	if strategy != "" {
		s = strings.Replace(s, "  name: widgets.example.com\n",
			"  name: widgets.example.com\n  annotations: {kapp.k14s.io/update-strategy: "+strategy+"}\n", 1)
	}
	for i := 0; i+1 < len(edits); i += 2 {
		require.Contains(t, s, edits[i])
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	p := filepath.Join(t.TempDir(), "new.yaml")
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	return p
}

// TestCRDUpgradeSafetyLiveReplace: against the cluster, a CRD kapp would
// replace (per its annotation or --apply-default-update-strategy) and that
// has custom resources is a crdDeletion error naming the strategy and how
// many would be lost. The tools command never sends a dry run.
func TestCRDUpgradeSafetyLiveReplace(t *testing.T) {
	oldSet, err := inputs.Load([]string{td("old.yaml")}, "old")
	require.NoError(t, err)
	widget := func(name string) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"size": int64(2)}}
	}
	scopeChange := []string{"scope: Namespaced", "scope: Cluster"}
	cases := []struct {
		name            string
		strategy        string
		defaultStrategy string
		edits           []string
		objs            int
		want            []string // crdDeletion rows
		errContains     string
	}{
		{name: "always-replace", strategy: "always-replace", objs: 2, want: []string{
			"widgets.example.com  crdDeletion error: data loss: update strategy always-replace: kapp would delete and recreate the CRD, deleting its 2 existing custom resources"}},
		{name: "always-replace by default", defaultStrategy: "always-replace", objs: 1, want: []string{
			"widgets.example.com  crdDeletion error: data loss: update strategy always-replace: kapp would delete and recreate the CRD, deleting its 1 existing custom resource"}},
		{name: "always-replace, no custom resources", strategy: "always-replace", want: []string{}},
		{name: "fallback-on-replace, refused update", strategy: "fallback-on-replace", edits: scopeChange, objs: 2, want: []string{
			"widgets.example.com  crdDeletion error: data loss: update strategy fallback-on-replace, and the apiserver refuses the update " +
				`(spec.scope: Invalid value: "Cluster": field is immutable): kapp would delete and recreate the CRD, deleting its 2 existing custom resources`}},
		{name: "fallback-on-replace, accepted update", strategy: "fallback-on-replace", objs: 2, want: []string{}},
		{name: "plain update", objs: 2, want: []string{}},
		{name: "unknown strategy", strategy: "sometimes",
			errContains: `CRD widgets.example.com: unknown update strategy "sometimes" in annotation kapp.k14s.io/update-strategy ` +
				`(allowed: always-replace, fallback-on-replace, skip, or empty for a plain update)`},
		{name: "unknown default strategy", defaultStrategy: "replace",
			errContains: `CRD widgets.example.com: unknown update strategy "replace" in default update strategy`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &fakeCluster{crds: map[string]*apiextv1.CustomResourceDefinition{oldSet.CRDs[0].CRD.Name: oldSet.CRDs[0].CRD}}
			for i := 0; i < tc.objs; i++ {
				cluster.objs = append(cluster.objs, widget(string(rune('a'+i))))
			}
			resp, err := runWith(t, func(o *CRDUpgradeSafetyOptions) { o.DefaultUpdateStrategy = tc.defaultStrategy },
				nil, []string{withStrategy(t, tc.strategy, tc.edits...)}, cluster)
			if tc.errContains != "" {
				requirePlainError(t, err)
				require.ErrorContains(t, err, tc.errContains)
				return
			}
			if len(tc.want) > 0 {
				requireUnsafe(t, err)
			}
			require.Equal(t, tc.want, rowsOf(t, resp, "crdDeletion"))
			require.Zero(t, cluster.dryRuns)
		})
	}

	t.Run("offline: nothing to count", func(t *testing.T) {
		resp, err := run(t, []string{td("old.yaml")}, []string{withStrategy(t, "always-replace")}, nil)
		require.NoError(t, err)
		require.Empty(t, rowsOf(t, resp, "crdDeletion"))
	})
}
