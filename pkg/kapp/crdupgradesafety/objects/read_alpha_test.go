package objects

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
)

func TestIsAlphaVersion(t *testing.T) {
	for name, want := range map[string]bool{
		"v1alpha1": true, "v2alpha3": true, "v1alpha0": true, "v0alpha0": true, "v10alpha10": true, "v01alpha1": true,
		"v1beta1": false, "v1beta0": false, "v0beta0": false, "v1": false, "v2": false, "v0": false,
		// Not Kubernetes-like names: the apiserver orders them apart,
		// and so they are not alpha.
		"v1alpha": false, "alpha1": false, "v1-alpha1": false, "V1alpha1": false, "v1alpha1x": false,
		"v1Alpha1": false, "": false, "vAlpha1": false, "v1alpha1beta1": false,
		"v99999999999999999999alpha1": false, // the major does not fit an int
	} {
		require.Equal(t, want, finding.IsAlphaVersion(name), name)
	}
}

// TestAlphaVersionEnforcementDataLoss: stored objects are real data, alpha
// or not. A field of an alpha version removed is a warning under
// alphaVersionEnforcement Warn while no stored object holds data there (or
// none was read), and an error once the read finds data that is pruned;
// objects rejected by a tightened constraint keep their data and the
// leniency.
func TestAlphaVersionEnforcementDataLoss(t *testing.T) {
	cfg := config.Default()
	cfg.AlphaVersionEnforcement = config.EnforcementWarn
	alpha := ImpactOptions{Version: "v1alpha1"}
	removed := func(x any) []map[string]any {
		return []map[string]any{enginetest.Widget("v1alpha1", "default", "a", map[string]any{"x": x})}
	}

	fs, lines := readImpactWith(t, `{type: object, properties: {x: {type: string}}}`, `{type: object}`, removed("red"), &cfg, alpha)
	require.Equal(t, []string{`error existingFieldRemoval ^.spec.x: data loss: existing field removed (was string): 1 of 1 stored Widget holds data here, lost on their next write: default/a ("red")`}, lines)
	require.False(t, fs[0].AlphaLenient)

	_, lines = readImpactWith(t, `{type: object, properties: {x: {type: string}}}`, `{type: object}`, nil, &cfg, alpha)
	require.Equal(t, []string{`warning existingFieldRemoval ^.spec.x: existing field removed (was string): no stored Widgets to affect (alpha version: a warning under alphaVersionEnforcement Warn)`}, lines)

	fs, lines = readImpactWith(t, `{type: object, properties: {x: {type: integer}}}`, `{type: object, properties: {x: {type: integer, maximum: 5}}}`, removed(int64(9)), &cfg, alpha)
	require.Len(t, lines, 1)
	require.Equal(t, finding.SeverityWarning, fs[0].Severity, lines[0])
	require.True(t, fs[0].AlphaLenient, lines[0])
	require.Contains(t, lines[0], "1 of 1 stored Widget rejected")

	// The same under GA: the leniency is the alpha version's alone.
	_, lines = readImpactWith(t, `{type: object, properties: {x: {type: integer}}}`, `{type: object, properties: {x: {type: integer, maximum: 5}}}`,
		[]map[string]any{enginetest.Widget("v1", "default", "a", map[string]any{"x": int64(9)})}, &cfg, ImpactOptions{})
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], "error maximum ")
}
