package crdupgradesafety

import (
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const testCRDName = "widgets.example.com"

// testVersion is one version of a CRD built by newCRD. spec is the YAML
// schema of the version's .spec property; "" means {type: object}.
type testVersion struct {
	name            string
	served, storage bool
	spec            string
}

// newCRD builds the namespaced CRD widgets.example.com with the given
// versions, each with a root schema of apiVersion, kind, metadata and spec.
func newCRD(t *testing.T, versions ...testVersion) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: testCRDName},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		},
	}
	for _, v := range versions {
		spec := apiextv1.JSONSchemaProps{Type: "object"}
		if v.spec != "" {
			spec = apiextv1.JSONSchemaProps{}
			if err := yaml.Unmarshal([]byte(v.spec), &spec); err != nil {
				t.Fatalf("parsing spec schema %q: %v", v.spec, err)
			}
		}
		crd.Spec.Versions = append(crd.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{
			Name: v.name, Served: v.served, Storage: v.storage,
			Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextv1.JSONSchemaProps{
					"apiVersion": {Type: "string"},
					"kind":       {Type: "string"},
					"metadata":   {Type: "object"},
					"spec":       spec,
				},
			}},
		})
	}
	return crd
}

// with applies edits to a CRD and returns it, for use in case tables.
func with(crd *apiextv1.CustomResourceDefinition, edits ...func(*apiextv1.CustomResourceDefinition)) *apiextv1.CustomResourceDefinition {
	for _, e := range edits {
		e(crd)
	}
	return crd
}

func withScope(s apiextv1.ResourceScope) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) { c.Spec.Scope = s }
}

func withStoredVersions(vs ...string) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) { c.Status.StoredVersions = vs }
}

// trimmedBy records, as the apiserver does in managedFields, that manager
// last wrote status.storedVersions through the status subresource.
func trimmedBy(manager string) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) {
		at := metav1.NewTime(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
		c.ManagedFields = append(c.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apiextensions.k8s.io/v1",
			Time: &at, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:storedVersions":{}}}`),
		})
	}
}

func webhookConversion(c *apiextv1.CustomResourceDefinition) {
	c.Spec.Conversion = &apiextv1.CustomResourceConversion{
		Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &apiextv1.WebhookClientConfig{URL: ptrTo("https://conversion.example.com")},
		},
	}
}

// crdCase compares two whole CRDs; want lists findings as render does.
type crdCase struct {
	name     string
	old, new *apiextv1.CustomResourceDefinition
	config   func(*config.Settings)
	want     []string
}

func runCRDCases(t *testing.T, cases []crdCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertFindings(t, tc.old, tc.new, tc.config, tc.want) })
	}
}

