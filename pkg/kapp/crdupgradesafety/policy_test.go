package crdupgradesafety

import (
	"reflect"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// policyPair returns an old and a new CRD with findings of several checks,
// at the CRD level and in two versions.
func policyPair(t *testing.T) (old, new *apiextv1.CustomResourceDefinition) {
	old = enginetest.NewCRD(t,
		enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: `{type: object, properties: {a: {type: string}}}`},
		enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string}, b: {type: string, maxLength: 9}, c: {type: string}}}`},
	)
	new = enginetest.With(enginetest.NewCRD(t,
		enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: integer}, b: {type: string, maxLength: 3}}}`},
	), enginetest.WithScope(apiextv1.ClusterScoped))
	return old, new
}

func TestPolicy(t *testing.T) {
	all := []string{
		"error existingFieldRemoval v1 ^.spec.c: data loss: existing field removed (was string)",
		"error scope  : scope changed: Namespaced -> Cluster",
		`error type v1 ^.spec.a: type changed: "string" -> "integer"`,
		"error maxLength v1 ^.spec.b: maxLength decreased: 9 -> 3",
		`error servedVersionRemoval v1alpha1 : served version "v1alpha1" removed without first being set served: false`,
		`warning versionLifecycle v1alpha1 : served version "v1alpha1" removed without a release that marked it deprecated: true`,
	}
	exempt := func(e ...config.Waiver) func(*config.Settings) {
		return func(c *config.Settings) { c.Waivers = e }
	}
	cases := []struct {
		name   string
		config func(*config.Settings)
		want   []string
	}{
		{name: "defaults: every finding, sorted by version, field, check, message", want: all},
		{name: "mode error", config: func(c *config.Settings) { c.Mode = config.ModeError }, want: all},
		{name: "mode warn", config: func(c *config.Settings) { c.Mode = config.ModeWarn }, want: []string{
			"warning existingFieldRemoval v1 ^.spec.c: data loss: existing field removed (was string)",
			"warning scope  : scope changed: Namespaced -> Cluster",
			`warning type v1 ^.spec.a: type changed: "string" -> "integer"`,
			"warning maxLength v1 ^.spec.b: maxLength decreased: 9 -> 3",
			`warning servedVersionRemoval v1alpha1 : served version "v1alpha1" removed without first being set served: false`,
			`warning versionLifecycle v1alpha1 : served version "v1alpha1" removed without a release that marked it deprecated: true`,
		}},
		{name: "CRD exempted from all checks, with a reason", config: exempt(config.Waiver{CRD: enginetest.TestCRDName, Reason: "reviewed in JIRA-1"}), want: []string{
			"error existingFieldRemoval v1 ^.spec.c: data loss: existing field removed (was string) (not exempted: a waiver cannot waive a loss of stored data; only an acceptDataLoss entry of the settings that names the loss accepts it; it read: reviewed in JIRA-1)",
			"warning scope  : scope changed: Namespaced -> Cluster (exempted: reviewed in JIRA-1)",
			`warning type v1 ^.spec.a: type changed: "string" -> "integer" (exempted: reviewed in JIRA-1)`,
			"warning maxLength v1 ^.spec.b: maxLength decreased: 9 -> 3 (exempted: reviewed in JIRA-1)",
			`warning servedVersionRemoval v1alpha1 : served version "v1alpha1" removed without first being set served: false (exempted: reviewed in JIRA-1)`,
			`warning versionLifecycle v1alpha1 : served version "v1alpha1" removed without a release that marked it deprecated: true (exempted: reviewed in JIRA-1)`,
		}},
		{name: "CRD exempted from some checks", config: exempt(config.Waiver{CRD: enginetest.TestCRDName, Checks: []string{config.CheckScope, config.CheckMaxLength}, Reason: "no objects yet"}), want: []string{
			"error existingFieldRemoval v1 ^.spec.c: data loss: existing field removed (was string)",
			"warning scope  : scope changed: Namespaced -> Cluster (exempted: no objects yet)",
			`error type v1 ^.spec.a: type changed: "string" -> "integer"`,
			"warning maxLength v1 ^.spec.b: maxLength decreased: 9 -> 3 (exempted: no objects yet)",
			`error servedVersionRemoval v1alpha1 : served version "v1alpha1" removed without first being set served: false`,
			`warning versionLifecycle v1alpha1 : served version "v1alpha1" removed without a release that marked it deprecated: true`,
		}},
		{name: "exemption without a reason", config: exempt(config.Waiver{CRD: enginetest.TestCRDName, Checks: []string{config.CheckType}}), want: []string{
			"error existingFieldRemoval v1 ^.spec.c: data loss: existing field removed (was string)",
			"error scope  : scope changed: Namespaced -> Cluster",
			`warning type v1 ^.spec.a: type changed: "string" -> "integer" (exempted)`,
			"error maxLength v1 ^.spec.b: maxLength decreased: 9 -> 3",
			`error servedVersionRemoval v1alpha1 : served version "v1alpha1" removed without first being set served: false`,
			`warning versionLifecycle v1alpha1 : served version "v1alpha1" removed without a release that marked it deprecated: true`,
		}},
		{name: "exemption of another CRD", config: exempt(config.Waiver{CRD: "gadgets.example.com", Reason: "other"}), want: all},
		{name: "several exemptions of the same CRD", config: exempt(
			config.Waiver{CRD: "gadgets.example.com"},
			config.Waiver{CRD: enginetest.TestCRDName, Checks: []string{config.CheckExistingFieldRemoval}, Reason: "field unused"},
		), want: []string{
			"error existingFieldRemoval v1 ^.spec.c: data loss: existing field removed (was string) (not exempted: a waiver cannot waive a loss of stored data; only an acceptDataLoss entry of the settings that names the loss accepts it; it read: field unused)",
			"error scope  : scope changed: Namespaced -> Cluster",
			`error type v1 ^.spec.a: type changed: "string" -> "integer"`,
			"error maxLength v1 ^.spec.b: maxLength decreased: 9 -> 3",
			`error servedVersionRemoval v1alpha1 : served version "v1alpha1" removed without first being set served: false`,
			`warning versionLifecycle v1alpha1 : served version "v1alpha1" removed without a release that marked it deprecated: true`,
		}},
		{name: "an acceptance of the loss, not a waiver, passes it", config: func(c *config.Settings) {
			c.AcceptDataLoss = []config.Acceptance{{CRD: enginetest.TestCRDName, Check: config.CheckExistingFieldRemoval, Version: "v1", Path: "^.spec.c",
				Objects: 3, Reason: "c was never read", Owner: "team-a", Expires: enginetest.FarFuture}}
		}, want: append([]string{
			"warning existingFieldRemoval v1 ^.spec.c: data loss: existing field removed (was string) (data loss accepted: c was never read; at most 3 objects, not counted in this run (no objects read): the count is enforced where the objects are read; owner team-a; until 2099-12-31)",
		}, all[1:]...)},
		{name: "an acceptance names the loss exactly: another path, version or check is not covered", config: func(c *config.Settings) {
			c.AcceptDataLoss = []config.Acceptance{
				{CRD: enginetest.TestCRDName, Check: config.CheckExistingFieldRemoval, Version: "v1", Path: "^.spec.*", Objects: 3, Reason: "r", Expires: enginetest.FarFuture},
				{CRD: enginetest.TestCRDName, Check: config.CheckExistingFieldRemoval, Version: "v2", Path: "^.spec.c", Objects: 3, Reason: "r", Expires: enginetest.FarFuture},
				{CRD: enginetest.TestCRDName, Check: config.CheckExistingResources, Version: "v1", Path: "^.spec.c", Objects: 3, Reason: "r", Expires: enginetest.FarFuture},
				{CRD: enginetest.TestCRDName, Check: config.CheckExistingFieldRemoval, Version: "v1", Objects: 3, Reason: "r", Expires: enginetest.FarFuture},
			}
		}, want: all},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			old, new := policyPair(t)
			fs := Compare(old, new, &cfg)
			if got := enginetest.Render(fs); !enginetest.EqualLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			for _, f := range fs {
				if f.CRD != enginetest.TestCRDName {
					t.Errorf("finding names CRD %q, want %q", f.CRD, enginetest.TestCRDName)
				}
			}
		})
	}

	t.Run("nil config uses the defaults", func(t *testing.T) {
		old, new := policyPair(t)
		if got := enginetest.Render(Compare(old, new, nil)); !enginetest.EqualLines(got, all) {
			t.Fatalf("findings differ\n got: %q\nwant: %q", got, all)
		}
	})
	t.Run("exempted unhandled change", func(t *testing.T) {
		cfg := config.Default()
		cfg.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Checks: []string{config.CheckUnhandled}, Reason: "items are ignored on strings"}}
		old := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {e: {type: string}}}`})
		new := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {e: {type: string, items: {type: string}}}}`})
		want := []string{`warning unhandled v1 ^.spec.e: unable to determine if the change to items is safe: (none) -> {"type":"string"} (exempted: items are ignored on strings)`}
		if got := enginetest.Render(Compare(old, new, &cfg)); !enginetest.EqualLines(got, want) {
			t.Fatalf("findings differ\n got: %q\nwant: %q", got, want)
		}
	})
}

