package objects

import (
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
)

// TestCELListSemanticsByKubeVersion: a rule added that compares two set
// lists (==) of a stored object, one holding a duplicate (stored before the
// list became a set), is judged with the CEL semantics of the cluster's
// version (kubernetes#140293): 1.35 and 1.36 accept the object, 1.37
// refuses it. The object reader's every validator follows: the batch
// validators (a create), the whole strategy (an update, ratcheting) and the
// transition rules alone.
func TestCELListSemanticsByKubeVersion(t *testing.T) {
	const lists = `tags: {type: array, items: {type: string}, x-kubernetes-list-type: set},
		expected: {type: array, items: {type: string}, x-kubernetes-list-type: set}`
	oldSpec := `{type: object, properties: {` + lists + `}}`
	objs := []map[string]any{{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"spec":     map[string]any{"tags": []any{"a", "b"}, "expected": []any{"a", "a"}}}}

	for _, rule := range []string{
		`self.tags == self.expected`,
		// A transition rule: validated alone and on every update.
		`self.tags == self.expected || self == oldSelf && false`,
	} {
		newSpec := fmt.Sprintf(`{type: object, properties: {%s}, x-kubernetes-validations: [{rule: %q, message: tags differ}]}`, lists, rule)
		for _, tc := range []struct {
			v        config.KubeVersion
			affected int // stored objects the rule refuses
		}{
			{config.KubeVersion{Major: 1, Minor: 35}, 0},
			{config.KubeVersion{Major: 1, Minor: 36}, 0},
			{config.KubeVersion{Major: 1, Minor: 37}, 1},
			{config.KubeVersion{}, 1}, // the default: 1.37
		} {
			t.Run(fmt.Sprintf("%s at %s", rule, tc.v), func(t *testing.T) {
				cfg := config.Default()
				cfg.KubeVersion = tc.v
				out, lines := readImpact(t, oldSpec, newSpec, objs, &cfg)
				var found bool
				for _, f := range out {
					if f.Check != config.CheckCELValidation {
						continue
					}
					found = true
					affected := 0
					if f.Impact != nil {
						affected = f.Impact.Affected
					}
					require.Equal(t, tc.affected, affected, "%q", lines)
				}
				require.True(t, found, "no celValidation finding: %q", lines)
			})
		}
	}
}
