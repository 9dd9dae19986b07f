package objects

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// TestValidatedAt: the object reader validates as the target version:
// at 1.35 a stored value beyond a new int32 range is no rejection (and
// there is no finding), at 1.37 it is the format finding's impact. The
// CRD given is never changed.
func TestValidatedAt(t *testing.T) {
	oldCRD := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {amount: {type: integer}}}`})
	newCRD := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {amount: {type: integer, format: int32}, list: {type: array, items: {type: number, format: float}}}}`})
	objs := []map[string]any{{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "big", "namespace": "default"}, "spec": map[string]any{"amount": int64(3_000_000_000)}}}

	require.Same(t, newCRD, checks.ValidatedAt(newCRD, config.KubeVersion{Major: 1, Minor: 37}))
	require.Same(t, newCRD, checks.ValidatedAt(newCRD, config.KubeVersion{}), "the default is 1.37")
	require.Same(t, oldCRD, checks.ValidatedAt(oldCRD, config.KubeVersion{Major: 1, Minor: 35}), "nothing to strip: no copy")
	at135 := checks.ValidatedAt(newCRD, config.KubeVersion{Major: 1, Minor: 35})
	spec := checks.VersionSchema(&at135.Spec.Versions[0]).Properties["spec"]
	require.Empty(t, spec.Properties["amount"].Format)
	require.Empty(t, spec.Properties["list"].Items.Schema.Format)
	orig := checks.VersionSchema(&newCRD.Spec.Versions[0]).Properties["spec"]
	require.Equal(t, "int32", orig.Properties["amount"].Format, "the input is not changed")

	for _, tc := range []struct {
		v    config.KubeVersion
		want int // findings with an impact that rejects the object
	}{{config.KubeVersion{Major: 1, Minor: 35}, 0}, {config.KubeVersion{Major: 1, Minor: 36}, 0}, {config.KubeVersion{Major: 1, Minor: 37}, 1}} {
		cfg := config.Default()
		cfg.KubeVersion = tc.v
		findings := checks.Compare(oldCRD, newCRD, &cfg)
		r, err := NewObjectReader(checks.ValidatedAt(oldCRD, tc.v), checks.ValidatedAt(newCRD, tc.v), "v1", finding.SourceCluster, findings, &cfg)
		require.NoError(t, err)
		r.Read(Listed(t, oldCRD, "v1", objs))
		out := finding.ApplyImpacts(findings, []finding.VersionImpact{r.Result()}, &cfg)
		require.Len(t, out, tc.want, "at %s: %q", tc.v, enginetest.Render(out))
		if tc.want == 1 {
			require.Equal(t, config.CheckFormat, out[0].Check)
			require.NotNil(t, out[0].Impact)
			require.Equal(t, 1, out[0].Impact.Affected)
		}
	}
}
