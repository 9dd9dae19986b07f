package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestServedVersion(t *testing.T) {
	const (
		str       = `{type: object, properties: {a: {type: string}, b: {type: string}}}`
		intA      = `{type: object, properties: {a: {type: integer}, b: {type: string}}}`
		noB       = `{type: object, properties: {a: {type: string}}}`
		patternB  = `{type: object, properties: {a: {type: string}, b: {type: string, pattern: "^x"}}}`
		intAnoB   = `{type: object, properties: {a: {type: integer}}}`
		withItems = `{type: object, properties: {a: {type: string}, b: {type: string}, e: {type: string, items: {type: string}}}}`
		plainE    = `{type: object, properties: {a: {type: string}, b: {type: string}, e: {type: string}}}`
		typeA     = `error servedVersion v1 -> v2 ^.spec.a: [type] type changed: "string" -> "integer"`
		removedB  = `error servedVersion v1 -> v2 ^.spec.b: [existingFieldRemoval] existing field removed (was string)`
		unhandleE = `error servedVersion v1 -> v2 ^.spec.e: [unhandled] unable to determine if the change to items is safe: (none) -> {"type":"string"}`
	)
	const mapB = `{type: object, properties: {a: {type: string}, b: {type: object, additionalProperties: {type: string}}}}`
	const mapAtomicB = `{type: object, properties: {a: {type: string}, b: {type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}}}`
	mapTypeB := func(severity string) string {
		return severity + " servedVersion v1 -> v2 ^.spec.b: [mapType] x-kubernetes-map-type changed: granular -> atomic: no stored object becomes invalid, only server-side apply ownership changes"
	}
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: str}
	v1NotStored := enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: str}
	v2 := func(spec string) enginetest.TestVersion {
		return enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: spec}
	}
	served := func(f func(*config.ServedVersionChecks)) func(*config.Settings) {
		return func(c *config.Settings) { f(&c.Checks.ServedVersion) }
	}

	runCRDCases(t, []crdCase{
		{name: "new served version with the same schema", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(str)), want: []string{}},
		{name: "new served version with a new optional field", old: enginetest.NewCRD(t, v1),
			new: enginetest.NewCRD(t, v1NotStored, v2(`{type: object, properties: {a: {type: string}, b: {type: string}, c: {type: integer}}}`)), want: []string{`warning storagePruning v1 ^.spec.c: data loss: missing from v1's view: the storage version v2 holds it, a read-modify-write through v1 drops it (conversion None)`}},
		{name: "new served version changes a type", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(intA)),
			want: []string{typeA}},
		{name: "new served version drops a field", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(noB)),
			want: []string{`error storagePruning v1 ^.spec.b: data loss: pruned from every write through v1: the storage version v2 does not declare it (conversion None)`, removedB}},
		{name: "existing served versions made incompatible", old: enginetest.NewCRD(t, v1NotStored, v2(str)), new: enginetest.NewCRD(t, v1NotStored, v2(intA)),
			want: []string{
				typeA,
				`error type v2 ^.spec.a: type changed: "string" -> "integer"`,
			}},
		{name: "pairs go from lower to higher version priority, whatever the spec order",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: intA}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: intA}, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: str}),
			want: []string{`error servedVersion v1alpha1 -> v1 ^.spec.a: [type] type changed: "string" -> "integer"`}},
		{name: "three served versions: every pair",
			old: enginetest.NewCRD(t, v1),
			new: enginetest.NewCRD(t, v1NotStored, enginetest.TestVersion{Name: "v2", Served: true, Storage: false, Spec: intA}, enginetest.TestVersion{Name: "v3", Served: true, Storage: true, Spec: intAnoB}),
			want: []string{`error storagePruning v1 ^.spec.b: data loss: pruned from every write through v1: the storage version v3 does not declare it (conversion None)`, `error storagePruning v2 ^.spec.b: data loss: pruned from every write through v2: the storage version v3 does not declare it (conversion None)`,
				typeA,
				`error servedVersion v1 -> v3 ^.spec.a: [type] type changed: "string" -> "integer"`,
				`error servedVersion v1 -> v3 ^.spec.b: [existingFieldRemoval] existing field removed (was string)`,
				`error servedVersion v2 -> v3 ^.spec.b: [existingFieldRemoval] existing field removed (was string)`,
			}},
		{name: "unserved version is not compared", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1, enginetest.TestVersion{Name: "v2", Served: false, Storage: false, Spec: intA}), want: []string{}},

		// Only incompatibilities the old CRD did not already have.
		{name: "incompatibility already in the old CRD", old: enginetest.NewCRD(t, v1NotStored, v2(intA)), new: enginetest.NewCRD(t, v1NotStored, v2(intA)), want: []string{}},
		{name: "incompatibility already in the old CRD, versions reordered", old: enginetest.NewCRD(t, v1NotStored, v2(intA)), new: enginetest.NewCRD(t, v2(intA), v1NotStored), want: []string{}},
		{name: "new version with the schema of an existing one brings no old incompatibility",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1, enginetest.TestVersion{Name: "v2", Served: true, Storage: false, Spec: str}), want: []string{}},
		{name: "new version with the schema of an existing one, documentation edited",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1,
				enginetest.TestVersion{Name: "v2", Served: true, Storage: false, Spec: `{type: object, description: "v2", properties: {a: {type: string, description: "A"}, b: {type: string}}}`}),
			want: []string{}},
		{name: "new version with the schema of an existing one, lower priority",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1, enginetest.TestVersion{Name: "v1alpha0", Served: true, Storage: false, Spec: str}), want: []string{}},
		{name: "two versions with equal schemas are compatible, whatever the old CRD",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: str}, v1), want: []string{
				`error type v1alpha1 ^.spec.a: type changed: "integer" -> "string"`,
			}},
		{name: "new version with a schema of its own still compared",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: intA}, v1, enginetest.TestVersion{Name: "v2", Served: true, Storage: false, Spec: noB}), want: []string{`warning storagePruning v2 ^.spec.b: data loss: missing from v2's view: the storage version v1 holds it, a read-modify-write through v2 drops it (conversion None)`,
				removedB,
				`error servedVersion v1alpha1 -> v2 ^.spec.a: [type] type changed: "integer" -> "string"`,
				`error servedVersion v1alpha1 -> v2 ^.spec.b: [existingFieldRemoval] existing field removed (was string)`,
			}},
		{name: "new incompatibility beside an old one", old: enginetest.NewCRD(t, v1NotStored, v2(intA)), new: enginetest.NewCRD(t, v1NotStored, v2(intAnoB)),
			want: []string{`error storagePruning v1 ^.spec.b: data loss: pruned from every write through v1: the storage version v2 does not declare it (conversion None)`,
				`error existingFieldRemoval v2 ^.spec.b: data loss: existing field removed (was string)`,
				removedB,
			}},

		// Conversion webhook.
		{name: "skipped under a conversion webhook", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2(intA)), enginetest.WebhookConversion), want: []string{}},
		{name: "ignoreConversion false runs it under a conversion webhook", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2(intA)), enginetest.WebhookConversion),
			config: served(func(s *config.ServedVersionChecks) { s.IgnoreConversion = false }),
			want:   []string{typeA}},
		{name: "conversion strategy None is checked", old: enginetest.NewCRD(t, v1),
			new: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2(intA)), func(c *apiextv1.CustomResourceDefinition) {
				c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
			}),
			want: []string{typeA}},

		// Options.
		{name: "disabled", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(intA)),
			config: served(func(s *config.ServedVersionChecks) { s.Enabled = false }), want: []string{}},
		{name: "servedVersion type check disabled", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(intA)),
			config: served(func(s *config.ServedVersionChecks) { s.Type.Enabled = false }), want: []string{}},
		{name: "sameVersion options do not apply to servedVersion", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(intA)),
			config: func(c *config.Settings) { c.Checks.SameVersion.Type.Enabled = false }, want: []string{typeA}},
		{name: "servedVersion toggle", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(patternB)),
			config: served(func(s *config.ServedVersionChecks) { s.Toggles[config.CheckPattern] = false }), want: []string{}},
		{name: "servedVersion carries the enforcement of its check: a warning", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: mapB}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: mapB}, v2(mapAtomicB)),
			want: []string{mapTypeB("warning")}},
		{name: "servedVersion carries the enforcement of its check: Strict", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: mapB}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: mapB}, v2(mapAtomicB)),
			config: served(func(s *config.ServedVersionChecks) { s.MapType.ChangeEnforcement = config.EnforcementStrict }),
			want:   []string{mapTypeB("error")}},
		{name: "servedVersion carries the enforcement of its check: None", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: mapB}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: mapB}, v2(mapAtomicB)),
			config: served(func(s *config.ServedVersionChecks) { s.MapType.ChangeEnforcement = config.EnforcementNone }),
			want:   []string{}},
		{name: "servedVersion toggle on by default", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(patternB)),
			want: []string{`error servedVersion v1 -> v2 ^.spec.b: [pattern] pattern added: (none) -> "^x": "" no longer accepted`}},
		{name: "unhandled change between served versions", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: plainE}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: plainE}, v2(withItems)),
			want: []string{unhandleE}},
		{name: "servedVersion unhandledFailureMode Open", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: plainE}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: plainE}, v2(withItems)),
			config: served(func(s *config.ServedVersionChecks) { s.UnhandledFailureMode = config.FailModeOpen }), want: []string{}},
		{name: "failMode open applies to servedVersion", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: plainE}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: plainE}, v2(withItems)),
			config: func(c *config.Settings) { c.FailMode = config.FailModeOpen }, want: []string{}},
		{name: "servedVersion unhandledFailureMode Closed overrides failMode open", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: plainE}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: plainE}, v2(withItems)),
			config: func(c *config.Settings) {
				c.FailMode = config.FailModeOpen
				c.Checks.ServedVersion.UnhandledFailureMode = config.FailModeClosed
			},
			want: []string{unhandleE}},
		{name: "existingFieldRemoval disabled does not switch off field removal between served versions", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2(noB)),
			config: func(c *config.Settings) { c.Checks.CRD.ExistingFieldRemoval.Enabled = false },
			want:   []string{`error storagePruning v1 ^.spec.b: data loss: pruned from every write through v1: the storage version v2 does not declare it (conversion None)`, removedB}},
	})
}