func TestCRDChecks(t *testing.T) {
	v1 := testVersion{"v1", true, true, ""}
	v1NotStored := testVersion{"v1", true, false, ""}
	v1Unserved := testVersion{"v1", false, false, ""}
	v2 := testVersion{"v2", true, true, ""}
	v2NotStored := testVersion{"v2", true, false, ""}
	v3 := testVersion{"v3", true, false, ""}

	runCRDCases(t, []crdCase{
		{name: "identical", old: newCRD(t, v1), new: newCRD(t, v1), want: []string{}},

		// scope
		{name: "scope Namespaced -> Cluster", old: newCRD(t, v1), new: with(newCRD(t, v1), withScope(apiextv1.ClusterScoped)),
			want: []string{"error scope  : scope changed: Namespaced -> Cluster"}},
		{name: "scope Cluster -> Namespaced", old: with(newCRD(t, v1), withScope(apiextv1.ClusterScoped)), new: newCRD(t, v1),
			want: []string{"error scope  : scope changed: Cluster -> Namespaced"}},
		{name: "scope disabled", old: newCRD(t, v1), new: with(newCRD(t, v1), withScope(apiextv1.ClusterScoped)),
			config: func(c *config.Settings) { c.Checks.CRD.Scope.Enabled = false },
			want:   []string{}},

		// storedVersionRemoval, offline: the old storage version counts as stored.
		{name: "offline storage version removed", old: newCRD(t, v1NotStored, v2), new: newCRD(t, v1NotStored, v3, testVersion{"v4", true, true, ""}),
			want: []string{"error storedVersionRemoval v2 : data loss: stored version \"v2\" removed: objects stored in it must be migrated first",
				"error servedVersionRemoval v2 : served version \"v2\" removed without first being set served: false",
				// versionLifecycle: a finding of its own (docs/checks.md#versionlifecycle).
				`warning versionLifecycle v2 : served version "v2" removed without a release that marked it deprecated: true`}},
		{name: "offline: unserved storage version removed is still a stored version removal", old: newCRD(t, testVersion{"v1", false, true, ""}, v2NotStored), new: newCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed: objects stored in it must be migrated first"}},
		// storedVersionRemoval, live: status.storedVersions decides.
		{name: "live stored version removed although it is no longer the storage version",
			old:  with(newCRD(t, v1Unserved, v2), withStoredVersions("v1", "v2")),
			new:  newCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed: objects stored in it must be migrated first"}},
		{name: "stored version removed while the cluster's migrator runs: the finding names the migration",
			old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v1", "v2"), func(c *apiextv1.CustomResourceDefinition) {
				c.Status.Conditions = append(c.Status.Conditions, apiextv1.CustomResourceDefinitionCondition{
					Type: apiextv1.StorageMigrating, Status: apiextv1.ConditionTrue, Reason: "MigrationRunning",
					Message: "Migration widgets.example.com-x7k2p is running"})
			}),
			new: newCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed while a storage version migration is running " +
				"(Migration widgets.example.com-x7k2p is running)"}},
		{name: "stored version removed, new CRD without a storage version: the command without --to",
			old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v1", "v2")), new: newCRD(t, v2NotStored),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed: objects stored in it must be migrated first"}},
		{name: "live version not in storedVersions removed", old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2")), new: newCRD(t, v2),
			want: []string{}},
		// A version trimmed from status.storedVersions: by hand (no
		// evidence) it may still hold objects; by the migrate command
		// (its record) or the cluster's migrator it does not.
		{name: "live version trimmed by hand from storedVersions, then removed",
			old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2"), trimmedBy("kubectl-patch")), new: newCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: version \"v1\" removed after status.storedVersions was trimmed " +
				"by kubectl-patch at 2026-11-20T10:00:00Z with no completed migration on record: objects may still be stored in it"}},
		{name: "live version trimmed by the cluster's migrator, then removed",
			old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2"), trimmedBy(storedversions.MigratorFieldManager)), new: newCRD(t, v2),
			want: []string{}},
		{name: "live version trimmed by the migrate command (its record), then removed",
			old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2"), trimmedBy("kapp"), func(c *apiextv1.CustomResourceDefinition) {
				c.Generation = 1
				c.Annotations = storedversions.Record{Version: "v2", Generation: 1}.Annotations()
			}), new: newCRD(t, v2),
			want: []string{}},
		// The record counts only at the generation it names: storage
		// moved to v1 and back since (generation 1 -> 4), and objects
		// written meanwhile may be stored in v1.
		{name: "live version trimmed by hand after the migrate command's record of an earlier generation",
			old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2"), trimmedBy("kubectl-patch"), func(c *apiextv1.CustomResourceDefinition) {
				c.Generation = 4
				c.Annotations = storedversions.Record{Version: "v2", Generation: 1}.Annotations()
			}), new: newCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: version \"v1\" removed after status.storedVersions was trimmed " +
				"by kubectl-patch at 2026-11-20T10:00:00Z with no completed migration on record: objects may still be stored in it"}},
		{name: "live version trimmed by hand after the migrate command's record of another version",
			old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2"), trimmedBy("kubectl-patch"), func(c *apiextv1.CustomResourceDefinition) {
				c.Annotations = storedversions.Record{Version: "v1", Generation: 1}.Annotations()
			}), new: newCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: version \"v1\" removed after status.storedVersions was trimmed " +
				"by kubectl-patch at 2026-11-20T10:00:00Z with no completed migration on record: objects may still be stored in it"}},
		{name: "live version trimmed by hand but kept", old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2"), trimmedBy("kubectl-patch")),
			new: newCRD(t, v1Unserved, v2), want: []string{}},
		{name: "storedVersionRemoval disabled", old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v1", "v2")), new: newCRD(t, v2),
			config: func(c *config.Settings) { c.Checks.CRD.StoredVersionRemoval.Enabled = false },
			want:   []string{}},

		// servedVersionRemoval
		{name: "served version removed", old: with(newCRD(t, v1NotStored, v2), withStoredVersions("v2")), new: newCRD(t, v2),
			want: []string{"error servedVersionRemoval v1 : served version \"v1\" removed without first being set served: false", `warning versionLifecycle v1 : served version "v1" removed without a release that marked it deprecated: true`}},
		{name: "version first set served: false, then removed",
			old:  with(newCRD(t, v1Unserved, v2), withStoredVersions("v2")),
			new:  newCRD(t, v2),
			want: []string{}},
		{name: "setting served: false is a warning", old: with(newCRD(t, v1NotStored, v2), withStoredVersions("v2")), new: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2")),
			want: []string{`warning servedVersionRemoval v1 : version "v1" no longer served (served: true -> false): its clients get 404 Not Found`, `warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}},
		{name: "served: false under unservedEnforcement Strict", old: with(newCRD(t, v1NotStored, v2), withStoredVersions("v2")), new: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2")),
			config: func(c *config.Settings) {
				c.Checks.CRD.ServedVersionRemoval.UnservedEnforcement = config.EnforcementStrict
			},
			want: []string{`error servedVersionRemoval v1 : version "v1" no longer served (served: true -> false): its clients get 404 Not Found`, `warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}},
		{name: "served: false under unservedEnforcement None", old: with(newCRD(t, v1NotStored, v2), withStoredVersions("v2")), new: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2")),
			config: func(c *config.Settings) {
				c.Checks.CRD.ServedVersionRemoval.UnservedEnforcement = config.EnforcementNone
			},
			want: []string{`warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}}, // versionLifecycle has a setting of its own
		{name: "served: false with servedVersionRemoval disabled", old: with(newCRD(t, v1NotStored, v2), withStoredVersions("v2")), new: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2")),
			config: func(c *config.Settings) { c.Checks.CRD.ServedVersionRemoval.Enabled = false },
			want:   []string{`warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}},
		{name: "an unserved version removed is not a finding", old: with(newCRD(t, v1Unserved, v2), withStoredVersions("v2")), new: with(newCRD(t, v2), withStoredVersions("v2")),
			want: []string{}},
		{name: "servedVersionRemoval disabled", old: with(newCRD(t, v1NotStored, v2), withStoredVersions("v2")), new: newCRD(t, v2),
			config: func(c *config.Settings) { c.Checks.CRD.ServedVersionRemoval.Enabled = false },
			want:   []string{`warning versionLifecycle v1 : served version "v1" removed without a release that marked it deprecated: true`}},

		// A new version added with no modifications to existing versions (OLM allowed list).
		{name: "new version added", old: newCRD(t, v1), new: newCRD(t, v1NotStored, v2), want: []string{}},
		{name: "new version added as non-storage", old: newCRD(t, v1), new: newCRD(t, v1, v3), want: []string{}},

		// Never findings at the CRD level.
		{name: "printer columns, short names, categories, labels and annotations",
			old: newCRD(t, v1),
			new: with(newCRD(t, v1), func(c *apiextv1.CustomResourceDefinition) {
				c.Labels = map[string]string{"app": "widgets"}
				c.Annotations = map[string]string{"controller-gen.kubebuilder.io/version": "v0.16.0"}
				c.Spec.Names.ShortNames = []string{"wd"}
				c.Spec.Names.Categories = []string{"all"}
				c.Spec.Versions[0].AdditionalPrinterColumns = []apiextv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}}
			}),
			want: []string{}},
	})
}