func TestFindingsSorted(t *testing.T) {
	old := enginetest.NewCRD(t,
		enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: `{type: object, properties: {b: {type: string}, a: {type: string, enum: [x, z]}}}`},
		enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: `{type: object, properties: {b: {type: string}, a: {type: string}}}`},
	)
	new := enginetest.NewCRD(t,
		enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string, enum: [z], pattern: "^z", default: z}}}`},
		enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: `{type: object, properties: {a: {type: integer}}}`},
	)
	new.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter}
	want := []string{
		"error existingFieldRemoval v1 ^.spec.b: data loss: existing field removed (was string)",
		"error existingFieldRemoval v2 ^.spec.b: data loss: existing field removed (was string)",
		`error type v1 ^.spec.a: type changed: "string" -> "integer"`,
		`error default v2 ^.spec.a: default added: (none) -> "z"`,
		`error enum v2 ^.spec.a: enum values removed: ["x"]`,
		`error pattern v2 ^.spec.a: pattern added: (none) -> "^z": "" no longer accepted`,
	}
	if got := enginetest.Render(Compare(old, new, nil)); !enginetest.EqualLines(got, want) {
		t.Fatalf("findings differ\n got: %q\nwant: %q", got, want)
	}
}

// TestSortFindings pins the order of combined findings (several CRDs, the
// live checks), severity last.
func TestSortFindings(t *testing.T) {
	fs := []finding.Finding{
		{CRD: "b", Version: "v1", Field: "^.a", Check: "enum", ChangeText: "x", Severity: finding.SeverityError},
		{CRD: "a", Version: "v2", Field: "^.a", Check: "enum", ChangeText: "x", Severity: finding.SeverityError},
		{CRD: "a", Version: "v1", Field: "^.b", Check: "enum", ChangeText: "x", Severity: finding.SeverityError},
		{CRD: "a", Version: "v1", Field: "^.b", Check: "default", ChangeText: "y", Severity: finding.SeverityError},
		{CRD: "a", Version: "v1", Field: "^.b", Check: "default", ChangeText: "x", Severity: finding.SeverityWarning},
		{CRD: "a", Version: "v1", Field: "^.b", Check: "default", ChangeText: "x", Severity: finding.SeverityError},
	}
	finding.SortFindings(fs)
	want := []string{
		"error default v1 ^.b: x", "warning default v1 ^.b: x", "error default v1 ^.b: y",
		"error enum v1 ^.b: x", "error enum v2 ^.a: x", "error enum v1 ^.a: x",
	}
	if got := enginetest.Render(fs); !enginetest.EqualLines(got, want) {
		t.Fatalf("order differs\n got: %q\nwant: %q", got, want)
	}
	if fs[5].CRD != "b" {
		t.Fatalf("CRD b sorted before a: %+v", fs)
	}
}

func TestHasErrors(t *testing.T) {
	cases := []struct {
		name string
		fs   []finding.Finding
		want bool
	}{
		{name: "none", fs: nil, want: false},
		{name: "warnings only", fs: []finding.Finding{{Severity: finding.SeverityWarning}, {Severity: finding.SeverityWarning}}, want: false},
		{name: "an error", fs: []finding.Finding{{Severity: finding.SeverityWarning}, {Severity: finding.SeverityError}}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := finding.HasErrors(tc.fs); got != tc.want {
				t.Fatalf("HasErrors = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("warn mode leaves no errors", func(t *testing.T) {
		cfg := config.Default()
		old, new := policyPair(t)
		if !finding.HasErrors(Compare(old, new, &cfg)) {
			t.Fatal("mode error: want errors")
		}
		cfg.Mode = config.ModeWarn
		if finding.HasErrors(Compare(old, new, &cfg)) {
			t.Fatal("mode warn: want no errors")
		}
	})
}

func TestBound(t *testing.T) {
	f := func(crd, field string) finding.Finding {
		return finding.Finding{CRD: crd, Field: schemapath.Path(field)}
	}
	fs := []finding.Finding{f("a", "1"), f("a", "2"), f("a", "3"), f("b", "1"), f("c", "1"), f("c", "2")}
	cases := []struct {
		name        string
		max         int
		wantKept    []finding.Finding
		wantOmitted map[string]int
	}{
		{name: "0 keeps all", max: 0, wantKept: fs, wantOmitted: map[string]int{}},
		{name: "negative keeps all", max: -1, wantKept: fs, wantOmitted: map[string]int{}},
		{name: "1 per CRD", max: 1, wantKept: []finding.Finding{f("a", "1"), f("b", "1"), f("c", "1")}, wantOmitted: map[string]int{"a": 2, "c": 1}},
		{name: "2 per CRD", max: 2, wantKept: []finding.Finding{f("a", "1"), f("a", "2"), f("b", "1"), f("c", "1"), f("c", "2")}, wantOmitted: map[string]int{"a": 1}},
		{name: "more than any CRD has", max: 3, wantKept: fs, wantOmitted: map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, omitted := finding.Bound(fs, tc.max)
			if !reflect.DeepEqual(kept, tc.wantKept) || !reflect.DeepEqual(omitted, tc.wantOmitted) {
				t.Fatalf("Bound(%d) = %v, %v; want %v, %v", tc.max, kept, omitted, tc.wantKept, tc.wantOmitted)
			}
		})
	}
}

// TestBoundKeepsWhatAffectsObjects: over the bound, the findings that lose
// data or affect stored objects are kept first, then the other errors,
// then the rest, in the order given; the kept ones keep that order.
func TestBoundKeepsWhatAffectsObjects(t *testing.T) {
	f := func(field string, sev finding.Severity, mod func(*finding.Finding)) finding.Finding {
		out := finding.Finding{CRD: "a", Field: schemapath.Path(field), Severity: sev}
		if mod != nil {
			mod(&out)
		}
		return out
	}
	affects := func(f *finding.Finding) { f.Impact = &finding.Impact{Objects: 2, Affected: 1} }
	unaffected := func(f *finding.Finding) { f.Impact = &finding.Impact{Objects: 2} }
	loss := func(f *finding.Finding) { f.DataLoss = true }
	object := func(f *finding.Finding) { f.Object = &finding.ObjectFinding{Name: "x"} }
	note := func(f *finding.Finding) { f.Object = &finding.ObjectFinding{Name: "x", AlreadyInvalid: true} }
	// In the output order (SortFindings: data loss first).
	loss1 := f("0", finding.SeverityError, loss)
	none1 := f("1", finding.SeverityError, unaffected)
	warn1 := f("2", finding.SeverityWarning, unaffected)
	noted := f("3", finding.SeverityWarning, note)
	hit1 := f("4", finding.SeverityError, affects)
	none2 := f("5", finding.SeverityError, nil)
	obj1 := f("6", finding.SeverityError, object)
	hit2 := f("7", finding.SeverityWarning, affects)
	fs := []finding.Finding{loss1, none1, warn1, noted, hit1, none2, obj1, hit2}
	cases := []struct {
		name string
		max  int
		want []finding.Finding
	}{
		{name: "1: data loss first", max: 1, want: []finding.Finding{loss1}},
		{name: "3: then those that affect objects, not the unaffected ones before them", max: 3, want: []finding.Finding{loss1, hit1, obj1}},
		{name: "4: an affected warning before an unaffected error", max: 4, want: []finding.Finding{loss1, hit1, obj1, hit2}},
		{name: "5: then the errors that affect none", max: 5, want: []finding.Finding{loss1, none1, hit1, obj1, hit2}},
		{name: "6", max: 6, want: []finding.Finding{loss1, none1, hit1, none2, obj1, hit2}},
		{name: "7: then the rest, a note last but by order", max: 7, want: []finding.Finding{loss1, none1, warn1, hit1, none2, obj1, hit2}},
		{name: "8: all", max: 8, want: fs},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, omitted := finding.Bound(fs, tc.max)
			fields := func(fs []finding.Finding) (out []string) {
				for _, f := range fs {
					out = append(out, string(f.Field))
				}
				return out
			}
			if !reflect.DeepEqual(fields(kept), fields(tc.want)) {
				t.Fatalf("Bound(%d) kept %v; want %v", tc.max, fields(kept), fields(tc.want))
			}
			if want := len(fs) - len(tc.want); omitted["a"] != want {
				t.Fatalf("Bound(%d) omitted %d; want %d", tc.max, omitted["a"], want)
			}
		})
	}
	t.Run("findings of other CRDs are bounded apart", func(t *testing.T) {
		b := finding.Finding{CRD: "b", Field: "9", Severity: finding.SeverityWarning}
		kept, omitted := finding.Bound(append([]finding.Finding{b}, fs...), 1)
		if len(kept) != 2 || kept[0].CRD != "b" || kept[1].Field != loss1.Field || omitted["a"] != 7 || omitted["b"] != 0 {
			t.Fatalf("got %v, %v", kept, omitted)
		}
	})
}

func TestBoundOrder(t *testing.T) {
	f := func(crd, field string) finding.Finding {
		return finding.Finding{CRD: crd, Field: schemapath.Path(field)}
	}
	fs := []finding.Finding{f("a", "1"), f("b", "1"), f("a", "2"), f("a", "3")}
	cases := []struct {
		name        string
		max         int
		wantKept    []finding.Finding
		wantOmitted map[string]int
	}{
		{name: "interleaved CRDs keep their order", max: 2, wantKept: []finding.Finding{f("a", "1"), f("b", "1"), f("a", "2")}, wantOmitted: map[string]int{"a": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, omitted := finding.Bound(fs, tc.max)
			if !reflect.DeepEqual(kept, tc.wantKept) || !reflect.DeepEqual(omitted, tc.wantOmitted) {
				t.Fatalf("Bound(%d) = %v, %v; want %v, %v", tc.max, kept, omitted, tc.wantKept, tc.wantOmitted)
			}
		})
	}
}

// TestEnforcementLevels: every enforcement option of the property checks
// takes Strict (an error finding), Warn (a warning finding, even in mode
// error) and None (no finding), through the one path from check to policy.
func TestEnforcementLevels(t *testing.T) {
	type option struct {
		name     string
		old, new string
		set      func(v *config.VersionChecks, e config.Enforcement)
	}
	options := []option{
		{"enum.removalEnforcement", `{type: string, enum: [a, b]}`, `{type: string, enum: [a]}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Enum.RemovalEnforcement = e }},
		{"default.additionEnforcement", `{type: string}`, `{type: string, default: a}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Default.AdditionEnforcement = e }},
		{"default.changeEnforcement", `{type: string, default: a}`, `{type: string, default: b}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Default.ChangeEnforcement = e }},
		{"default.removalEnforcement", `{type: string, default: a}`, `{type: string}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Default.RemovalEnforcement = e }},
		{"required.newEnforcement", `{type: object, properties: {a: {type: string}}}`, `{type: object, required: [a], properties: {a: {type: string}}}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Required.NewEnforcement = e }},
		{"type.changeEnforcement", `{type: string}`, `{type: integer}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Type.ChangeEnforcement = e }},
		{"type.changeEnforcement (to int-or-string)", `{type: boolean}`, `{x-kubernetes-int-or-string: true}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Type.ChangeEnforcement = e }},
		{"maximum.additionEnforcement", `{type: integer}`, `{type: integer, maximum: 3}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.Maximum.AdditionEnforcement = e }},
		{"maxLength.decreaseEnforcement", `{type: string, maxLength: 5}`, `{type: string, maxLength: 3}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.MaxLength.DecreaseEnforcement = e }},
		{"minItems.additionEnforcement", `{type: array, items: {type: string}}`, `{type: array, minItems: 1, items: {type: string}}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.MinItems.AdditionEnforcement = e }},
		{"minProperties.increaseEnforcement", `{type: object, minProperties: 1}`, `{type: object, minProperties: 2}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.MinProperties.IncreaseEnforcement = e }},
		{"listType.uniquenessEnforcement", `{type: array, items: {type: string}}`, `{type: array, x-kubernetes-list-type: set, items: {type: string}}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.ListType.UniquenessEnforcement = e }},
		{"listType.coarseningEnforcement", `{type: array, x-kubernetes-list-type: set, items: {type: string}}`, `{type: array, items: {type: string}}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.ListType.CoarseningEnforcement = e }},
		{"mapType.changeEnforcement", `{type: object, additionalProperties: {type: string}}`, `{type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}`,
			func(v *config.VersionChecks, e config.Enforcement) { v.MapType.ChangeEnforcement = e }},
	}
	levels := []struct {
		level config.Enforcement
		want  []finding.Severity
	}{
		{config.EnforcementStrict, []finding.Severity{finding.SeverityError}},
		{config.EnforcementWarn, []finding.Severity{finding.SeverityWarning}},
		{config.EnforcementNone, nil},
	}
	for _, o := range options {
		for _, l := range levels {
			t.Run(o.name+"="+string(l.level), func(t *testing.T) {
				cfg := config.Default()
				cfg.Mode = config.ModeError
				o.set(&cfg.Checks.SameVersion, l.level)
				var got []finding.Severity
				for _, f := range Compare(enginetest.CRDWithField(t, o.old), enginetest.CRDWithField(t, o.new), &cfg) {
					got = append(got, f.Severity)
				}
				if !reflect.DeepEqual(got, l.want) {
					t.Fatalf("severities %v, want %v", got, l.want)
				}
			})
		}
	}
}