// TestServedVersionAlreadyByFacts: an incompatibility the old CRD already
// had is recognised by its facts, not its words: a new one worded like an
// old one (the same message, another change) is news, and the same change
// worded otherwise is not.
func TestServedVersionAlreadyByFacts(t *testing.T) {
	old := finding.Draft{Version: "v1", PairVersion: "v2", Field: "^.spec.a", Check: config.CheckEnum,
		Message: "enum values removed", Fact: finding.Change{Kind: "enumRemoved", Old: `["a","b"]`, New: `["a"]`}}
	for _, tc := range []struct {
		name   string
		edit   func(c *finding.Draft)
		wantIs bool
	}{
		{"the same change", func(*finding.Draft) {}, true},
		{"the same change, other words", func(c *finding.Draft) { c.Message = "enum narrowed" }, true},
		{"another change, the same words", func(c *finding.Draft) { c.Fact.Old = `["a","c"]` }, false},
		{"another change kind, the same words", func(c *finding.Draft) { c.Fact.Kind = "enumAdded" }, false},
		{"another field", func(c *finding.Draft) { c.Field = "^.spec.b" }, false},
		{"another pair", func(c *finding.Draft) { c.PairVersion = "v3" }, false},
		{"another check", func(c *finding.Draft) { c.Check = config.CheckDefault }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := old
			tc.edit(&c)
			already := map[pairFacts]struct{}{pairFactsOf(old): {}}
			if _, got := already[pairFactsOf(c)]; got != tc.wantIs {
				t.Fatalf("already had it: got %v, want %v", got, tc.wantIs)
			}
		})
	}
}
