package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestServedVersion(t *testing.T) {
	const (
		str       = `{type: object, properties: {a: {type: string}, b: {type: string}}}`
		intA      = `{type: object, properties: {a: {type: integer}, b: {type: string}}}`
		noB       = `{type: object, properties: {a: {type: string}}}`
		patternB  = `{type: object, properties: {a: {type: string}, b: {type: string, pattern: "^x"}}}`
		intAnoB   = `{type: object, properties: {a: {type: integer}}}`
		embedded  = `{type: object, properties: {a: {type: string}, b: {type: string}, e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}`
		plainE    = `{type: object, properties: {a: {type: string}, b: {type: string}, e: {type: object, x-kubernetes-preserve-unknown-fields: true}}}`
		typeA     = `error servedVersion v1 -> v2 ^.spec.a: [type] type changed: "string" -> "integer"`
		removedB  = `error servedVersion v1 -> v2 ^.spec.b: [existingFieldRemoval] existing field removed (was string)`
		unhandleE = `error servedVersion v1 -> v2 ^.spec.e: [unhandled] unable to determine if the change to x-kubernetes-embedded-resource is safe: (none) -> true`
	)
	v1 := testVersion{"v1", true, true, str}
	v1NotStored := testVersion{"v1", true, false, str}
	v2 := func(spec string) testVersion { return testVersion{"v2", true, true, spec} }
	served := func(f func(*config.ServedVersionChecks)) func(*config.CRDUpgradeSafety) {
		return func(c *config.CRDUpgradeSafety) { f(&c.Checks.ServedVersion) }
	}

	runCRDCases(t, []crdCase{
		{name: "new served version with the same schema", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(str)), want: []string{}},
		{name: "new served version with a new optional field", old: newCRD(t, v1),
			new: newCRD(t, v1NotStored, v2(`{type: object, properties: {a: {type: string}, b: {type: string}, c: {type: integer}}}`)), want: []string{}},
		{name: "new served version changes a type", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(intA)),
			want: []string{typeA}},
		{name: "new served version drops a field", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(noB)),
			want: []string{removedB}},
		{name: "existing served versions made incompatible", old: newCRD(t, v1NotStored, v2(str)), new: newCRD(t, v1NotStored, v2(intA)),
			want: []string{
				typeA,
				`error type v2 ^.spec.a: type changed: "string" -> "integer"`,
			}},
		{name: "pairs go from lower to higher version priority, whatever the spec order",
			old: newCRD(t, testVersion{"v1", true, true, intA}), new: newCRD(t, testVersion{"v1", true, true, intA}, testVersion{"v1alpha1", true, false, str}),
			want: []string{`error servedVersion v1alpha1 -> v1 ^.spec.a: [type] type changed: "string" -> "integer"`}},
		{name: "three served versions: every pair",
			old: newCRD(t, v1),
			new: newCRD(t, v1NotStored, testVersion{"v2", true, false, intA}, testVersion{"v3", true, true, intAnoB}),
			want: []string{
				typeA,
				`error servedVersion v1 -> v3 ^.spec.a: [type] type changed: "string" -> "integer"`,
				`error servedVersion v1 -> v3 ^.spec.b: [existingFieldRemoval] existing field removed (was string)`,
				`error servedVersion v2 -> v3 ^.spec.b: [existingFieldRemoval] existing field removed (was string)`,
			}},
		{name: "unserved version is not compared", old: newCRD(t, v1), new: newCRD(t, v1, testVersion{"v2", false, false, intA}), want: []string{}},

		// Only incompatibilities the old CRD did not already have.
		{name: "incompatibility already in the old CRD", old: newCRD(t, v1NotStored, v2(intA)), new: newCRD(t, v1NotStored, v2(intA)), want: []string{}},
		{name: "incompatibility already in the old CRD, versions reordered", old: newCRD(t, v1NotStored, v2(intA)), new: newCRD(t, v2(intA), v1NotStored), want: []string{}},
		{name: "new incompatibility beside an old one", old: newCRD(t, v1NotStored, v2(intA)), new: newCRD(t, v1NotStored, v2(intAnoB)),
			want: []string{
				removedB,
				`error existingFieldRemoval v2 ^.spec.b: existing field removed (was string)`,
			}},

		// Conversion webhook.
		{name: "skipped under a conversion webhook", old: newCRD(t, v1), new: with(newCRD(t, v1NotStored, v2(intA)), webhookConversion), want: []string{}},
		{name: "ignoreConversion false runs it under a conversion webhook", old: newCRD(t, v1), new: with(newCRD(t, v1NotStored, v2(intA)), webhookConversion),
			config: served(func(s *config.ServedVersionChecks) { s.IgnoreConversion = false }),
			want:   []string{typeA}},
		{name: "conversion strategy None is checked", old: newCRD(t, v1),
			new: with(newCRD(t, v1NotStored, v2(intA)), func(c *apiextv1.CustomResourceDefinition) {
				c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
			}),
			want: []string{typeA}},

		// Options.
		{name: "disabled", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(intA)),
			config: served(func(s *config.ServedVersionChecks) { s.Enabled = false }), want: []string{}},
		{name: "servedVersion type check disabled", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(intA)),
			config: served(func(s *config.ServedVersionChecks) { s.Type.Enabled = false }), want: []string{}},
		{name: "sameVersion options do not apply to servedVersion", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(intA)),
			config: func(c *config.CRDUpgradeSafety) { c.Checks.SameVersion.Type.Enabled = false }, want: []string{typeA}},
		{name: "servedVersion toggle", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(patternB)),
			config: served(func(s *config.ServedVersionChecks) { s.Toggles[config.CheckPattern] = false }), want: []string{}},
		{name: "servedVersion toggle on by default", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(patternB)),
			want: []string{`error servedVersion v1 -> v2 ^.spec.b: [pattern] pattern added: (none) -> "^x"`}},
		{name: "unhandled change between served versions", old: newCRD(t, testVersion{"v1", true, true, plainE}), new: newCRD(t, testVersion{"v1", true, false, plainE}, v2(embedded)),
			want: []string{unhandleE}},
		{name: "servedVersion unhandledFailureMode Open", old: newCRD(t, testVersion{"v1", true, true, plainE}), new: newCRD(t, testVersion{"v1", true, false, plainE}, v2(embedded)),
			config: served(func(s *config.ServedVersionChecks) { s.UnhandledFailureMode = config.FailModeOpen }), want: []string{}},
		{name: "failMode open applies to servedVersion", old: newCRD(t, testVersion{"v1", true, true, plainE}), new: newCRD(t, testVersion{"v1", true, false, plainE}, v2(embedded)),
			config: func(c *config.CRDUpgradeSafety) { c.FailMode = config.FailModeOpen }, want: []string{}},
		{name: "servedVersion unhandledFailureMode Closed overrides failMode open", old: newCRD(t, testVersion{"v1", true, true, plainE}), new: newCRD(t, testVersion{"v1", true, false, plainE}, v2(embedded)),
			config: func(c *config.CRDUpgradeSafety) {
				c.FailMode = config.FailModeOpen
				c.Checks.ServedVersion.UnhandledFailureMode = config.FailModeClosed
			},
			want: []string{unhandleE}},
		{name: "existingFieldRemoval disabled does not switch off field removal between served versions", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2(noB)),
			config: func(c *config.CRDUpgradeSafety) { c.Checks.CRD.ExistingFieldRemoval.Enabled = false },
			want:   []string{removedB}},
	})
}
