package crdupgradesafety

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
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

	require.Same(t, newCRD, ValidatedAt(newCRD, config.KubeVersion{Major: 1, Minor: 37}))
	require.Same(t, newCRD, ValidatedAt(newCRD, config.KubeVersion{}), "the default is 1.37")
	require.Same(t, oldCRD, ValidatedAt(oldCRD, config.KubeVersion{Major: 1, Minor: 35}), "nothing to strip: no copy")
	at135 := ValidatedAt(newCRD, config.KubeVersion{Major: 1, Minor: 35})
	spec := versionSchema(&at135.Spec.Versions[0]).Properties["spec"]
	require.Empty(t, spec.Properties["amount"].Format)
	require.Empty(t, spec.Properties["list"].Items.Schema.Format)
	orig := versionSchema(&newCRD.Spec.Versions[0]).Properties["spec"]
	require.Equal(t, "int32", orig.Properties["amount"].Format, "the input is not changed")

	for _, tc := range []struct {
		v    config.KubeVersion
		want int // findings with an impact that rejects the object
	}{{config.KubeVersion{Major: 1, Minor: 35}, 0}, {config.KubeVersion{Major: 1, Minor: 36}, 0}, {config.KubeVersion{Major: 1, Minor: 37}, 1}} {
		cfg := config.Default()
		cfg.KubeVersion = tc.v
		findings := Compare(oldCRD, newCRD, &cfg)
		r, err := NewObjectReader(ValidatedAt(oldCRD, tc.v), ValidatedAt(newCRD, tc.v), "v1", finding.SourceCluster, findings, &cfg)
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

// TestValidatedAtIntegerBounds: at 1.35 the object reader's validator (the
// library's, 1.37's) of ValidatedAt's schema accepts exactly the integer
// values that 1.35's validator accepts: the latter passes the number
// validator neither type nor format (so no bound's range is checked, and
// values are compared with each bound converted to int64), which the same
// library validator of the schema without type and format gives.
func TestValidatedAtIntegerBounds(t *testing.T) {
	samples := []any{int64(-11), int64(-10), int64(-1), int64(0), int64(1), int64(2), int64(3), int64(10), int64(11)}
	for _, field := range []string{
		`{type: integer, maximum: 10.5}`, `{type: integer, maximum: 1e19}`, `{type: integer, maximum: -10.5, exclusiveMaximum: true}`,
		`{type: integer, minimum: -10.5}`, `{type: integer, minimum: 1.5}`, `{type: integer, minimum: -1e19}`,
		`{type: integer, multipleOf: 0.5}`, `{type: integer, multipleOf: 1.5}`, `{type: integer, multipleOf: 2}`,
		`{type: integer, format: int32, maximum: 3000000000}`, `{type: integer, format: int64, maximum: 10.5}`,
	} {
		t.Run(field, func(t *testing.T) {
			at135 := ValidatedAt(enginetest.CRDWithField(t, field), config.SupportedKubeVersions[0])
			x := versionSchema(&at135.Spec.Versions[0]).Properties["spec"].Properties["x"]
			reader := enginetest.SchemaValidatorOf(t, &x)
			untyped := field
			for _, kw := range []string{"type: integer, ", "format: int32, ", "format: int64, "} {
				untyped = strings.ReplaceAll(untyped, kw, "")
			}
			v135 := enginetest.SchemaValidator(t, untyped)
			for _, v := range samples {
				got := len(validation.ValidateCustomResource(nil, v, reader)) == 0
				want := len(validation.ValidateCustomResource(nil, v, v135)) == 0
				if got != want {
					t.Errorf("%v: the reader accepts it: %v, 1.35 accepts it: %v", v, got, want)
				}
			}
		})
	}
}
