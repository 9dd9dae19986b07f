package objects

import (
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
)

// TestNumericFormatImpact: at 1.37 the stored objects beyond the new
// range are the format finding's impact, at its field (not an
// existingResources finding of their own, nor one of a parent's).
func TestNumericFormatImpact(t *testing.T) {
	obj := func(name string, v int64) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"amount": v}}
	}
	cfg := config.Default()
	_, lines := readImpact(t, `{type: object, properties: {amount: {type: integer, format: int64}}}`,
		`{type: object, properties: {amount: {type: integer, format: int32}}}`,
		[]map[string]any{obj("big", 3_000_000_000), obj("small", 7)}, &cfg)
	want := []string{`error format ^.spec.amount: format changed: "int64" -> "int32" (values beyond the int32 range -2147483648..2147483647 are rejected) (Kubernetes 1.37 and later; judged for 1.37): ` +
		`1 of 2 stored Widgets rejected: default/big (Invalid value: "": Checked value must be of type integer with format int32 in spec.amount); ` +
		`updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused`}
	if !enginetest.EqualLines(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
