package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

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
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}
	v1NotStored := enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: ""}
	v1Unserved := enginetest.TestVersion{Name: "v1", Served: false, Storage: false, Spec: ""}
	v2 := enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: ""}
	v2NotStored := enginetest.TestVersion{Name: "v2", Served: true, Storage: false, Spec: ""}
	v3 := enginetest.TestVersion{Name: "v3", Served: true, Storage: false, Spec: ""}

	runCRDCases(t, []crdCase{
		{name: "identical", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1), want: []string{}},

		// scope
		{name: "scope Namespaced -> Cluster", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1), enginetest.WithScope(apiextv1.ClusterScoped)),
			want: []string{"error scope  : scope changed: Namespaced -> Cluster"}},
		{name: "scope Cluster -> Namespaced", old: enginetest.With(enginetest.NewCRD(t, v1), enginetest.WithScope(apiextv1.ClusterScoped)), new: enginetest.NewCRD(t, v1),
			want: []string{"error scope  : scope changed: Cluster -> Namespaced"}},
		{name: "scope disabled", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1), enginetest.WithScope(apiextv1.ClusterScoped)),
			config: func(c *config.Settings) { c.Checks.CRD.Scope.Enabled = false },
			want:   []string{}},

		// storedVersionRemoval, offline: the old storage version counts as stored.
		{name: "offline storage version removed", old: enginetest.NewCRD(t, v1NotStored, v2), new: enginetest.NewCRD(t, v1NotStored, v3, enginetest.TestVersion{Name: "v4", Served: true, Storage: true, Spec: ""}),
			want: []string{"error storedVersionRemoval v2 : data loss: stored version \"v2\" removed: objects stored in it must be migrated first",
				"error servedVersionRemoval v2 : served version \"v2\" removed without first being set served: false",
				// versionLifecycle: a finding of its own (docs/checks.md#versionlifecycle).
				`warning versionLifecycle v2 : served version "v2" removed without a release that marked it deprecated: true`}},
		{name: "offline: unserved storage version removed is still a stored version removal", old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: false, Storage: true, Spec: ""}, v2NotStored), new: enginetest.NewCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed: objects stored in it must be migrated first"}},
		// storedVersionRemoval, live: status.storedVersions decides.
		{name: "live stored version removed although it is no longer the storage version",
			old:  enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v1", "v2")),
			new:  enginetest.NewCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed: objects stored in it must be migrated first"}},
		{name: "stored version removed while the cluster's migrator runs: the finding names the migration",
			old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v1", "v2"), func(c *apiextv1.CustomResourceDefinition) {
				c.Status.Conditions = append(c.Status.Conditions, apiextv1.CustomResourceDefinitionCondition{
					Type: apiextv1.StorageMigrating, Status: apiextv1.ConditionTrue, Reason: "MigrationRunning",
					Message: "Migration widgets.example.com-x7k2p is running"})
			}),
			new: enginetest.NewCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed while a storage version migration is running " +
				"(Migration widgets.example.com-x7k2p is running)"}},
		{name: "stored version removed, new CRD without a storage version: the command without --to",
			old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v1", "v2")), new: enginetest.NewCRD(t, v2NotStored),
			want: []string{"error storedVersionRemoval v1 : data loss: stored version \"v1\" removed: objects stored in it must be migrated first"}},
		{name: "live version not in storedVersions removed", old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2")), new: enginetest.NewCRD(t, v2),
			want: []string{}},
		// A version trimmed from status.storedVersions: by hand (no
		// evidence) it may still hold objects; by the migrate command
		// (its record) or the cluster's migrator it does not.
		{name: "live version trimmed by hand from storedVersions, then removed",
			old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2"), enginetest.TrimmedBy("kubectl-patch")), new: enginetest.NewCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: version \"v1\" removed after status.storedVersions was trimmed " +
				"by kubectl-patch at 2026-11-20T10:00:00Z with no completed migration on record: objects may still be stored in it"}},
		{name: "live version trimmed by the cluster's migrator, then removed",
			old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2"), enginetest.TrimmedBy(storedversions.MigratorFieldManager)), new: enginetest.NewCRD(t, v2),
			want: []string{}},
		{name: "live version trimmed by the migrate command (its record), then removed",
			old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2"), enginetest.TrimmedBy("kapp"), func(c *apiextv1.CustomResourceDefinition) {
				c.Generation = 1
				c.Annotations = storedversions.Record{Version: "v2", Generation: 1}.Annotations()
			}), new: enginetest.NewCRD(t, v2),
			want: []string{}},
		// The record counts only at the generation it names: storage
		// moved to v1 and back since (generation 1 -> 4), and objects
		// written meanwhile may be stored in v1.
		{name: "live version trimmed by hand after the migrate command's record of an earlier generation",
			old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2"), enginetest.TrimmedBy("kubectl-patch"), func(c *apiextv1.CustomResourceDefinition) {
				c.Generation = 4
				c.Annotations = storedversions.Record{Version: "v2", Generation: 1}.Annotations()
			}), new: enginetest.NewCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: version \"v1\" removed after status.storedVersions was trimmed " +
				"by kubectl-patch at 2026-11-20T10:00:00Z with no completed migration on record: objects may still be stored in it"}},
		{name: "live version trimmed by hand after the migrate command's record of another version",
			old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2"), enginetest.TrimmedBy("kubectl-patch"), func(c *apiextv1.CustomResourceDefinition) {
				c.Annotations = storedversions.Record{Version: "v1", Generation: 1}.Annotations()
			}), new: enginetest.NewCRD(t, v2),
			want: []string{"error storedVersionRemoval v1 : data loss: version \"v1\" removed after status.storedVersions was trimmed " +
				"by kubectl-patch at 2026-11-20T10:00:00Z with no completed migration on record: objects may still be stored in it"}},
		{name: "live version trimmed by hand but kept", old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2"), enginetest.TrimmedBy("kubectl-patch")),
			new: enginetest.NewCRD(t, v1Unserved, v2), want: []string{}},
		{name: "storedVersionRemoval disabled", old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v1", "v2")), new: enginetest.NewCRD(t, v2),
			config: func(c *config.Settings) { c.Checks.CRD.StoredVersionRemoval.Enabled = false },
			want:   []string{}},

		// servedVersionRemoval
		{name: "served version removed", old: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2), enginetest.WithStoredVersions("v2")), new: enginetest.NewCRD(t, v2),
			want: []string{"error servedVersionRemoval v1 : served version \"v1\" removed without first being set served: false", `warning versionLifecycle v1 : served version "v1" removed without a release that marked it deprecated: true`}},
		{name: "version first set served: false, then removed",
			old:  enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2")),
			new:  enginetest.NewCRD(t, v2),
			want: []string{}},
		{name: "setting served: false is a warning", old: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2), enginetest.WithStoredVersions("v2")), new: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2")),
			want: []string{`warning servedVersionRemoval v1 : version "v1" no longer served (served: true -> false): its clients get 404 Not Found`, `warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}},
		{name: "served: false under unservedEnforcement Strict", old: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2), enginetest.WithStoredVersions("v2")), new: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2")),
			config: func(c *config.Settings) {
				c.Checks.CRD.ServedVersionRemoval.UnservedEnforcement = config.EnforcementStrict
			},
			want: []string{`error servedVersionRemoval v1 : version "v1" no longer served (served: true -> false): its clients get 404 Not Found`, `warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}},
		{name: "served: false under unservedEnforcement None", old: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2), enginetest.WithStoredVersions("v2")), new: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2")),
			config: func(c *config.Settings) {
				c.Checks.CRD.ServedVersionRemoval.UnservedEnforcement = config.EnforcementNone
			},
			want: []string{`warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}}, // versionLifecycle has a setting of its own
		{name: "served: false with servedVersionRemoval disabled", old: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2), enginetest.WithStoredVersions("v2")), new: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2")),
			config: func(c *config.Settings) { c.Checks.CRD.ServedVersionRemoval.Enabled = false },
			want:   []string{`warning versionLifecycle v1 : version "v1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`}},
		{name: "an unserved version removed is not a finding", old: enginetest.With(enginetest.NewCRD(t, v1Unserved, v2), enginetest.WithStoredVersions("v2")), new: enginetest.With(enginetest.NewCRD(t, v2), enginetest.WithStoredVersions("v2")),
			want: []string{}},
		{name: "servedVersionRemoval disabled", old: enginetest.With(enginetest.NewCRD(t, v1NotStored, v2), enginetest.WithStoredVersions("v2")), new: enginetest.NewCRD(t, v2),
			config: func(c *config.Settings) { c.Checks.CRD.ServedVersionRemoval.Enabled = false },
			want:   []string{`warning versionLifecycle v1 : served version "v1" removed without a release that marked it deprecated: true`}},

		// A new version added with no modifications to existing versions (OLM allowed list).
		{name: "new version added", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1NotStored, v2), want: []string{}},
		{name: "new version added as non-storage", old: enginetest.NewCRD(t, v1), new: enginetest.NewCRD(t, v1, v3), want: []string{}},

		// Never findings at the CRD level.
		{name: "printer columns, short names, categories, labels and annotations",
			old: enginetest.NewCRD(t, v1),
			new: enginetest.With(enginetest.NewCRD(t, v1), func(c *apiextv1.CustomResourceDefinition) {
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
	dir := "../testdata/live-stored-versions" // a golden case of the engine
	old := enginetest.ParseCRDStrict(t, dir+"/old.yaml", enginetest.ReadFile(t, dir, "old.yaml"))
	new := enginetest.ParseCRDStrict(t, dir+"/new.yaml", enginetest.ReadFile(t, dir, "new.yaml"))
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
	for _, e := range apivalidation.ValidateCRD(t.Context(), old, new) {
		refused = refused || e.Field == "status.storedVersions[0]"
	}
	if !refused {
		t.Errorf("the apiserver accepts the update: %v", apivalidation.ValidateCRD(t.Context(), old, new))
	}

	withoutStatus := old.DeepCopy()
	withoutStatus.Status = apiextv1.CustomResourceDefinitionStatus{}
	for _, f := range Compare(withoutStatus, new, &cfg) {
		if f.Check == config.CheckStoredVersionRemoval {
			t.Errorf("without status: %s", enginetest.Message(f))
		}
	}
}
