package webhook

import (
	"context"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestReviewConversionAtApplyTime: a kapp deploy's dry run of a CRD
// update whose conversion webhook's new code ships in the same deploy
// carries the apply-time mark (evaluation.ApplyTimeAnnotation): on a dry
// run the webhook takes it, and its verdict is the apply-time warning, not
// the probe of the code answering now (here a lossy one); the same update
// written (the apply, no dry run), or a dry run without the mark, is
// probed and denied.
func TestReviewConversionAtApplyTime(t *testing.T) {
	var objs []map[string]any
	for _, w := range conversiontest.Widgets() {
		objs = append(objs, w.Object)
	}
	update := func(mark, dryRun bool) *admissionv1.AdmissionRequest {
		newCRD := conversiontest.Serve(t, &conversiontest.Hook{Lossy: true})
		old := conversiontest.WidgetsCRD(t)
		u := "https://old-converter.example.com/convert"
		old.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u}
		if mark {
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(newCRD)
			require.NoError(t, err)
			marked, err := evaluation.MarkApplyTime(&unstructured.Unstructured{Object: raw}, &finding.ConversionOrdering{
				URL: u, AdmissionWebhook: "crd-upgrade-safety",
				Workloads: []finding.OrderedWorkload{{Kind: "Deployment", Namespace: "widgets", Name: "converter", Ordered: true}}})
			require.NoError(t, err)
			newCRD.Annotations = marked.GetAnnotations()
		}
		req, err := webhooktest.Request(admissionv1.Update, newCRD, old)
		require.NoError(t, err)
		req.DryRun = &dryRun
		return req
	}
	cases := []struct {
		name         string
		mark, dryRun bool
		allowed      bool
		want         string
	}{
		{name: "marked dry run: the apply-time warning", mark: true, dryRun: true, allowed: true,
			want: "[conversionWebhook] conversion judged at apply time: the new conversion code ships in this deploy (Deployment widgets/converter"},
		{name: "marked write: probed, denied", mark: true, dryRun: false, want: "[conversionWebhook] data loss"},
		{name: "dry run without the mark: probed, denied", mark: false, dryRun: true, want: "[conversionWebhook] data loss"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: objs, Count: len(objs)})
			resp := r.Review(context.Background(), update(tc.mark, tc.dryRun))
			require.Equal(t, tc.allowed, resp.Allowed, resp.Result)
			if tc.allowed {
				require.Len(t, resp.Warnings, 1)
				require.Contains(t, resp.Warnings[0], tc.want)
				return
			}
			require.Contains(t, resp.Result.Message, tc.want)
		})
	}
}
