package evaluationtest

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
)

// LiveCheck is one check that reads the cluster, run through a Cluster: a
// request whose finding (or, for the evidence of a trim, whose pass) only
// the capability the check needs can give. Run through a decorator that
// hides that capability, the check finds something else or fails.
type LiveCheck struct {
	// Check is the check ID; Capability the method of evaluation.Cluster
	// that only it needs here.
	Check, Capability string
	// Run runs the check through cluster (the decorated Cluster) and
	// returns what it found (Summary of each finding of Check), or an
	// evidence line.
	Run func(ctx context.Context, cluster evaluation.Cluster) ([]string, error)
	// Want is what Run returns when every capability reaches the cluster.
	Want []string
}

// Summary is a finding as LiveCheck compares it: severity, check, version,
// field, and the stored objects it affects where it has an impact
// ("cluster 1/2": 1 of 2 objects read live).
func Summary(f finding.Finding) string {
	s := fmt.Sprintf("%s %s %s %s", f.Severity, f.Check, f.Version, f.Field)
	if f.Impact != nil {
		s += fmt.Sprintf(" %s %d/%d", f.Impact.Source, f.Impact.Affected, f.Impact.Objects)
	}
	return strings.Join(strings.Fields(s), " ")
}

// LiveChecks are the checks that read the cluster, one case per check and
// capability: every method of evaluation.Cluster is the capability of at
// least one (TestLiveChecksCoverEveryCapability).
func LiveChecks(t testing.TB) []LiveCheck {
	t.Helper()
	old := func() *apiextv1.CustomResourceDefinition { return testcrd.MustCRD(t, testcrd.OldCRD) }
	// twoVersions serves v1alpha1 beside v1 (stored); the new CRD (OldCRD)
	// removes v1alpha1.
	twoVersions := func() *apiextv1.CustomResourceDefinition {
		crd := old()
		alpha := *crd.Spec.Versions[0].DeepCopy()
		alpha.Name, alpha.Storage = "v1alpha1", false
		crd.Spec.Versions = append([]apiextv1.CustomResourceDefinitionVersion{alpha}, crd.Spec.Versions...)
		return crd
	}
	// run evaluates plan as a deploy does, with the Cluster the request
	// is given, and returns the findings of check.
	run := func(check string, plan evaluation.Plan, setup func(*config.Settings, *evaluation.Request)) func(context.Context, evaluation.Cluster) ([]string, error) {
		return func(ctx context.Context, cluster evaluation.Cluster) ([]string, error) {
			cfg := config.Default()
			req := evaluation.Request{Plan: plan, Settings: &cfg, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }}
			if setup != nil {
				setup(&cfg, &req)
			}
			res, err := evaluation.Run(ctx, req)
			if err != nil {
				return nil, err
			}
			var out []string
			for _, f := range res.Findings {
				if f.Check == check {
					out = append(out, Summary(f))
				}
			}
			return out, nil
		}
	}
	sent := func(crd *apiextv1.CustomResourceDefinition) *unstructured.Unstructured {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: obj}
	}

	// storedVersionRemoval of a deploy: the old side is the live CRD
	// (GetCRDs), whose status.storedVersions hold v1alpha1.
	liveOld := twoVersions()
	liveOld.Status.StoredVersions = []string{"v1alpha1", "v1"}

	// existingResources: a stored object the new CRD rejects (blue is no
	// longer allowed) and one it keeps.
	unsafePair := evaluation.Pair{Old: old(), New: testcrd.MustCRD(t, testcrd.UnsafeCRD)}

	// apiserverRejects: the dry run of the update is denied by a webhook.
	dryRun := evaluation.Pair{Old: old(), New: testcrd.MustCRD(t, testcrd.SafeCRD)}
	dryRun.Old.ResourceVersion = "42"
	dryRun.Send = sent(dryRun.New)
	dryRun.Send.SetResourceVersion("42")

	// The trim of status.storedVersions by the cluster's migrator: the
	// evidence is a StorageVersionMigration (ListStorageVersionMigrations).
	migrating := old()
	migrating.Generation = 3
	migrating.Status.StoredVersions = []string{"v1alpha1", "v1"}
	migrating.Status.Conditions = []apiextv1.CustomResourceDefinitionCondition{{Type: apiextv1.StorageMigrating,
		Status: apiextv1.ConditionTrue, Reason: storedversions.MigratorRunningReason, ObservedGeneration: 3,
		Message: "Migration widgets-x7k2p is running"}}
	trimmed := migrating.DeepCopy()
	trimmed.Status.StoredVersions = []string{"v1"}

	// conversionWebhook: the new CRD stores v2 and converts through a
	// webhook behind a Service (ServiceProxy reaches it) that drops
	// spec.color on the way to v2.
	converted := old()
	v2 := *converted.Spec.Versions[0].DeepCopy()
	v2.Name = "v2"
	converted.Spec.Versions[0].Storage = false
	converted.Spec.Versions = append(converted.Spec.Versions, v2)
	converted.Spec.Conversion = ConversionService("default", "converter")

	return []LiveCheck{
		{
			Check: config.CheckConversionWebhook, Capability: "ServiceProxy",
			Run:  run(config.CheckConversionWebhook, evaluation.Plan{Pairs: []evaluation.Pair{{Old: old(), New: converted}}}, nil),
			Want: []string{"error conversionWebhook v1 ^.spec.color cluster 1/2"},
		},
		{
			Check: config.CheckStoredVersionRemoval, Capability: "GetCRDs",
			Run: run(config.CheckStoredVersionRemoval, evaluation.Plan{Pairs: []evaluation.Pair{{New: old()}}},
				func(_ *config.Settings, req *evaluation.Request) { req.AllOldFromCluster = true }),
			Want: []string{"error storedVersionRemoval v1alpha1"},
		},
		{
			Check: config.CheckExistingResources, Capability: "ListCustomResources",
			Run: run(config.CheckEnum, evaluation.Plan{Pairs: []evaluation.Pair{unsafePair}}, nil),
			// The enum finding with its impact: what the read of the stored
			// objects (existingResources) adds.
			Want: []string{"error enum v1 ^.spec.color cluster 1/2"},
		},
		{
			Check: config.CheckManagedFields, Capability: "ListCustomResources",
			Run:  run(config.CheckManagedFields, evaluation.Plan{Pairs: []evaluation.Pair{{Old: twoVersions(), New: old()}}}, nil),
			Want: []string{"error managedFields v1alpha1 cluster 1/2"},
		},
		{
			Check: config.CheckOwnerReferences, Capability: "DependentsOf",
			Run:  run(config.CheckOwnerReferences, evaluation.Plan{Pairs: []evaluation.Pair{{Old: twoVersions(), New: old()}}}, nil),
			Want: []string{"error ownerReferences v1alpha1 cluster 1/5"},
		},
		{
			Check: config.CheckCRDDeletion, Capability: "CountCustomResources",
			Run:  run(config.CheckCRDDeletion, evaluation.Plan{Removals: []evaluation.Removal{{CRD: old()}}}, nil),
			Want: []string{"error crdDeletion cluster 3/3"},
		},
		{
			Check: config.CheckAPIServerRejects, Capability: "DryRun",
			Run:  run(config.CheckAPIServerRejects, evaluation.Plan{Pairs: []evaluation.Pair{dryRun}}, nil),
			Want: []string{"error apiserverRejects"},
		},
		{
			// A live run judges for the apiserver's version: an int32
			// format is a finding on 1.37 and not on 1.35 (the settings').
			Check: config.CheckFormat, Capability: "ServerVersion",
			Run: run(config.CheckFormat, evaluation.Plan{Pairs: []evaluation.Pair{{Old: old(),
				New: testcrd.MustCRD(t, strings.Replace(testcrd.OldCRD, "size: {type: integer,", "size: {type: integer, format: int32,", 1))}}},
				func(cfg *config.Settings, _ *evaluation.Request) {
					cfg.KubeVersion = config.KubeVersion{Major: 1, Minor: 35}
				}),
			Want: []string{"error format v1 ^.spec.size cluster 1/2"},
		},
		{
			Check: config.CheckStoredVersionRemoval, Capability: "ListStorageVersionMigrations",
			Run: func(ctx context.Context, cluster evaluation.Cluster) ([]string, error) {
				cfg := config.Default()
				v, err := evaluation.JudgeStoredVersions(ctx, cluster, migrating, trimmed, &cfg)
				if err != nil {
					return nil, err
				}
				out := []string{"evidence: " + v.Evidence}
				for _, f := range v.Findings {
					out = append(out, Summary(f))
				}
				return out, nil
			},
			Want: []string{"evidence: StorageVersionMigration widgets-x7k2p succeeded at storage version v1"},
		},
	}
}

