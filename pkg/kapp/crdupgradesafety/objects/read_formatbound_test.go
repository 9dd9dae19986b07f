package objects

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
)

// TestFormatBoundImpact: at 1.37 the stored objects that hold the field
// are the formatBound finding's impact (rejected, whatever their value),
// at its field; an object without the field is not affected.
func TestFormatBoundImpact(t *testing.T) {
	obj := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}
	}
	cfg := config.Default()
	_, lines := readImpact(t, `{type: object, properties: {amount: {type: integer, format: int32, maximum: 10}}}`,
		`{type: object, properties: {amount: {type: integer, format: int32, maximum: 3000000000}}}`,
		[]map[string]any{obj("seven", map[string]any{"amount": int64(7)}), obj("none", map[string]any{})}, &cfg)
	want := []string{`error maximum ^.spec.amount: maximum 10 -> 3e+09: not a value of integer with format int32, so the apiserver rejects every value of the field (Kubernetes 1.37 and later; judged for 1.37): ` +
		`1 of 2 stored Widgets rejected: default/seven (Invalid value: "": Maximum boundary value must be of type integer with format int32 in spec.amount); ` +
		`updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused`}
	if !enginetest.EqualLines(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
