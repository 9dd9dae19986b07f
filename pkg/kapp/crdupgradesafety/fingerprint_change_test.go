package crdupgradesafety

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// fpChangeCase is, for one check ID, two changes at the same place (the
// same CRD, version and field) whose content differs: run returns the
// findings of change variant 0 or 1 under cfg.
type fpChangeCase struct {
	check string
	run   func(t *testing.T, variant int, cfg *config.Settings) []finding.Finding
}

// fpField is a case of a property check: ^.spec.x goes from old to
// news[variant] (schemas as YAML).
func fpField(check, old string, news ...string) fpChangeCase {
	return fpChangeCase{check: check, run: func(t *testing.T, variant int, cfg *config.Settings) []finding.Finding {
		return Compare(enginetest.CRDWithField(t, old), enginetest.CRDWithField(t, news[variant]), cfg)
	}}
}

// fpPair is a case of a CRD-level check: the CRDs of variant come from
// build.
func fpPair(check string, build func(t *testing.T, variant int) (old, new *apiextv1.CustomResourceDefinition)) fpChangeCase {
	return fpChangeCase{check: check, run: func(t *testing.T, variant int, cfg *config.Settings) []finding.Finding {
		old, new := build(t, variant)
		return Compare(old, new, cfg)
	}}
}

// fpFixedContent are the check IDs whose change has no content that can
// differ at one place, or that no waiver can name: why each is left out.
var fpFixedContent = map[string]string{
	config.CheckScope:                 "Namespaced <-> Cluster: one change from each scope",
	config.CheckEmbeddedResource:      "a boolean: added (false -> true) or removed, from different old schemas",
	config.CheckNullable:              "a boolean: only nullable true -> false is a finding",
	config.CheckUniqueItems:           "a boolean: only false -> true is a finding",
	config.CheckExclusiveMinimum:      "a boolean: only false -> true is a finding",
	config.CheckExclusiveMaximum:      "a boolean: only false -> true is a finding",
	config.CheckPreserveUnknownFields: "a boolean: only true removed is a finding (at a field, or the CRD's spec.preserveUnknownFields)",
	config.CheckMapType:               "two values (granular, the default, and atomic): one change from each",
	config.CheckStoredVersionRemoval:  "its place is the version removed; its kinds (removed, while migrating, after an unproven trim) come from the old CRD's state",
	config.CheckStoragePruning:        "its place is the field and version; its content the storage version (judged by check_storagepruning_test.go)",
	config.CheckManagedFields:         "a live check about a version: its fingerprint hashes the version and the kind (removed, unserved)",
	config.CheckOwnerReferences:       "a live check about a version: its fingerprint hashes the version and the kind (removed, unreadable)",
	config.CheckConversionWebhook:     "a live check about the new conversion of stored objects: its fingerprint hashes the versions converted between (or the version and field lost) and the kind (refused, nonStorageHopRefused, lost, annotationsNearLimit, batchRefused, unverified, cut)",
	config.CheckExistingResources:     "about stored objects: its fingerprint hashes the object, its effect, or the change it stands for (Cause)",
	config.CheckAPIServerRejects:      "never waived: the apiserver refuses the change whatever a waiver says",
	config.CheckStaleWaiver:           "never waived: a finding about a waiver",
}

