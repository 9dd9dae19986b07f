package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestPreserveUnknownFields(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object, x-kubernetes-preserve-unknown-fields: true}`,
			want: []string{}},
		{name: "removed", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object}`,
			want: []string{"error preserveUnknownFields v1 ^.spec.x: data loss: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned"}},
		{name: "set to false", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object, x-kubernetes-preserve-unknown-fields: false}`,
			want: []string{"error preserveUnknownFields v1 ^.spec.x: data loss: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned"}},
		{name: "added relaxes", old: `{type: object}`, new: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, want: []string{}},
		{name: "false -> absent", old: `{type: object, x-kubernetes-preserve-unknown-fields: false}`, new: `{type: object}`, want: []string{}},
		{name: "removed from items", old: `{type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}`, new: `{type: array, items: {type: object}}`,
			want: []string{"error preserveUnknownFields v1 ^.spec.x[*]: data loss: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned"}},
		{name: "removed where the new schema holds a scalar: the type check judges it", old: `{x-kubernetes-preserve-unknown-fields: true}`, new: `{type: string}`,
			want: []string{`error type v1 ^.spec.x: type changed: (none) -> "string"`}},
		{name: "removed where the new schema holds an untyped object", old: `{x-kubernetes-preserve-unknown-fields: true}`, new: `{x-kubernetes-int-or-string: true}`,
			want: []string{`error type v1 ^.spec.x: type changed: (none) -> int-or-string`}},
		{name: "preserveUnknownFields toggle off", old: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, new: `{type: object}`,
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Toggles[config.CheckPreserveUnknownFields] = false
			},
			want: []string{}},
	})
}

// TestCRDPreserveUnknownFields: spec.preserveUnknownFields true -> false
// starts pruning everywhere.
func TestCRDPreserveUnknownFields(t *testing.T) {
	keep := func(b bool) func(*apiextv1.CustomResourceDefinition) {
		return func(c *apiextv1.CustomResourceDefinition) { c.Spec.PreserveUnknownFields = b }
	}
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}
	const disabled = "error preserveUnknownFields  ^: data loss: spec.preserveUnknownFields: true -> false: pruning starts, unknown fields of existing objects would be dropped"
	runCRDCases(t, []crdCase{
		{name: "true -> false", old: enginetest.With(enginetest.NewCRD(t, v1), keep(true)), new: enginetest.NewCRD(t, v1), want: []string{disabled}},
		{name: "false -> true", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1), keep(true)), want: []string{}},
		{name: "true kept", old: enginetest.With(enginetest.NewCRD(t, v1), keep(true)), new: enginetest.With(enginetest.NewCRD(t, v1), keep(true)), want: []string{}},
		{name: "toggle off", old: enginetest.With(enginetest.NewCRD(t, v1), keep(true)), new: enginetest.NewCRD(t, v1),
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Toggles[config.CheckPreserveUnknownFields] = false
			}, want: []string{}},
		{name: "sameVersion off", old: enginetest.With(enginetest.NewCRD(t, v1), keep(true)), new: enginetest.NewCRD(t, v1),
			config: func(c *config.Settings) { c.Checks.SameVersion.Enabled = false }, want: []string{}},
		{name: "warn mode", old: enginetest.With(enginetest.NewCRD(t, v1), keep(true)), new: enginetest.NewCRD(t, v1),
			config: func(c *config.Settings) { c.Mode = config.ModeWarn }, want: []string{"warning" + disabled[len("error"):]}},
	})
}