// TestStoredVersionsFromOldFileStatus: offline, an old CRD read from a file
// that has status.storedVersions (kubectl get crd -o yaml) is taken at its
// word, as against a cluster: testdata/live-stored-versions is such a file,
// with storedVersions [v1alpha1, v1] and v1 the storage version, and a new
// CRD that removes the unserved v1alpha1. The removal is reported, although
// v1alpha1 is not the old storage version; with the status left out only
// the storage version counts and removing v1alpha1 is not a stored version
// removal. The apiserver's own update validation, which keeps the old
// CRD's status, refuses the update for the same reason.
func TestStoredVersionsFromOldFileStatus(t *testing.T) {
	dir := "testdata/live-stored-versions"
	old := parseCRDStrict(t, dir+"/old.yaml", readFile(t, dir, "old.yaml"))
	new := parseCRDStrict(t, dir+"/new.yaml", readFile(t, dir, "new.yaml"))
	if got := storedVersions(old); len(got) != 2 || got[0] != "v1alpha1" || got[1] != "v1" {
		t.Fatalf("stored versions of the old file: %q", got)
	}
	cfg := config.Default()
	var stored []string
	for _, f := range Compare(old, new, &cfg) {
		if f.Check == config.CheckStoredVersionRemoval {
			stored = append(stored, f.Version)
		}
	}
	if len(stored) != 1 || stored[0] != "v1alpha1" {
		t.Errorf("storedVersionRemoval findings for versions %q, want [v1alpha1]", stored)
	}
	refused := false
	for _, e := range ValidateCRD(t.Context(), old, new) {
		refused = refused || e.Field == "status.storedVersions[0]"
	}
	if !refused {
		t.Errorf("the apiserver accepts the update: %v", ValidateCRD(t.Context(), old, new))
	}

	withoutStatus := old.DeepCopy()
	withoutStatus.Status = apiextv1.CustomResourceDefinitionStatus{}
	for _, f := range Compare(withoutStatus, new, &cfg) {
		if f.Check == config.CheckStoredVersionRemoval {
			t.Errorf("without status: %s", testMessage(f))
		}
	}
}
