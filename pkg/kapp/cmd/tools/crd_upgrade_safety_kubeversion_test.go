package tools

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestCRDUpgradeSafetyKubeVersion: where the verdict depends on the
// Kubernetes version (int32 on an integer: enforced from 1.37 on), an
// offline run judges for --kube-version (default 1.37), a run against the
// cluster for its apiserver's version; --kube-version takes only the
// supported versions, and only offline.
func TestCRDUpgradeSafetyKubeVersion(t *testing.T) {
	nf := func(name string) string { return td("numeric-format/" + name) }
	oldF, newF := []string{nf("old.yaml")}, []string{nf("new.yaml")}
	const finding = `format error: format changed: "int64" -> "int32" (values beyond the int32 range -2147483648..2147483647 are rejected) (Kubernetes 1.37 and later; judged for 1.37)`
	at := func(v string, objects ...string) func(*CRDUpgradeSafetyOptions) {
		return func(o *CRDUpgradeSafetyOptions) { o.KubeVersion, o.FileFlags.Objects = v, objects }
	}
	messages := func(resp jsonResp) []string {
		var out []string
		for _, r := range resp.rows(t) {
			out = append(out, r["check"]+" "+r["severity"]+": "+r["message"])
		}
		return out
	}

	t.Run("offline, the newest by default", func(t *testing.T) {
		resp, err := run(t, oldF, newF, nil)
		requireUnsafe(t, err)
		require.Equal(t, []string{finding}, messages(resp))
	})
	t.Run("offline at 1.37, with a sample beyond the range", func(t *testing.T) {
		resp, err := runWith(t, at("1.37", nf("widgets.yaml")), oldF, newF, nil)
		requireUnsafe(t, err)
		require.Equal(t, []string{finding + `: 1 of 1 sample Widget rejected: default/big (Invalid value: "": Checked value must be of type integer with format int32 in spec.replicas) (refused when applied)`},
			messages(resp))
	})
	for _, v := range []string{"1.35", "1.36"} {
		t.Run("offline at "+v+", samples included", func(t *testing.T) {
			resp, err := runWith(t, at(v, nf("widgets.yaml")), oldF, newF, nil)
			require.NoError(t, err)
			require.Empty(t, resp.rows(t))
		})
	}
	t.Run("an unsupported version names the allowed ones", func(t *testing.T) {
		_, err := runWith(t, at("1.34"), oldF, newF, nil)
		require.ErrorIs(t, err, config.ErrUnsupportedKubeVersion)
		require.EqualError(t, err, `--kube-version: unsupported Kubernetes version "1.34": expected one of 1.35, 1.36, 1.37`)
	})
	t.Run("against the cluster, its apiserver's version", func(t *testing.T) {
		oldSet, err := inputs.Load([]string{nf("old.yaml")}, "old")
		require.NoError(t, err)
		old := oldSet.CRDs[0].CRD
		big := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "big", "namespace": "default"}, "spec": map[string]any{"replicas": int64(3_000_000_000)}}
		stored := finding + `: 1 of 1 stored Widget rejected: default/big (Invalid value: "": Checked value must be of type integer with format int32 in spec.replicas); ` +
			`updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused`
		for minor, want := range map[string][]string{"37": {stored}, "35": nil} {
			cluster := &fakeCluster{crds: map[string]*apiextv1.CustomResourceDefinition{old.Name: old}, version: minor,
				objs: []map[string]any{big}}
			resp, err := run(t, nil, newF, cluster)
			if want != nil {
				requireUnsafe(t, err)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, want, messages(resp), "1.%s", minor)
		}
		_, err = runWith(t, at("1.35"), nil, newF, &fakeCluster{})
		require.EqualError(t, err, "expected --kube-version with --file or --git-ref: against the cluster, its apiserver's version is judged for")
	})
}
