package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestWaiverOf(t *testing.T) {
	const crd = "widgets.example.com"
	waive := func(checks, reason string) map[string]string {
		return map[string]string{config.WaiveAnnotation: checks, config.WaiveReasonAnnotation: reason,
			"kapp.k14s.io/identity": "v1;/apiextensions.k8s.io/CustomResourceDefinition/widgets.example.com;apiextensions.k8s.io/v1"}
	}
	tests := []struct {
		name        string
		annotations map[string]string
		want        *config.Exemption
		wantErr     string // after "CRD widgets.example.com: invalid waiver annotation: "
	}{
		{name: "no annotations"},
		{name: "other annotations only", annotations: map[string]string{"kapp.k14s.io/update-strategy": "skip"}},
		{name: "checks and reason", annotations: waive("enum,required", "values renamed, PR 123"),
			want: &config.Waiver{CRD: crd, Checks: []string{"enum", "required"}, Reason: "waive annotation: values renamed, PR 123"}},
		{name: "spaces, empty items and repeats are tolerated", annotations: waive(" enum , ,enum,crdDeletion ", "  reviewed  "),
			want: &config.Waiver{CRD: crd, Checks: []string{"enum", "crdDeletion"}, Reason: "waive annotation: reviewed"}},
		{name: "reason missing", annotations: map[string]string{config.WaiveAnnotation: "enum"},
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive requires crd-upgrade-safety.kapp.k14s.io/waive-reason"},
		{name: "reason blank", annotations: waive("enum", " \n"),
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive requires crd-upgrade-safety.kapp.k14s.io/waive-reason"},
		{name: "reason alone", annotations: map[string]string{config.WaiveReasonAnnotation: "why"},
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive-reason without crd-upgrade-safety.kapp.k14s.io/waive"},
		{name: "no check named", annotations: waive(" , ", "why"),
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive names no check"},
		{name: "unknown check", annotations: waive("enum,enums", "why"),
			wantErr: `crd-upgrade-safety.kapp.k14s.io/waive: unknown check ID "enums" (allowed: additionalProperties, allOf,`},
		{name: "apiserverRejects", annotations: waive("apiserverRejects", "why"),
			wantErr: "apiserverRejects cannot be waived"},
		{name: "misspelt key", annotations: map[string]string{config.WaivePrefix + "waiver": "enum", config.WaiveReasonAnnotation: "why"},
			wantErr: "unknown annotation crd-upgrade-safety.kapp.k14s.io/waiver (allowed: crd-upgrade-safety.kapp.k14s.io/waive, crd-upgrade-safety.kapp.k14s.io/waive-reason)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.WaiverOf(crd, tt.annotations)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, config.ErrInvalidWaiver)
				require.ErrorContains(t, err, "CRD widgets.example.com: invalid waiver annotation: "+tt.wantErr)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// WithWaivers adds to a copy: the settings it is called on, shared by the
// runs of a webhook, keep their own exemptions.
func TestWithWaivers(t *testing.T) {
	cfg := config.Default()
	cfg.Waivers = make([]config.Waiver, 1, 4) // room to append in place
	cfg.Waivers[0] = config.Waiver{CRD: "a.example.com"}
	require.Same(t, &cfg, cfg.WithWaivers(nil))
	w := config.Waiver{CRD: "b.example.com", Checks: []string{"enum"}}
	got := cfg.WithWaivers([]config.Waiver{w})
	require.Equal(t, []config.Waiver{{CRD: "a.example.com"}, w}, got.Waivers)
	require.Len(t, cfg.Waivers, 1)
	require.Equal(t, cfg.Waivers[:2:2][1], config.Waiver{}, "appended into the original's backing array")
	ok, reason := got.Exempt("b.example.com", "enum")
	require.True(t, ok)
	require.Empty(t, reason)
}
