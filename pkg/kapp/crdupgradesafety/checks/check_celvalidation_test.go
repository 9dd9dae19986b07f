package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestCELValidation(t *testing.T) {
	const obj = `type: object, properties: {min: {type: integer}, max: {type: integer}}`
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min <= self.max"}]}`,
			new: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min <= self.max"}]}`, want: []string{}},
		{name: "rule added", old: `{` + obj + `}`, new: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min <= self.max", message: "min above max"}]}`,
			want: []string{`error celValidation v1 ^.spec.x: validation rule added or changed: "self.min <= self.max"`}},
		{name: "second rule added", old: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min >= 0"}]}`,
			new:  `{` + obj + `, x-kubernetes-validations: [{rule: "self.min >= 0"}, {rule: "self.max < 10"}]}`,
			want: []string{`error celValidation v1 ^.spec.x: validation rule added or changed: "self.max < 10"`}},
		{name: "rule text changed", old: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min <= self.max"}]}`,
			new:  `{` + obj + `, x-kubernetes-validations: [{rule: "self.min < self.max"}]}`,
			want: []string{`error celValidation v1 ^.spec.x: validation rule added or changed: "self.min < self.max"`}},
		{name: "message, messageExpression, reason and fieldPath edits", old: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min <= self.max", message: "bad"}]}`,
			new:  `{` + obj + `, x-kubernetes-validations: [{rule: "self.min <= self.max", message: "min must not exceed max", messageExpression: "'min ' + string(self.min)", reason: FieldValueInvalid, fieldPath: ".min"}]}`,
			want: []string{}},
		{name: "rules reordered", old: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min >= 0"}, {rule: "self.max >= 0"}]}`,
			new:  `{` + obj + `, x-kubernetes-validations: [{rule: "self.max >= 0"}, {rule: "self.min >= 0"}]}`,
			want: []string{}},
		{name: "rule removed relaxes", old: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min >= 0"}, {rule: "self.max >= 0"}]}`,
			new:  `{` + obj + `, x-kubernetes-validations: [{rule: "self.max >= 0"}]}`,
			want: []string{}},
		{name: "all rules removed relaxes", old: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min >= 0"}]}`, new: `{` + obj + `}`,
			want: []string{}},
		{name: "optionalOldSelf set on a transition rule", old: `{type: string, x-kubernetes-validations: [{rule: "self == oldSelf"}]}`,
			new:  `{type: string, x-kubernetes-validations: [{rule: "self == oldSelf", optionalOldSelf: true}]}`,
			want: []string{`error celValidation v1 ^.spec.x: validation rule added or changed: "self == oldSelf"`}},
		{name: "rule on array items", old: `{type: array, items: {type: string}}`, new: `{type: array, items: {type: string, x-kubernetes-validations: [{rule: "self.size() > 0"}]}}`,
			want: []string{`error celValidation v1 ^.spec.x[*]: validation rule added or changed: "self.size() > 0"`}},
		{name: "celValidation toggle off", old: `{` + obj + `}`, new: `{` + obj + `, x-kubernetes-validations: [{rule: "self.min <= self.max"}]}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Toggles[config.CheckCELValidation] = false },
			want:   []string{}},
	})
}
