package preflight

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestConversionAtApplyTime: a deploy that ships the conversion webhook's
// new code and the CRD that needs it, kapp ordering the workload first
// (examples/conversion-ordering, ordered by the remedy's annotations). The
// preflight's probe can only ask the code running now (here: nothing
// answers the Service, as before a first conversion webhook's rollout), so
// its verdict is the apply-time one: a warning naming the workloads and the
// admission webhook that judges the conversion when kapp updates the CRD;
// without that admission webhook, failMode conversionUnverified decides.
// When the workload does not change in this deploy (or is not ordered
// before the CRD), the running code is the code: the probe runs, and a
// webhook that does not answer is "conversion not verified".
func TestConversionAtApplyTime(t *testing.T) {
	crd1 := func() []ctlres.Resource { return exampleResources(t, "release-1/crd.yaml", true) }
	op1 := func() []ctlres.Resource { return exampleResources(t, "release-1/operator.yaml", true) }
	crd2 := func() []ctlres.Resource { return exampleResources(t, "release-2/crd.yaml", false) }
	op2 := func() []ctlres.Resource { return exampleResources(t, "release-2/operator.yaml", false) }
	ordered := func(crd, op []ctlres.Resource) []ctlres.Resource {
		return concat(edit(crd, "CustomResourceDefinition", "", annotate(ruleKey, gizmoRuleValue)),
			edit(op, "Deployment", "", annotate(groupKey, gizmoGroup)))
	}
	toURL := func(obj map[string]any) {
		cc := obj["spec"].(map[string]any)["conversion"].(map[string]any)["webhook"].(map[string]any)["clientConfig"].(map[string]any)
		delete(cc, "service")
		cc["url"] = "https://127.0.0.1:1/convert" // nothing listens
	}
	const admission = "crd-upgrade-safety"
	open := map[string]any{"failMode": "open"}
	applyTime := "[conversionWebhook] conversion judged at apply time: the new conversion code ships in this deploy (" + gizmoOperator +
		", rolled out before the CRD changes), so the conversion webhook answering now is not the code to judge; " +
		"the admission webhook (ValidatingWebhookConfiguration crd-upgrade-safety) probes the stored Gizmos through it when kapp updates the CRD"
	nothing := "[conversionWebhook] conversion not verified: the new conversion code ships in this deploy (" + gizmoOperator +
		", rolled out before the CRD changes), and no admission webhook of crd-upgrade-safety is registered for CRD updates to probe it then"
	notVerified := "[conversionWebhook] conversion not verified: the conversion webhook the new CRD names"

	cases := []struct {
		name          string
		existing, new []ctlres.Resource
		admission     string // the admission webhook registered ("" none)
		count         *int   // the objects stored (nil: 2)
		config        map[string]any
		errors        []string // substrings of the error findings' lines (one each)
		warnings      []string // substrings of the printed lines (one each)
		// marked: the dry run of the CRD update carries the apply-time
		// mark for the admission webhook (evaluation.ApplyTimeAnnotation).
		marked bool
	}{
		{name: "ordered, the admission webhook installed: the apply-time warning",
			existing: concat(crd1(), op1()), new: ordered(crd2(), op2()), admission: admission,
			warnings: []string{applyTime}, marked: true},
		{name: "ordered, no admission webhook: failMode closed blocks, saying nothing verifies it",
			existing: concat(crd1(), op1()), new: ordered(crd2(), op2()),
			errors: []string{nothing + " (failMode closed)"}},
		{name: "ordered, no admission webhook, failMode open: a warning",
			existing: concat(crd1(), op1()), new: ordered(crd2(), op2()), config: open,
			warnings: []string{nothing + " (failMode open)"}},
		{name: "the workload does not change in this deploy: the running code is the code, probed",
			existing: concat(crd1(), op1()), admission: admission,
			new:    concat(edit(crd2(), "CustomResourceDefinition", "", annotate(ruleKey, gizmoRuleValue)), exampleResources(t, "release-1/operator.yaml", false)),
			errors: []string{notVerified}},
		{name: "the workload changes but is not ordered: conversionOrdering, and the probe of the running code",
			existing: concat(crd1(), op1()), new: concat(crd2(), op2()), admission: admission,
			errors: []string{notVerified, "[conversionOrdering]"}},
		{name: "a url webhook: a changed workload the CRD's change waits for counts",
			existing: concat(crd1(), op1()), new: ordered(edit(crd2(), "CustomResourceDefinition", "", toURL), op2()), admission: admission,
			warnings: []string{applyTime}, marked: true},
		{name: "no object stored: nothing to convert, no verdict",
			existing: concat(crd1(), op1()), new: ordered(crd2(), op2()), count: ptr(0)},
		{name: "a url webhook, the CRD waiting for no workload: probed",
			existing: concat(crd1(), op1()), new: concat(edit(crd2(), "CustomResourceDefinition", "", toURL), op2()), admission: admission,
			errors: []string{notVerified}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			graph := deployGraph(t, "", tc.existing, tc.new)
			crds := existingCRDs(t, tc.existing)
			cluster := &applyTimeCluster{serviceCluster: serviceCluster{
				Cluster: &evaluationtest.Cluster{Validates: true, CRDs: crds, Services: map[string]http.Handler{}, Count: 2,
					Objs: []map[string]any{gizmo("a"), gizmo("b")}},
				services: existingServiceSelectors(t, tc.existing), reads: []string{}}, admission: tc.admission}
			if tc.count != nil {
				cluster.Count = *tc.count
			}
			out := &bytes.Buffer{}
			check := NewCRDUpgradeSafety(ui.NewWriterUI(out, out, ui.NewNoopLogger()),
				func() (evaluation.Cluster, error) { return cluster, nil }, true)
			require.NoError(t, check.SetConfig(tc.config))
			err := check.Run(context.Background(), graph)
			if len(tc.errors) == 0 {
				require.NoError(t, err, "printed: %s", out)
			} else {
				var unsafe *report.DeployError
				require.ErrorAs(t, err, &unsafe, "printed: %s", out)
				lines := unsafe.Lines()
				require.Len(t, lines, len(tc.errors), "error findings: %q", lines)
				for _, want := range tc.errors {
					require.True(t, containsAny(lines, want), "%q\nnot in %q", want, lines)
				}
			}
			require.Len(t, cluster.DryRuns, 1)
			mark := evaluation.ApplyTimeMark(mustCRD(t, cluster.DryRuns[0].Obj))
			if tc.marked {
				require.NotNil(t, mark, "the dry run carries the apply-time mark")
				require.Equal(t, admission, mark.AdmissionWebhook)
				require.Equal(t, gizmoOperator, mark.Shipped()[0].Ref())
			} else {
				require.Nil(t, mark, "the dry run carries no mark")
			}
			lines := nonEmptyLines(out.String())
			require.Len(t, lines, len(tc.warnings), "printed: %q", lines)
			for i, want := range tc.warnings {
				require.Contains(t, lines[i], want)
			}
		})
	}
}

func mustCRD(t *testing.T, obj *unstructured.Unstructured) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextv1.CustomResourceDefinition{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd))
	return crd
}

func containsAny(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// gizmo is a Gizmo stored at v1.
func gizmo(name string) map[string]any {
	return map[string]any{"apiVersion": "ordering.example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name},
		"spec":     map[string]any{"colour": "red"}}
}

// applyTimeCluster is a serviceCluster that says which admission webhook of
// crd-upgrade-safety is registered for CRD updates (AdmissionWebhookFinder).
type applyTimeCluster struct {
	serviceCluster
	admission string
}

func (c *applyTimeCluster) CRDAdmissionWebhook(context.Context) (string, error) {
	return c.admission, nil
}

func ptr[T any](v T) *T { return &v }
