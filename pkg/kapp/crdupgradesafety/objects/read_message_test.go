package objects_test

import (
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/assert"
)

// TestImpact reads stored objects under an update and checks each
// finding's impact as the outputs word it (report.Message): the engine
// records the facts, the report composes the text.
func TestImpact(t *testing.T) {
	warnUnaffected := func(c *config.Settings) { c.UnaffectedEnforcement = config.EnforcementWarn }
	cases := []struct {
		name     string
		old, new string
		objs     []map[string]any
		config   func(*config.Settings)
		opts     objects.ImpactOptions
		want     []string
	}{
		{name: "field removed: data lost where objects hold it",
			old: `{type: object, properties: {color: {type: string}, size: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "default", "tiny", map[string]any{"color": "blue"}),
				enginetest.Widget("v1", "default", "big", map[string]any{"color": "red", "size": "L"}),
				enginetest.Widget("v1", "default", "plain", map[string]any{"size": "S"}),
			},
			want: []string{`error existingFieldRemoval ^.spec.color: data loss: existing field removed (was string): 2 of 3 stored Widgets hold data here, lost on their next write: default/big ("red"), default/tiny ("blue")`}},
		{name: "default changed: objects without the field read differently",
			old: `{type: object, properties: {size: {type: string, default: small}}}`,
			new: `{type: object, properties: {size: {type: string, default: large}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "ns", "set", map[string]any{"size": "medium"}),
				enginetest.Widget("v1", "ns", "unset", map[string]any{}),
				enginetest.Widget("v1", "ns", "nospec", nil),
			},
			want: []string{
				"error default ^.spec.size: default changed: \"small\" -> \"large\": 1 of 3 stored Widgets reads differently: ns/unset (\"small\", the old default -> \"large\" where it is not stored)",
			}},
		{name: "default removed: a sample that never set the field only reads differently, one that set it keeps it",
			old: `{type: object, properties: {size: {type: string, default: small}, color: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string}, color: {type: string}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "ns", "unset", map[string]any{"color": "red"}),
				enginetest.Widget("v1", "ns", "null", map[string]any{"size": nil}),
				enginetest.Widget("v1", "ns", "set", map[string]any{"size": "small"}),
			},
			opts: objects.ImpactOptions{Source: finding.SourceSamples},
			want: []string{
				`error default ^.spec.size: default removed: "small" -> (none): 2 of 3 sample Widgets read differently: ns/null ("small", the old default -> absent), ns/unset ("small", the old default -> absent)`,
			}},
		{name: "default removed: a stored object that never set the field only reads differently",
			old: `{type: object, properties: {size: {type: string, default: small}, color: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string}, color: {type: string}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "ns", "unset", map[string]any{"color": "red"}),
				enginetest.Widget("v1", "ns", "other", map[string]any{"size": "large"}),
			},
			want: []string{
				`error default ^.spec.size: default removed: "small" -> (none): 1 of 2 stored Widgets reads differently: ns/unset ("small", the old default -> absent where it is not stored)`,
			}},
		{name: "a field with a default removed: a sample that set it loses it, one that never did does not",
			old: `{type: object, properties: {size: {type: string, default: small}, color: {type: string}}}`,
			new: `{type: object, properties: {color: {type: string}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "ns", "unset", map[string]any{"color": "red"}),
				enginetest.Widget("v1", "ns", "set", map[string]any{"size": "large"}),
			},
			opts: objects.ImpactOptions{Source: finding.SourceSamples},
			want: []string{
				`error existingFieldRemoval ^.spec.size: data loss: existing field removed (was string): 1 of 2 sample Widgets holds data here, pruned when applied: ns/set ("large"); 1 of 2 sample Widgets reads differently: ns/unset ("small", the old default -> absent)`,
			}},
		{name: "unknown fields pruned when x-kubernetes-preserve-unknown-fields goes",
			old: `{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {size: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "ns", "extra", map[string]any{"size": "S", "extra": map[string]any{"a": int64(1)}, "note": "hi"}),
				enginetest.Widget("v1", "ns", "known", map[string]any{"size": "S"}),
			},
			want: []string{
				"error preserveUnknownFields ^.spec: data loss: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned: 1 of 2 stored Widgets holds data here, lost on their next write: ns/extra (spec.extra: {\"a\":1})",
			}},
		{name: "tightened bound: rejected objects, ratcheting told",
			old: `{type: object, properties: {replicas: {type: integer, maximum: 10}}}`,
			new: `{type: object, properties: {replicas: {type: integer, maximum: 5}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "ns", "seven", map[string]any{"replicas": int64(7)}),
				enginetest.Widget("v1", "ns", "three", map[string]any{"replicas": int64(3)}),
				enginetest.Widget("v1", "ns", "nine", map[string]any{"replicas": int64(9)}),
			},
			want: []string{
				"error maximum ^.spec.replicas: maximum decreased: 10 -> 5: 2 of 3 stored Widgets rejected: ns/nine (Invalid value: 9: spec.replicas in body should be less than or equal to 5), ns/seven (Invalid value: 7: spec.replicas in body should be less than or equal to 5); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
			}},
		{name: "new required field: objects lacking it rejected",
			old: `{type: object, properties: {replicas: {type: integer}, size: {type: string, maxLength: 10}}}`,
			new: `{type: object, required: [replicas], properties: {replicas: {type: integer}, size: {type: string, maxLength: 2}}}`,
			objs: []map[string]any{
				enginetest.Widget("v1", "ns", "a", map[string]any{"size": "M"}),
				enginetest.Widget("v1", "ns", "b", map[string]any{"replicas": int64(1), "size": "XXL"}),
			},
			want: []string{
				"error required ^.spec: new required fields: [\"replicas\"]: 1 of 2 stored Widgets rejected: ns/a (spec.replicas: Required value); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
				"error maxLength ^.spec.size: maxLength decreased: 10 -> 2: 1 of 2 stored Widgets rejected: ns/b (Too long: may not be more than 2 bytes); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
			}},
		{name: "unaffected tightening: error by default",
			old:  `{type: object, properties: {replicas: {type: integer, maximum: 10}}}`,
			new:  `{type: object, properties: {replicas: {type: integer, maximum: 5}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "three", map[string]any{"replicas": int64(3)})},
			want: []string{
				"error maximum ^.spec.replicas: maximum decreased: 10 -> 5: none of 1 stored Widget affected",
			}},
		{name: "unaffected tightening: a warning under unaffectedEnforcement Warn, an affected one stays an error",
			old:    `{type: object, properties: {replicas: {type: integer, maximum: 10}, name: {type: string, maxLength: 10}}}`,
			new:    `{type: object, properties: {replicas: {type: integer, maximum: 5}, name: {type: string, maxLength: 3}}}`,
			objs:   []map[string]any{enginetest.Widget("v1", "ns", "three", map[string]any{"replicas": int64(3), "name": "long-name"})},
			config: warnUnaffected,
			want: []string{
				"error maxLength ^.spec.name: maxLength decreased: 10 -> 3: 1 of 1 stored Widget rejected: ns/three (Too long: may not be more than 3 bytes); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
				"warning maximum ^.spec.replicas: maximum decreased: 10 -> 5: none of 1 stored Widget affected; a warning under unaffectedEnforcement Warn: writers that send values the old schema accepted may still be refused",
			}},
		{name: "no objects at all",
			old: `{type: object, properties: {replicas: {type: integer, maximum: 10}}}`,
			new: `{type: object, properties: {replicas: {type: integer, maximum: 5}}}`,
			want: []string{
				"error maximum ^.spec.replicas: maximum decreased: 10 -> 5: no stored Widgets to affect",
			}},
		{name: "nullable removed: nulls dropped",
			old:  `{type: object, properties: {note: {type: string, nullable: true}}}`,
			new:  `{type: object, properties: {note: {type: string}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "null", map[string]any{"note": nil}), enginetest.Widget("v1", "ns", "set", map[string]any{"note": "x"})},
			want: []string{
				"error nullable ^.spec.note: data loss: nullable removed: null values are no longer allowed: 1 of 2 stored Widgets holds data here, lost on their next write: ns/null (null)",
			}},
		{name: "map values and list items: paths with [*] and {*}",
			old: `{type: object, properties: {labels: {type: object, additionalProperties: {type: string}}, items: {type: array, items: {type: object, properties: {name: {type: string}, port: {type: integer}}}}}}`,
			new: `{type: object, properties: {labels: {type: object, additionalProperties: {type: string, maxLength: 2}}, items: {type: array, items: {type: object, properties: {name: {type: string}}}}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "a", map[string]any{
				"labels": map[string]any{"k": "long"}, "items": []any{map[string]any{"name": "x", "port": int64(80)}}})},
			want: []string{
				"error existingFieldRemoval ^.spec.items[*].port: data loss: existing field removed (was integer): 1 of 1 stored Widget holds data here, lost on their next write: ns/a (80)",
				"error maxLength ^.spec.labels{*}: maxLength added: (none) -> 2: 1 of 1 stored Widget rejected: ns/a (Too long: may not be more than 2 bytes); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
			}},
		{name: "an object already invalid before: a note, not a rejection",
			old:  `{type: object, properties: {replicas: {type: integer, maximum: 5}, size: {type: string}}}`,
			new:  `{type: object, properties: {replicas: {type: integer, maximum: 5}, size: {type: string, maxLength: 1}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "old", map[string]any{"replicas": int64(9), "size": "S"})},
			want: []string{
				"warning existingResources : existing Widget ns/old is already invalid under the old CRD and still is, which the update does not change: spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5",
				"error maxLength ^.spec.size: maxLength added: (none) -> 1: none of 1 stored Widget affected",
			}},
		{name: "an object already invalid before, under unaffectedEnforcement Warn: nothing stays an error",
			old:    `{type: object, properties: {replicas: {type: integer, maximum: 5}, size: {type: string}}}`,
			new:    `{type: object, properties: {replicas: {type: integer, maximum: 5}, size: {type: string, maxLength: 1}}}`,
			objs:   []map[string]any{enginetest.Widget("v1", "ns", "old", map[string]any{"replicas": int64(9), "size": "S"})},
			config: warnUnaffected,
			want: []string{
				"warning existingResources : existing Widget ns/old is already invalid under the old CRD and still is, which the update does not change: spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5",
				"warning maxLength ^.spec.size: maxLength added: (none) -> 1: none of 1 stored Widget affected; a warning under unaffectedEnforcement Warn: writers that send values the old schema accepted may still be refused",
			}},
		{name: "a bound tightened where the object is already refused: the field's verdict does not change",
			old:    `{type: object, properties: {replicas: {type: integer, maximum: 10}}}`,
			new:    `{type: object, properties: {replicas: {type: integer, maximum: 5}}}`,
			objs:   []map[string]any{enginetest.Widget("v1", "ns", "twelve", map[string]any{"replicas": int64(12)})},
			config: warnUnaffected,
			want: []string{
				"warning existingResources : existing Widget ns/twelve is already invalid under the old CRD and still is, which the update does not change: spec.replicas: Invalid value: 12: spec.replicas in body should be less than or equal to 5",
				"warning maximum ^.spec.replicas: maximum decreased: 10 -> 5: none of 1 stored Widget affected; a warning under unaffectedEnforcement Warn: writers that send values the old schema accepted may still be refused",
			}},
		{name: "an object already invalid at one field and newly rejected at another: both told apart",
			old:  `{type: object, properties: {replicas: {type: integer, maximum: 5}, size: {type: string}}}`,
			new:  `{type: object, properties: {replicas: {type: integer, maximum: 5}, size: {type: string, maxLength: 1}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "old", map[string]any{"replicas": int64(9), "size": "XL"})},
			want: []string{
				"warning existingResources : existing Widget ns/old is already invalid under the old CRD and still is, which the update does not change: spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 5",
				"error maxLength ^.spec.size: maxLength added: (none) -> 1: 1 of 1 stored Widget rejected: ns/old (Too long: may not be more than 1 byte); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
			}},
		{name: "a sample already invalid before: a note",
			old:  `{type: object, required: [size], properties: {size: {type: string}, color: {type: string}}}`,
			new:  `{type: object, required: [size], properties: {size: {type: string}, color: {type: string, maxLength: 3}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "sample", map[string]any{"color": "red"})},
			opts: objects.ImpactOptions{Source: finding.SourceSamples},
			want: []string{
				"warning existingResources : sample Widget ns/sample is already invalid under the old CRD and still is, which the update does not change: spec.size: Required value",
				"error maxLength ^.spec.color: maxLength added: (none) -> 3: none of 1 sample Widget affected",
			}},
		{name: "status fails the new schema, with the status subresource: only status writes are refused",
			old: `{type: object, properties: {size: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string}}}`,
			objs: []map[string]any{
				withStatus(enginetest.Widget("v1", "ns", "old-phase", map[string]any{"size": "S"}), map[string]any{"phase": "Pending"}),
				withStatus(enginetest.Widget("v1", "ns", "ready", map[string]any{"size": "S"}), map[string]any{"phase": "Ready"}),
			},
			opts: objects.ImpactOptions{StatusSubresource: true,
				OldStatus: `{type: object, properties: {phase: {type: string}}}`,
				NewStatus: `{type: object, properties: {phase: {type: string, enum: [Ready, Failed]}}}`},
			want: []string{
				"error enum ^.status.phase: enum constraint added: [\"Ready\", \"Failed\"]: 1 of 2 stored Widgets: status writes refused: ns/old-phase (Unsupported value: \"Pending\": supported values: \"Ready\", \"Failed\"); only writes of the status (its controller's) are refused: a create drops status and an update of the object keeps the stored one; status writes that leave these fields alone still pass (validation ratcheting)",
			}},
		{name: "status fails the new schema, with the status subresource: a sample is applied without its status",
			old: `{type: object, properties: {size: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string}}}`,
			objs: []map[string]any{
				withStatus(enginetest.Widget("v1", "ns", "old-phase", map[string]any{"size": "S"}), map[string]any{"phase": "Pending"}),
			},
			opts: objects.ImpactOptions{StatusSubresource: true, Source: finding.SourceSamples,
				OldStatus: `{type: object, properties: {phase: {type: string}}}`,
				NewStatus: `{type: object, properties: {phase: {type: string, enum: [Ready, Failed]}}}`},
			want: []string{
				"error enum ^.status.phase: enum constraint added: [\"Ready\", \"Failed\"]: 1 of 1 sample Widget: status writes refused: ns/old-phase (Unsupported value: \"Pending\": supported values: \"Ready\", \"Failed\"); only writes of the status (its controller's) are refused: a create drops status and an update of the object keeps the stored one (applied, the sample's status is dropped)",
			}},
		{name: "status and spec both fail, with the status subresource: each its own effect",
			old: `{type: object, properties: {size: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string, maxLength: 1}}}`,
			objs: []map[string]any{
				withStatus(enginetest.Widget("v1", "ns", "both", map[string]any{"size": "XL"}), map[string]any{"phase": "Pending", "replicas": int64(9)}),
			},
			opts: objects.ImpactOptions{StatusSubresource: true,
				OldStatus: `{type: object, properties: {phase: {type: string}, replicas: {type: integer}}}`,
				NewStatus: `{type: object, properties: {phase: {type: string, maxLength: 3}, replicas: {type: integer}}}`},
			want: []string{
				"error maxLength ^.spec.size: maxLength added: (none) -> 1: 1 of 1 stored Widget rejected: ns/both (Too long: may not be more than 1 byte); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
				"error maxLength ^.status.phase: maxLength added: (none) -> 3: 1 of 1 stored Widget: status writes refused: ns/both (Too long: may not be more than 3 bytes); only writes of the status (its controller's) are refused: a create drops status and an update of the object keeps the stored one; status writes that leave these fields alone still pass (validation ratcheting)",
			}},
		{name: "status fails the new schema, without the status subresource: the object is rejected",
			old: `{type: object, properties: {size: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string}}}`,
			objs: []map[string]any{
				withStatus(enginetest.Widget("v1", "ns", "old-phase", map[string]any{"size": "S"}), map[string]any{"phase": "Pending"}),
			},
			opts: objects.ImpactOptions{
				OldStatus: `{type: object, properties: {phase: {type: string}}}`,
				NewStatus: `{type: object, properties: {phase: {type: string, enum: [Ready, Failed]}}}`},
			want: []string{
				"error enum ^.status.phase: enum constraint added: [\"Ready\", \"Failed\"]: 1 of 1 stored Widget rejected: ns/old-phase (Unsupported value: \"Pending\": supported values: \"Ready\", \"Failed\"); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
			}},
		{name: "a status already invalid before: a note",
			old: `{type: object, properties: {size: {type: string}}}`,
			new: `{type: object, properties: {size: {type: string, maxLength: 3}}}`,
			objs: []map[string]any{
				withStatus(enginetest.Widget("v1", "ns", "old-phase", map[string]any{"size": "S"}), map[string]any{"phase": "Pending"}),
			},
			opts: objects.ImpactOptions{StatusSubresource: true,
				OldStatus: `{type: object, properties: {phase: {type: string, enum: [Ready]}}}`,
				NewStatus: `{type: object, properties: {phase: {type: string, enum: [Ready]}}}`},
			want: []string{
				"warning existingResources : existing Widget ns/old-phase is already invalid under the old CRD and still is, which the update does not change: status.phase: Unsupported value: \"Pending\": supported values: \"Ready\"",
				"error maxLength ^.spec.size: maxLength added: (none) -> 3: none of 1 stored Widget affected",
			}},
		{name: "an exempted change that affects stored objects: they stay an existingResources error",
			old:  `{type: object, properties: {replicas: {type: integer, maximum: 10}}}`,
			new:  `{type: object, properties: {replicas: {type: integer, maximum: 5}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "eight", map[string]any{"replicas": int64(8)})},
			config: func(c *config.Settings) {
				c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Checks: []string{config.CheckMaximum}, Reason: "no widget has more than 5"}}
			},
			want: []string{
				"error existingResources : the exempted maximum change at ^.spec.replicas affects stored objects: 1 of 1 stored Widget rejected: ns/eight (Invalid value: 8: spec.replicas in body should be less than or equal to 5); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
				"warning maximum ^.spec.replicas: maximum decreased: 10 -> 5: 1 of 1 stored Widget rejected: ns/eight (Invalid value: 8: spec.replicas in body should be less than or equal to 5); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused (exempted: no widget has more than 5)",
			}},
		{name: "a CEL transition rule added: objects every update of which it refuses, not ratcheted",
			old: `{type: object, properties: {mode: {type: string}}}`,
			new: `{type: object, properties: {mode: {type: string}}, x-kubernetes-validations: [{rule: "self.mode != 'Legacy' || oldSelf.mode != 'Legacy'", message: "Legacy is no longer allowed"}]}`,
			objs: []map[string]any{enginetest.Widget("v1", "default", "legacy", map[string]any{"mode": "Legacy"}),
				enginetest.Widget("v1", "default", "modern", map[string]any{"mode": "Modern"})},
			want: []string{"error celValidation ^.spec: validation rule added or changed: \"self.mode != 'Legacy' || oldSelf.mode != 'Legacy'\": 1 of 2 stored Widgets rejected: default/legacy (Invalid value: Legacy is no longer allowed); every update is refused by a transition rule (oldSelf), which validation ratcheting does not cover; a create passes"}},
		{name: "a transition rule beside a tightened bound: the bound ratchets, the rule does not",
			old:  `{type: object, properties: {mode: {type: string}, replicas: {type: integer, maximum: 10}}}`,
			new:  `{type: object, properties: {mode: {type: string}, replicas: {type: integer, maximum: 5}}, x-kubernetes-validations: [{rule: "self.mode != 'Legacy' || oldSelf.mode != 'Legacy'", message: "Legacy is no longer allowed"}]}`,
			objs: []map[string]any{enginetest.Widget("v1", "default", "legacy", map[string]any{"mode": "Legacy", "replicas": int64(7)})},
			want: []string{
				"error celValidation ^.spec: validation rule added or changed: \"self.mode != 'Legacy' || oldSelf.mode != 'Legacy'\": 1 of 1 stored Widget rejected: default/legacy (Invalid value: Legacy is no longer allowed); every update is refused by a transition rule (oldSelf), which validation ratcheting does not cover; a create passes",
				"error maximum ^.spec.replicas: maximum decreased: 10 -> 5: 1 of 1 stored Widget rejected: default/legacy (Invalid value: 7: spec.replicas in body should be less than or equal to 5); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused",
			}},
		{name: "a transition rule worded like a plain rule at the same field: told apart by where the error comes from, not by its words",
			old:  `{type: object, properties: {mode: {type: string}}}`,
			new:  `{type: object, properties: {mode: {type: string}}, x-kubernetes-validations: [{rule: "self.mode != 'Legacy'", message: "Legacy is not allowed"}, {rule: "self.mode != 'Legacy' || oldSelf.mode != 'Legacy'", message: "Legacy is not allowed"}]}`,
			objs: []map[string]any{enginetest.Widget("v1", "default", "legacy", map[string]any{"mode": "Legacy"})},
			want: []string{
				"error celValidation ^.spec: validation rule added or changed: \"self.mode != 'Legacy' || oldSelf.mode != 'Legacy'\": 1 of 1 stored Widget rejected: default/legacy (Invalid value: Legacy is not allowed); every update is refused by a transition rule (oldSelf), which validation ratcheting does not cover; a create passes",
				"error celValidation ^.spec: validation rule added or changed: \"self.mode != 'Legacy'\": 1 of 1 stored Widget rejected: default/legacy (Invalid value: Legacy is not allowed); every update is refused by a transition rule (oldSelf), which validation ratcheting does not cover; a create passes",
			}},
		{name: "a field made required with the same default before and after: nothing",
			old:  `{type: object, properties: {size: {type: string, default: M}}}`,
			new:  `{type: object, required: [size], properties: {size: {type: string, default: M}}}`,
			objs: []map[string]any{enginetest.Widget("v1", "ns", "unset", map[string]any{}), enginetest.Widget("v1", "ns", "set", map[string]any{"size": "L"})},
			want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			findings := objects.ReadImpactWith(t, tc.old, tc.new, tc.objs, &cfg, tc.opts)
			lines := make([]string, len(findings))
			for i, f := range findings {
				lines[i] = fmt.Sprintf("%s %s %s: %s", f.Severity, f.Check, f.Field, report.Message(f))
			}
			assert.Equal(t, tc.want, lines)
		})
	}
}

// withStatus sets an object's status.
func withStatus(obj map[string]any, status map[string]any) map[string]any {
	obj["status"] = status
	return obj
}
