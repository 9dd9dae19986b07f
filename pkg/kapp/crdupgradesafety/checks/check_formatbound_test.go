package checks

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
)

// TestFormatBoundsAgreeWithAPIServer proves formatBound with the
// apiserver's schema validator at both ends of the supported versions.
// For each pair of field schemas, among sample values the old schema
// accepts (integers, and numbers with a fraction where the type allows
// them): the engine reports a finding of formatBound exactly when the new
// schema rejects every integer sample (or every sample, where the old one
// accepts no integer), 0 among them, which every bound of
// these schemas admits by its value; and an outsideFormat finding only
// when it rejects every sample. At 1.37 the validator is the library's own
// (v0.37.2: its kube-openapi passes the type and numeric format to the
// number validator, which checks minimum, maximum and multipleOf against
// them, IsValueValidAgainstRange). At 1.35 it is the same validator of
// the schemas without type and format: 1.35's kube-openapi
// (validate/schema.go numberValidator) passes the number validator
// neither, so no bound's range is checked; the samples of a schema are of
// its type on both sides, so the type check that drops is the same on
// both. The integer conversion of bounds (integerConflict) is the same at
// both versions; a maximum beyond int64 is proven as amd64 converts it.
func TestFormatBoundsAgreeWithAPIServer(t *testing.T) {
	integers := []any{int64(0), int64(2), int64(-4), int64(6)}
	fractions := []any{0.5, 2.5, -3.25}
	cases := []struct{ old, new string }{
		// maximum raised beyond the format: every value rejected.
		{`{type: integer, format: int32, maximum: 10}`, `{type: integer, format: int32, maximum: 3000000000}`},
		{`{type: integer, format: int32, maximum: 10}`, `{type: integer, format: int32, maximum: 2147483647}`},
		{`{type: integer, format: int32, maximum: 10}`, `{type: integer, format: int32, maximum: 2147483648}`},
		{`{type: integer, format: int64, maximum: 10}`, `{type: integer, format: int64, maximum: 3000000000}`},
		{`{type: integer, format: int64, maximum: 10}`, `{type: integer, format: int64, maximum: 1e19}`},
		{`{type: integer, maximum: 10}`, `{type: integer, maximum: 10.5}`},
		{`{type: integer, maximum: 10}`, `{type: integer, maximum: 1e19}`},
		{`{type: integer, format: int32}`, `{type: integer, format: int32, maximum: 3000000000}`},
		{`{type: number, format: float, maximum: 10}`, `{type: number, format: float, maximum: 4e38}`},
		{`{type: number, format: float, maximum: 10}`, `{type: number, format: float, maximum: 3e38}`},
		{`{type: number, format: double, maximum: 10}`, `{type: number, format: double, maximum: 1e300}`},
		{`{type: number, maximum: 10}`, `{type: number, maximum: 1e300}`},
		// minimum lowered beyond the format.
		{`{type: integer, format: int32, minimum: -10}`, `{type: integer, format: int32, minimum: -3000000000}`},
		{`{type: integer, minimum: -10}`, `{type: integer, minimum: -10.5}`},
		{`{type: number, format: float, minimum: -10}`, `{type: number, format: float, minimum: -4e38}`},
		// multipleOf that is not a value of the type.
		{`{type: integer, format: int32, multipleOf: 2}`, `{type: integer, format: int32, multipleOf: 1}`},
		{`{type: integer, multipleOf: 2}`, `{type: integer, multipleOf: 0.5}`},
		{`{type: integer, format: int32}`, `{type: integer, format: int32, multipleOf: 3000000000}`},
		{`{type: number, format: float}`, `{type: number, format: float, multipleOf: 0.5}`},
		// the format or type changed under the same bound.
		{`{type: integer, format: int64, maximum: 3000000000}`, `{type: integer, format: int32, maximum: 3000000000}`},
		{`{type: number, maximum: 10.5}`, `{type: integer, maximum: 10.5}`},
		{`{type: number, format: double, maximum: 4e38}`, `{type: number, format: float, maximum: 4e38}`},
		// integer values rejected on every version (integerConflict).
		{`{type: number, maximum: 10}`, `{type: number, maximum: 1e19}`},
		{`{type: number, multipleOf: 2}`, `{type: number, multipleOf: 0.25}`},
		{`{type: number, multipleOf: 0.5}`, `{type: number, multipleOf: 0.25}`},
		{`{type: integer, multipleOf: 2}`, `{type: integer, multipleOf: 1.5}`},
		// every value was already rejected: nothing more to lose.
		{`{type: integer, format: int32, maximum: 3000000000}`, `{type: integer, format: int32, maximum: 4000000000}`},
		// the bound made to fit: a relaxation.
		{`{type: integer, format: int32, maximum: 3000000000}`, `{type: integer, format: int32, maximum: 10}`},
	}
	for _, ver := range []string{"1.35", "1.37"} {
		kv, err := config.ParseKubeVersion(ver)
		if err != nil {
			t.Fatal(err)
		}
		validator := func(schema string) validation.SchemaValidator {
			if ver == "1.35" { // the number validator sees neither type nor format
				for _, kw := range []string{"type: integer, ", "type: number, ", "format: int32, ", "format: int64, ", "format: float, ", "format: double, "} {
					schema = strings.ReplaceAll(schema, kw, "")
				}
				schema = strings.NewReplacer("{type: integer}", "{}", "{type: number}", "{}").Replace(schema)
			}
			return enginetest.SchemaValidator(t, schema)
		}
		for _, tc := range cases {
			t.Run(ver+"/"+tc.old+"->"+tc.new, func(t *testing.T) {
				oldV, newV := validator(tc.old), validator(tc.new)
				samples := integers
				if strings.Contains(tc.old, "number") && strings.Contains(tc.new, "number") {
					samples = append(slices.Clone(integers), fractions...)
				}
				accepted, ints, rejected, intsRejected := 0, 0, []string{}, 0
				for _, v := range samples {
					if len(validation.ValidateCustomResource(nil, v, oldV)) > 0 {
						continue // not a value the old schema holds
					}
					_, isInt := v.(int64)
					accepted++
					if isInt {
						ints++
					}
					if errs := validation.ValidateCustomResource(nil, v, newV); len(errs) > 0 {
						rejected = append(rejected, fmt.Sprintf("%v: %v", v, errs.ToAggregate()))
						if isInt {
							intsRejected++
						}
					}
				}
				everyValue := accepted > 0 && len(rejected) == accepted
				// Every integer the old schema accepts rejected, or every
				// value (where it accepts no integer).
				everyInteger := ints > 0 && intsRejected == ints || everyValue
				cfg := config.Default()
				cfg.KubeVersion = kv
				var found []string
				outside := false
				for _, f := range Compare(enginetest.CRDWithField(t, tc.old), enginetest.CRDWithField(t, tc.new), &cfg) {
					switch f.Change.Kind {
					case "outsideFormat":
						outside = true
						if f.KubeVersionSince != "1.37" {
							t.Errorf("want a finding from 1.37 on, got %q (since %q)", enginetest.Render([]finding.Finding{f}), f.KubeVersionSince)
						}
					case "integersRejected":
					default:
						continue
					}
					found = append(found, strings.Join(enginetest.Render([]finding.Finding{f}), ""))
					if f.Severity != finding.SeverityError {
						t.Errorf("want an error, got %q", enginetest.Render([]finding.Finding{f}))
					}
				}
				switch {
				case len(found) == 0 && everyInteger:
					t.Errorf("no finding, but the apiserver rejects every integer value: %s", strings.Join(rejected, "; "))
				case len(found) > 0 && !everyInteger:
					t.Errorf("findings %q, but the apiserver accepts %d of %d integer values", found, ints-intsRejected, ints)
				case outside && !everyValue:
					t.Errorf("findings %q, but the apiserver accepts %d of %d values", found, accepted-len(rejected), accepted)
				}
			})
		}
	}
}

// TestFormatBoundFinding: the finding of the example, as the
// outputs print it, under the maximum check's ID and configuration.
func TestFormatBoundFinding(t *testing.T) {
	old := enginetest.CRDWithField(t, `{type: integer, format: int32, maximum: 10}`)
	new := enginetest.CRDWithField(t, `{type: integer, format: int32, maximum: 3000000000}`)
	cfg := config.Default()
	got := enginetest.Render(Compare(old, new, &cfg))
	want := []string{`error maximum v1 ^.spec.x: maximum 10 -> 3e+09: not a value of integer with format int32, so the apiserver rejects every value of the field (Kubernetes 1.37 and later; judged for 1.37)`}
	if !enginetest.EqualLines(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cfg.Checks.SameVersion.Maximum.Enabled = false
	if got := enginetest.Render(Compare(old, new, &cfg)); len(got) != 0 {
		t.Errorf("maximum disabled: got %q", got)
	}
	cfg = config.Default()
	cfg.KubeVersion = config.SupportedKubeVersions[0]
	if got := enginetest.Render(Compare(old, new, &cfg)); len(got) != 0 {
		t.Errorf("judged for 1.35: got %q", got)
	}
}