// TestFingerprintCoversTheChange: for every check whose change has
// content, two different changes at the same place have different
// fingerprints, so a waiver reviewed for one (by its fingerprint) does not
// waive the other. Every check ID is covered here or in fpFixedContent.
func TestFingerprintCoversTheChange(t *testing.T) {
	twoVersions := func(t *testing.T, v2 string) (*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinition) {
		old := enginetest.CRDWithField(t, "{type: string, maxLength: 9}")
		new := enginetest.CRDWithField(t, "{type: string, maxLength: 9}")
		second := enginetest.CRDWithField(t, v2).Spec.Versions[0]
		second.Name, second.Storage = "v2", false
		new.Spec.Versions = append(new.Spec.Versions, second)
		return old, new
	}
	withVersions := func(t *testing.T, edit func(vs []apiextv1.CustomResourceDefinitionVersion) []apiextv1.CustomResourceDefinitionVersion) *apiextv1.CustomResourceDefinition {
		crd := enginetest.CRDWithField(t, "{type: string}")
		alpha := crd.Spec.Versions[0]
		alpha.Name, alpha.Storage = "v1alpha1", false
		crd.Spec.Versions = append(crd.Spec.Versions, alpha)
		if edit != nil {
			crd.Spec.Versions = edit(crd.Spec.Versions)
		}
		return crd
	}
	retire := func(t *testing.T, variant int) (*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinition) {
		return withVersions(t, nil), withVersions(t, func(vs []apiextv1.CustomResourceDefinitionVersion) []apiextv1.CustomResourceDefinitionVersion {
			if variant == 0 {
				return vs[:1] // removed
			}
			vs[1].Served = false // unserved
			return vs
		})
	}
	scale := func(path string) *apiextv1.CustomResourceSubresources {
		return &apiextv1.CustomResourceSubresources{Scale: &apiextv1.CustomResourceSubresourceScale{SpecReplicasPath: path, StatusReplicasPath: ".status.replicas"}}
	}
	cases := []fpChangeCase{
		fpField(config.CheckAdditionalProperties, "{type: object, additionalProperties: true}",
			"{type: object, additionalProperties: {type: string, maxLength: 5}}", "{type: object, additionalProperties: {type: string, maxLength: 6}}"),
		fpField(config.CheckAllOf, "{type: string}", "{type: string, allOf: [{maxLength: 5}]}", "{type: string, allOf: [{maxLength: 6}]}"),
		fpField(config.CheckAnyOf, "{type: string}", "{type: string, anyOf: [{maxLength: 5}, {minLength: 9}]}", "{type: string, anyOf: [{maxLength: 6}, {minLength: 9}]}"),
		fpField(config.CheckOneOf, "{type: string}", "{type: string, oneOf: [{maxLength: 5}, {minLength: 9}]}", "{type: string, oneOf: [{maxLength: 6}, {minLength: 9}]}"),
		fpField(config.CheckNot, "{type: string}", "{type: string, not: {maxLength: 5}}", "{type: string, not: {maxLength: 6}}"),
		fpField(config.CheckCELValidation, "{type: string}",
			"{type: string, x-kubernetes-validations: [{rule: 'self.size() < 5'}]}", "{type: string, x-kubernetes-validations: [{rule: 'self.size() < 6'}]}"),
		fpField(config.CheckDefault, "{type: string, default: a}", "{type: string, default: b}", "{type: string, default: c}"),
		fpField(config.CheckEnum, "{type: string, enum: [a, b, c]}", "{type: string, enum: [a, b]}", "{type: string, enum: [a, c]}"),
		fpField(config.CheckFormat, "{type: string}", "{type: string, format: date}", "{type: string, format: date-time}"),
		fpField(config.CheckIntOrString, "{x-kubernetes-int-or-string: true}", "{type: string}", "{type: integer}"),
		fpField(config.CheckListType, "{type: array, items: {type: object, required: [a, b], properties: {a: {type: string}, b: {type: string}}}}",
			"{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [a], items: {type: object, required: [a, b], properties: {a: {type: string}, b: {type: string}}}}",
			"{type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [b], items: {type: object, required: [a, b], properties: {a: {type: string}, b: {type: string}}}}"),
		fpField(config.CheckMaxItems, "{type: array, items: {type: string}}", "{type: array, items: {type: string}, maxItems: 5}", "{type: array, items: {type: string}, maxItems: 6}"),
		fpField(config.CheckMaxLength, "{type: string}", "{type: string, maxLength: 5}", "{type: string, maxLength: 6}"),
		fpField(config.CheckMaxProperties, "{type: object}", "{type: object, maxProperties: 5}", "{type: object, maxProperties: 6}"),
		fpField(config.CheckMaximum, "{type: integer}", "{type: integer, maximum: 5}", "{type: integer, maximum: 6}"),
		fpField(config.CheckMinItems, "{type: array, items: {type: string}}", "{type: array, items: {type: string}, minItems: 5}", "{type: array, items: {type: string}, minItems: 6}"),
		fpField(config.CheckMinLength, "{type: string}", "{type: string, minLength: 5}", "{type: string, minLength: 6}"),
		fpField(config.CheckMinProperties, "{type: object}", "{type: object, minProperties: 5}", "{type: object, minProperties: 6}"),
		fpField(config.CheckMinimum, "{type: integer}", "{type: integer, minimum: 5}", "{type: integer, minimum: 6}"),
		fpField(config.CheckMultipleOf, "{type: integer}", "{type: integer, multipleOf: 2}", "{type: integer, multipleOf: 3}"),
		fpField(config.CheckPattern, "{type: string}", "{type: string, pattern: '^a'}", "{type: string, pattern: '^b'}"),
		fpField(config.CheckRequired, "{type: object, properties: {a: {type: string}, b: {type: string}}}",
			"{type: object, required: [a], properties: {a: {type: string}, b: {type: string}}}",
			"{type: object, required: [b], properties: {a: {type: string}, b: {type: string}}}"),
		fpField(config.CheckType, "{type: string}", "{type: integer}", "{type: boolean}"),
		fpField(config.CheckUnhandled, "{type: string}", "{type: string, items: {type: string}}", "{type: string, items: {type: integer}}"),
		fpPair(config.CheckExistingFieldRemoval, func(t *testing.T, variant int) (*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinition) {
			return enginetest.OracleCRD(t, `{type: object, properties: {spec: {type: object, properties: {y: {type: string}, x: `+[]string{"{type: string}", "{type: integer}"}[variant]+`}}}}`, false),
				enginetest.OracleCRD(t, `{type: object, properties: {spec: {type: object, properties: {y: {type: string}}}}}`, false)
		}),
		fpPair(config.CheckServedVersion, func(t *testing.T, variant int) (*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinition) {
			return twoVersions(t, []string{"{type: string, maxLength: 5}", "{type: string, maxLength: 4}"}[variant])
		}),
		fpPair(config.CheckServedVersionRemoval, retire),
		fpPair(config.CheckVersionLifecycle, retire),
		fpPair(config.CheckSubresources, func(t *testing.T, variant int) (*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinition) {
			old, new := enginetest.CRDWithField(t, "{type: integer}"), enginetest.CRDWithField(t, "{type: integer}")
			old.Spec.Versions[0].Subresources = scale(".spec.x")
			new.Spec.Versions[0].Subresources = scale([]string{".spec.y", ".spec.z"}[variant])
			return old, new
		}),
		fpPair(config.CheckSelectableFields, func(t *testing.T, variant int) (*apiextv1.CustomResourceDefinition, *apiextv1.CustomResourceDefinition) {
			old, new := enginetest.CRDWithField(t, "{type: string}"), enginetest.CRDWithField(t, "{type: string}")
			old.Spec.Versions[0].SelectableFields = []apiextv1.SelectableField{{JSONPath: []string{".spec.x", ".metadata.name"}[variant]}}
			return old, new
		}),
		{check: config.CheckCRDDeletion, run: func(t *testing.T, variant int, cfg *config.Settings) []finding.Finding {
			// The one call of a replace (a removal, variant 0) of a CRD with
			// two objects.
			crd := enginetest.CRDWithField(t, "{type: string}")
			fs, err := Judge(context.Background(), Pair{Old: crd,
				Deletion: &Deletion{Objects: 2, Cause: []string{"", "update strategy always-replace"}[variant]}}, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			return fs
		}},
		{check: config.CheckConversionOrdering, run: func(t *testing.T, variant int, cfg *config.Settings) []finding.Finding {
			// v1 and v2 behind a conversion webhook; the update moves the
			// storage version to v2; the workloads differ.
			crd := func(storeV2 bool) *apiextv1.CustomResourceDefinition {
				c := enginetest.CRDWithField(t, "{type: string}")
				v2 := *c.Spec.Versions[0].DeepCopy()
				v2.Name = "v2"
				c.Spec.Versions = append(c.Spec.Versions, v2)
				c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = !storeV2, storeV2
				c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
					Webhook: &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
						ClientConfig: &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "conv", Name: "webhook"}}}}
				return c
			}
			o := &finding.ConversionOrdering{Service: "conv/webhook", Group: "g/" + enginetest.TestCRDName,
				Workloads: []finding.OrderedWorkload{{Kind: "Deployment", Namespace: "conv", Name: []string{"operator", "webhook"}[variant]}}}
			fs, err := Judge(context.Background(), Pair{Old: crd(false), New: crd(true), Ordering: o}, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			return fs
		}},
	}

	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.check] = true
		t.Run(tc.check, func(t *testing.T) {
			find := func(fs []finding.Finding) *finding.Finding {
				t.Helper()
				var out *finding.Finding
				for i := range fs {
					if fs[i].Check == tc.check {
						if out != nil {
							t.Fatalf("two %s findings: %s; %s", tc.check, fs[i].ChangeText, out.ChangeText)
						}
						out = &fs[i]
					}
				}
				if out == nil {
					t.Fatalf("no %s finding among %q", tc.check, enginetest.Render(fs))
				}
				return out
			}
			cfg := config.Default()
			a, b := find(tc.run(t, 0, &cfg)), find(tc.run(t, 1, &cfg))
			if finding.WaiverSubject(a).Path != finding.WaiverSubject(b).Path || a.Version != b.Version || a.PairVersion != b.PairVersion {
				t.Fatalf("not the same place: %s %s %s; %s %s %s", a.Version, a.PairVersion, finding.WaiverSubject(a).Path, b.Version, b.PairVersion, finding.WaiverSubject(b).Path)
			}
			if a.Fingerprint == b.Fingerprint {
				t.Fatalf("one fingerprint %s for two changes:\n  %s (%+v)\n  %s (%+v)", a.Fingerprint, a.ChangeText, a.Change, b.ChangeText, b.Change)
			}
			// A waiver of the first change's fingerprint matches it, and
			// not the amended one.
			cfg.Waivers = []config.Waiver{{Fingerprint: a.Fingerprint, CRD: enginetest.TestCRDName, Reason: "reviewed", Source: config.SourceSettings}}
			a, b = find(tc.run(t, 0, &cfg)), find(tc.run(t, 1, &cfg))
			if a.Waiver == nil && a.RefusedWaiver == nil {
				t.Fatalf("the waiver of %s does not match the change it was reviewed for", a.Fingerprint)
			}
			if b.Waiver != nil || b.RefusedWaiver != nil {
				t.Fatalf("the waiver of %s matches another change: %s", cfg.Waivers[0].Fingerprint, enginetest.Message(*b))
			}
		})
	}
	for _, id := range config.AllCheckIDs() {
		if !covered[id] && fpFixedContent[id] == "" {
			t.Errorf("check %s: no case of two different changes at one place, and no reason in fpFixedContent", id)
		}
		if covered[id] && fpFixedContent[id] != "" {
			t.Errorf("check %s: both covered and excused", id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(fpFixedContent)) {
		if !slices.Contains(config.AllCheckIDs(), id) {
			t.Errorf("fpFixedContent names %s, no check ID", id)
		}
	}
}

// TestFingerprintHashesWholeValues: values are bounded for display only,
// after the fingerprint hashed them whole: two defaults (or enum
// removals) that differ only beyond what a finding displays have
// different fingerprints.
func TestFingerprintHashesWholeValues(t *testing.T) {
	long := func(mid string) string { return strings.Repeat("a", 3000) + mid + strings.Repeat("z", 3000) }
	for _, tc := range []struct{ check, old, new1, new2 string }{
		{config.CheckDefault, "{type: string, default: x}", "{type: string, default: " + long("1") + "}", "{type: string, default: " + long("2") + "}"},
		{config.CheckEnum, "{type: string, enum: [" + long("1") + ", " + long("2") + ", x]}",
			"{type: string, enum: [" + long("2") + ", x]}", "{type: string, enum: [" + long("1") + ", x]}"},
	} {
		t.Run(tc.check, func(t *testing.T) {
			a := Compare(enginetest.CRDWithField(t, tc.old), enginetest.CRDWithField(t, tc.new1), nil)
			b := Compare(enginetest.CRDWithField(t, tc.old), enginetest.CRDWithField(t, tc.new2), nil)
			if len(a) != 1 || len(b) != 1 {
				t.Fatalf("want one finding each, got %q and %q", enginetest.Render(a), enginetest.Render(b))
			}
			if a[0].Fingerprint == b[0].Fingerprint {
				t.Fatalf("one fingerprint %s for two values that differ beyond the display bound", a[0].Fingerprint)
			}
			for _, f := range []finding.Finding{a[0], b[0]} {
				if len(f.Change.Old) > finding.MaxMessageBytes || len(f.Change.New) > finding.MaxMessageBytes {
					t.Fatalf("the displayed change is not bounded: %d, %d bytes", len(f.Change.Old), len(f.Change.New))
				}
			}
		})
	}
}
