package checks

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
)

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
			x := VersionSchema(&at135.Spec.Versions[0]).Properties["spec"].Properties["x"]
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