// ConversionService is a conversion by the webhook at /convert of the
// Service namespace/name, reviews v1.
func ConversionService(namespace, name string) *apiextv1.CustomResourceConversion {
	path := "/convert"
	return &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter, Webhook: &apiextv1.WebhookConversion{
		ConversionReviewVersions: []string{"v1"},
		ClientConfig:             &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: namespace, Name: name, Path: &path}},
	}}
}

// LiveCluster is the Cluster every LiveCheck runs against: the live CRD of
// the deploy's storedVersionRemoval, two stored Widgets (one blue, one
// with managedFields at v1alpha1 and a size beyond int32), dependents that
// name v1alpha1, three custom resources to count, a webhook that denies
// the dry run, a succeeded StorageVersionMigration, apiserver 1.37.
func LiveCluster(t testing.TB) *Cluster {
	t.Helper()
	live := testcrd.MustCRD(t, testcrd.OldCRD)
	alpha := *live.Spec.Versions[0].DeepCopy()
	alpha.Name, alpha.Storage = "v1alpha1", false
	live.Spec.Versions = append([]apiextv1.CustomResourceDefinitionVersion{alpha}, live.Spec.Versions...)
	live.Status.StoredVersions = []string{"v1alpha1", "v1"}
	dep := Dependent{OwnerKind: "Widget"}
	dep.Resource, dep.Name, dep.OwnerAPIVersion = "configmaps", "default/w1-config", "example.com/v1alpha1"
	svm := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "storagemigration.k8s.io/v1beta1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": "widgets-x7k2p"},
		"spec":     map[string]any{"resource": map[string]any{"group": "example.com", "resource": "widgets"}},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Succeeded", "status": "True"}}},
	}}
	return &Cluster{
		CRDs: map[string]*apiextv1.CustomResourceDefinition{live.Name: live},
		Objs: []map[string]any{
			{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "namespace": "default"},
				"spec": map[string]any{"color": "blue", "size": int64(3_000_000_000)}},
			{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w2", "namespace": "default",
				"managedFields": []any{map[string]any{"manager": "flux", "operation": "Apply", "apiVersion": "example.com/v1alpha1"}}},
				"spec": map[string]any{"size": int64(7)}},
		},
		Dependents:     []Dependent{dep},
		DependentsRead: 5,
		Count:          3,
		DryRunErr:      map[string]error{"update widgets.example.com": WebhookDenial()},
		Migrations:     []unstructured.Unstructured{svm},
		Services:       map[string]http.Handler{"default/converter": &conversiontest.Hook{Lossy: true}},
		Version:        &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2"},
	}
}

