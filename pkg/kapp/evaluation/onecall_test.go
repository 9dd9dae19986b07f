package evaluation_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// examplePair is examples/crd-upgrade's unsafe release (crd-v1.yaml ->
// crd-v3-unsafe.yaml) with widgets.yaml as the stored objects.
func examplePair(t *testing.T) evaluation.Pair {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile("../../../examples/crd-upgrade/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	p := evaluation.Pair{Old: testcrd.MustCRD(t, read("crd-v1.yaml")), New: testcrd.MustCRD(t, read("crd-v3-unsafe.yaml"))}
	for _, doc := range strings.Split(read("widgets.yaml"), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		p.Samples = append(p.Samples, obj)
	}
	return p
}

// TestPolicyEntriesPerPair counts the policies one evaluation enters
// (finding.PoliciesMade) for requests that, between them, run every live
// view of a pair (the stored objects, the dry run, a replace's and a
// removal's count, managedFields, ownerReferences, conversionOrdering, the
// conversion probe, a status write's trim of storedVersions): the engine's one call per pair
// (crdupgradesafety.Judge) judges each pair, removal or status write in
// one policy, so a view that entered a policy of its own would count
// more. (Before the one call, examples/crd-upgrade with its samples
// entered 5: 2 of them the reader's lists, 1 ApplyImpacts', 1
// StaleWaivers'; before the live views were steps of the call, a pair
// with managedFields and ownerReferences entered 3.)
func TestPolicyEntriesPerPair(t *testing.T) {
	old := func() *apiextv1.CustomResourceDefinition { return testcrd.MustCRD(t, testcrd.OldCRD) }
	// twoVersions serves v1alpha1 beside v1 (stored); old() removes it.
	twoVersions := func() *apiextv1.CustomResourceDefinition {
		crd := old()
		alpha := *crd.Spec.Versions[0].DeepCopy()
		alpha.Name, alpha.Storage = "v1alpha1", false
		crd.Spec.Versions = append([]apiextv1.CustomResourceDefinitionVersion{alpha}, crd.Spec.Versions...)
		return crd
	}
	sent := func(crd *apiextv1.CustomResourceDefinition) *unstructured.Unstructured {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: obj}
	}
	dryRun := evaluation.Pair{Old: old(), New: testcrd.MustCRD(t, testcrd.SafeCRD)}
	dryRun.Old.ResourceVersion = "42"
	dryRun.Send = sent(dryRun.New)
	dryRun.Send.SetResourceVersion("42")
	// conversionOrdering: v1 and v2 behind a conversion webhook, the
	// update moves the storage version to v2 while the change set rolls
	// out the webhook's Deployment unordered.
	conv := func(storeV2 bool) *apiextv1.CustomResourceDefinition {
		c := old()
		v2 := *c.Spec.Versions[0].DeepCopy()
		v2.Name = "v2"
		c.Spec.Versions = append(c.Spec.Versions, v2)
		c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = !storeV2, storeV2
		c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
			Webhook: &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
				ClientConfig: &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "conv", Name: "webhook"}}}}
		return c
	}
	ordered := evaluation.Pair{Old: conv(false), New: conv(true), Ordering: &finding.ConversionOrdering{Service: "conv/webhook",
		Group: "g/widgets.example.com", Workloads: []finding.OrderedWorkload{{Kind: "Deployment", Namespace: "conv", Name: "webhook"}}}}
	replace := evaluation.Pair{Old: old(), New: testcrd.MustCRD(t, testcrd.SafeCRD), Strategy: evaluation.StrategyAlwaysReplace}
	// Every live check (finding.RunsLive) is run by a case below: a live
	// view added without one fails here.
	viewed := map[string]bool{}
	defer func() {
		for _, d := range finding.Descriptors() {
			for _, id := range d.IDs {
				if d.Runs == finding.RunsLive && !viewed[id] {
					t.Errorf("the live check %s runs in no case: add a request that runs it", id)
				}
			}
		}
	}()

	for _, tc := range []struct {
		name    string
		plan    evaluation.Plan
		live    bool
		entries int      // pairs and removals of the plan
		checks  []string // a finding of each: the view ran
		views   []string // the live checks it runs, when not named by checks
	}{
		{name: "samples", plan: evaluation.Plan{Pairs: []evaluation.Pair{examplePair(t)}}, entries: 1,
			checks: []string{config.CheckEnum}},
		{name: "stored objects", plan: evaluation.Plan{Pairs: []evaluation.Pair{{Old: old(), New: testcrd.MustCRD(t, testcrd.UnsafeCRD)}}},
			live: true, entries: 1, checks: []string{config.CheckEnum}, views: []string{config.CheckExistingResources}},
		{name: "managedFields and ownerReferences", plan: evaluation.Plan{Pairs: []evaluation.Pair{{Old: twoVersions(), New: old()}}},
			live: true, entries: 1, checks: []string{config.CheckManagedFields, config.CheckOwnerReferences}},
		{name: "dry run", plan: evaluation.Plan{Pairs: []evaluation.Pair{dryRun}}, live: true, entries: 1,
			checks: []string{config.CheckAPIServerRejects}},
		{name: "replace", plan: evaluation.Plan{Pairs: []evaluation.Pair{replace}}, live: true, entries: 1,
			checks: []string{config.CheckCRDDeletion}},
		{name: "removal", plan: evaluation.Plan{Removals: []evaluation.Removal{{CRD: old()}}}, live: true, entries: 1,
			checks: []string{config.CheckCRDDeletion}},
		{name: "removal offline", plan: evaluation.Plan{Removals: []evaluation.Removal{{CRD: old()}}}, entries: 1,
			checks: []string{config.CheckCRDDeletion}},
		// The conversion probe of a webhook whose code ships in the same
		// deploy is deferred (a conversionWebhook warning).
		{name: "conversionOrdering and the conversion probe", plan: evaluation.Plan{Pairs: []evaluation.Pair{ordered}}, live: true, entries: 1,
			checks: []string{config.CheckConversionOrdering, config.CheckConversionWebhook}},
		{name: "every view, one request", plan: evaluation.Plan{Pairs: []evaluation.Pair{{Old: twoVersions(), New: old()}, ordered},
			Removals: []evaluation.Removal{{CRD: old()}}}, live: true, entries: 3,
			checks: []string{config.CheckManagedFields, config.CheckOwnerReferences, config.CheckConversionOrdering, config.CheckConversionWebhook,
				config.CheckCRDDeletion}},
	} {
		for _, id := range append(tc.checks, tc.views...) {
			viewed[id] = true
		}
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			req := evaluation.Request{Plan: tc.plan, Settings: &cfg}
			if tc.live {
				cluster := evaluationtest.LiveCluster(t)
				req.Cluster = func() (evaluation.Cluster, error) { return cluster, nil }
			}
			before := finding.PoliciesMade()
			res, err := evaluation.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			n := finding.PoliciesMade() - before
			t.Logf("%d findings, %d policies entered", len(res.Findings), n)
			for _, check := range tc.checks {
				if !hasCheck(res.Findings, check) {
					t.Errorf("no %s finding: the view did not run", check)
				}
			}
			if n != int64(tc.entries) {
				t.Errorf("%d pairs and removals entered %d policies, want one each (the comparison, the live views, the readers and the judgement share it)", tc.entries, n)
			}
		})
	}

	t.Run("status write", func(t *testing.T) {
		stored := twoVersions()
		stored.Status.StoredVersions = []string{"v1alpha1", "v1"}
		trimmed := stored.DeepCopy()
		trimmed.Status.StoredVersions = []string{"v1"}
		cfg := config.Default()
		before := finding.PoliciesMade()
		v, err := evaluation.JudgeStoredVersions(context.Background(), evaluationtest.LiveCluster(t), stored, trimmed, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !hasCheck(v.Findings, config.CheckStoredVersionRemoval) {
			t.Errorf("no storedVersionRemoval finding for an unproven trim: %+v", v)
		}
		if n := finding.PoliciesMade() - before; n != 1 {
			t.Errorf("a status write entered %d policies, want 1", n)
		}
	})
}

func hasCheck(fs []finding.Finding, check string) bool {
	for _, f := range fs {
		if f.Check == check {
			return true
		}
	}
	return false
}
