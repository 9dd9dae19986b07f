package evaluation_test

import (
	"context"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestConversionAtApplyTime: a pair whose Ordering ships the webhook's new
// code (a workload rolled out before the CRD) is not probed (the lossy
// webhook answering now is not the code to judge): one applyTime finding, a
// warning with the admission webhook, failMode's without; no object stored:
// none. A webhook the run names itself (the CI command's URL) and an
// Ordering whose workloads kapp may roll out after the CRD are probed.
func TestConversionAtApplyTime(t *testing.T) {
	shipped := func(admission string, ordered bool) *finding.ConversionOrdering {
		return &finding.ConversionOrdering{URL: "https://converter.example.com/convert", AdmissionWebhook: admission,
			Workloads: []finding.OrderedWorkload{{Kind: "Deployment", Namespace: "widgets", Name: "converter", Ordered: ordered}}}
	}
	cases := []struct {
		name     string
		ordering *finding.ConversionOrdering
		edit     func(*config.Settings, *evaluation.Plan)
		count    int
		want     []string
		kind     string
	}{
		{name: "shipped, the admission webhook installed: a warning", ordering: shipped("crd-upgrade-safety", true), count: 4,
			want: []string{"warning conversionWebhook"}, kind: "applyTime"},
		{name: "shipped, no admission webhook: failMode closed", ordering: shipped("", true), count: 4,
			want: []string{"error conversionWebhook"}, kind: "applyTime"},
		{name: "shipped, no admission webhook, failMode open", ordering: shipped("", true), count: 4,
			edit: func(c *config.Settings, _ *evaluation.Plan) { c.FailMode = config.FailModeOpen },
			want: []string{"warning conversionWebhook"}, kind: "applyTime"},
		{name: "shipped, nothing stored: no verdict", ordering: shipped("", true), count: 0},
		{name: "not ordered before the CRD: probed", ordering: shipped("crd-upgrade-safety", false), count: 4,
			want: []string{"error conversionWebhook v1 ^.spec.color cluster 1/4 dataLoss: ns/a",
				"error conversionWebhook v2 ^.spec.color cluster 2/4 dataLoss: ns/b,ns/d"}},
		{name: "the run names the webhook (CI): probed", ordering: shipped("crd-upgrade-safety", true), count: 4,
			edit: func(_ *config.Settings, p *evaluation.Plan) {
				cc := p.Pairs[0].New.Spec.Conversion.Webhook.ClientConfig
				p.Conversion = evaluation.ConversionProbe{URL: *cc.URL, CABundle: cc.CABundle}
			},
			want: []string{"error conversionWebhook v1 ^.spec.color cluster 1/4 dataLoss: ns/a",
				"error conversionWebhook v2 ^.spec.color cluster 2/4 dataLoss: ns/b,ns/d"}},
		{name: "disabled", ordering: shipped("", true), count: 4,
			edit: func(c *config.Settings, _ *evaluation.Plan) { c.Checks.CRD.ConversionWebhook.Enabled = false }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			newCRD := conversiontest.Serve(t, &conversiontest.Hook{Lossy: true})
			old := conversiontest.WidgetsCRD(t)
			u := "https://old-converter.example.com/convert"
			old.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u}
			cfg := config.Default()
			plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: newCRD, Ordering: tc.ordering}}}
			if tc.edit != nil {
				tc.edit(&cfg, &plan)
			}
			cluster := &evaluationtest.Cluster{Objs: widgetObjects(), Count: tc.count}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
				Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
			require.NoError(t, err)
			require.Equal(t, tc.want, conversionFindings(res))
			for _, f := range res.Findings {
				if f.Check != config.CheckConversionWebhook || tc.kind == "" {
					continue
				}
				require.Equal(t, tc.kind, f.Change.Kind)
				require.Equal(t, "Deployment widgets/converter", f.Change.Old)
				require.Equal(t, tc.ordering.AdmissionWebhook, f.Change.New)
				require.NotNil(t, f.Ordering, "the ordering facts travel with the finding")
				require.Equal(t, finding.RemedyJudgeAtApplyTime, f.Remedy.Action)
			}
		})
	}
}