// RequireEveryLiveCheck runs every LiveCheck through decorate(a
// LiveCluster) and requires what each finds to be its Want: a decorator
// that hides a capability (answers it itself, drops it) fails the check
// that needs it.
func RequireEveryLiveCheck(t Errorer, checks []LiveCheck, cluster func() *Cluster, decorate func(evaluation.Cluster) evaluation.Cluster) {
	t.Helper()
	for _, lc := range checks {
		got, err := lc.Run(context.Background(), decorate(cluster()))
		if err != nil {
			t.Errorf("%s (%s) through the decorator: %v", lc.Check, lc.Capability, err)
			continue
		}
		if !slices.Equal(got, lc.Want) {
			t.Errorf("%s (%s) through the decorator found %q, want %q", lc.Check, lc.Capability, got, lc.Want)
		}
	}
}

// Capabilities are the methods of evaluation.Cluster, sorted.
func Capabilities() []string {
	iface := reflect.TypeFor[evaluation.Cluster]()
	out := make([]string, 0, iface.NumMethod())
	for i := range iface.NumMethod() {
		out = append(out, iface.Method(i).Name)
	}
	sort.Strings(out)
	return out
}

// Hiding returns a decorator that answers the Cluster method capability
// itself, as a decorator that forgot to forward it would (ErrNotSupported,
// nothing found), and forwards every other method.
func Hiding(capability string) func(evaluation.Cluster) evaluation.Cluster {
	return func(c evaluation.Cluster) evaluation.Cluster { return &hiding{Cluster: c, hide: capability} }
}

type hiding struct {
	evaluation.Cluster
	hide string
}

var errHidden = fmt.Errorf("hidden by the decorator: %w", evaluation.ErrNotSupported)

func (h *hiding) GetCRDs(ctx context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	if h.hide == "GetCRDs" {
		return map[string]*apiextv1.CustomResourceDefinition{}, nil
	}
	return h.Cluster.GetCRDs(ctx, names)
}

func (h *hiding) ListCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string, fn func([]map[string]any) error) error {
	if h.hide == "ListCustomResources" {
		return nil
	}
	return h.Cluster.ListCustomResources(ctx, crd, version, fn)
}

func (h *hiding) CountCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	if h.hide == "CountCustomResources" {
		return 0, nil
	}
	return h.Cluster.CountCustomResources(ctx, crd)
}

func (h *hiding) DryRun(ctx context.Context, verb evaluation.Verb, obj *unstructured.Unstructured) ([]string, error) {
	if h.hide == "DryRun" {
		return nil, nil
	}
	return h.Cluster.DryRun(ctx, verb, obj)
}

func (h *hiding) ServerVersion(ctx context.Context) (*version.Info, error) {
	if h.hide == "ServerVersion" {
		return &version.Info{Major: "1", Minor: "35"}, nil
	}
	return h.Cluster.ServerVersion(ctx)
}

func (h *hiding) DependentsOf(ctx context.Context, apiVersions []string, kind string, fn func(kube.Dependent)) (int, []kube.Skipped, error) {
	if h.hide == "DependentsOf" {
		return 0, nil, errHidden
	}
	return h.Cluster.DependentsOf(ctx, apiVersions, kind, fn)
}

func (h *hiding) ListStorageVersionMigrations(ctx context.Context) ([]unstructured.Unstructured, error) {
	if h.hide == "ListStorageVersionMigrations" {
		return nil, errHidden
	}
	return h.Cluster.ListStorageVersionMigrations(ctx)
}

func (h *hiding) ServiceProxy(ctx context.Context, namespace, name string, port int32, path string) (kube.Poster, error) {
	if h.hide == "ServiceProxy" {
		return nil, errHidden
	}
	return h.Cluster.ServiceProxy(ctx, namespace, name, port, path)
}
