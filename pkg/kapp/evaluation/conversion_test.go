package evaluation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// conversionFindings are the conversionWebhook findings of res, as
// summaries with the objects they name.
func conversionFindings(res evaluation.Result) []string {
	var out []string
	for _, f := range res.Findings {
		if f.Check != config.CheckConversionWebhook {
			continue
		}
		s := evaluationtest.Summary(f)
		if f.PairVersion != "" {
			s += " ->" + f.PairVersion
		}
		if f.DataLoss {
			s += " dataLoss"
		}
		if f.Impact != nil {
			var names []string
			for _, e := range f.Impact.Effects {
				for _, ex := range e.Examples {
					names = append(names, ex.Object)
				}
			}
			s += ": " + strings.Join(names, ",")
		}
		out = append(out, s)
	}
	return out
}

func widgetObjects() []map[string]any {
	var out []map[string]any
	for _, w := range conversiontest.Widgets() {
		out = append(out, w.Object)
	}
	return out
}

// An update whose new CRD names a new conversion webhook (a URL, with its
// CA bundle): the stored objects go through it before the update is
// trusted with them.
func TestConversionProbeLive(t *testing.T) {
	cases := []struct {
		name string
		hook conversiontest.Hook
		edit func(*config.Settings, *evaluation.Plan)
		want []string
	}{
		{name: "lossless: passes", hook: conversiontest.Hook{}},
		{name: "lossy: the field and the objects, data loss", hook: conversiontest.Hook{Lossy: true},
			want: []string{
				"error conversionWebhook v1 ^.spec.color cluster 1/4 dataLoss: ns/a",
				"error conversionWebhook v2 ^.spec.color cluster 2/4 dataLoss: ns/b,ns/d",
			}},
		{name: "failing on an object: refused, named", hook: conversiontest.Hook{FailLabel: true},
			want: []string{
				"error conversionWebhook v1 cluster 1/4 ->v2: ns/c",
				"error conversionWebhook v1 cluster 1/4 ->v3: ns/c",
			}},
		{name: "not answering: not verified (failMode closed)", hook: conversiontest.Hook{HttpStatus: 503},
			want: []string{"error conversionWebhook"}},
		{name: "not answering under failMode open: a warning", hook: conversiontest.Hook{HttpStatus: 503},
			edit: func(c *config.Settings, _ *evaluation.Plan) { c.FailMode = config.FailModeOpen },
			want: []string{"warning conversionWebhook"}},
		{name: "a budget: the probe cut short says so", hook: conversiontest.Hook{FailLabel: true},
			edit: func(_ *config.Settings, p *evaluation.Plan) { p.Conversion.MaxObjects = 2 },
			want: []string{"warning conversionWebhook"}},
		{name: "disabled: not probed", hook: conversiontest.Hook{Lossy: true},
			edit: func(c *config.Settings, _ *evaluation.Plan) { c.Checks.CRD.ConversionWebhook.Enabled = false }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			newCRD := conversiontest.Serve(t, &tc.hook)
			old := conversiontest.WidgetsCRD(t)
			u := "https://old-converter.example.com/convert"
			old.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u}
			cfg := config.Default()
			plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: newCRD}}}
			if tc.edit != nil {
				tc.edit(&cfg, &plan)
			}
			cluster := &evaluationtest.Cluster{Objs: widgetObjects()}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
				Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
			require.NoError(t, err)
			require.Equal(t, tc.want, conversionFindings(res))
			for _, f := range res.Findings {
				if f.Check == config.CheckConversionWebhook && f.Change.Kind == "cut" {
					require.Contains(t, f.ChangeText, "2 of 4")
					require.Contains(t, f.ChangeText, "maxObjects 2")
				}
			}
			if tc.want != nil {
				require.Contains(t, cluster.Lists, newCRD.Name+" v2", "the objects are listed at the old storage version")
			}
		})
	}
}

// A schema edit alone is not probed: the conversion trusted with the data
// stays the one it is.
func TestConversionProbeOnlyWhenTheConversionChanges(t *testing.T) {
	newCRD := conversiontest.Serve(t, &conversiontest.Hook{Lossy: true})
	old := newCRD.DeepCopy()
	old.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "before"
	cfg := config.Default()
	cluster := &evaluationtest.Cluster{Objs: widgetObjects()}
	run := func(plan evaluation.Plan) []string {
		res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
			Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
		require.NoError(t, err)
		return conversionFindings(res)
	}
	require.Empty(t, run(evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: newCRD}}}))
	// The CI command's webhook (a URL) is probed whatever changed.
	other := conversiontest.Serve(t, &conversiontest.Hook{Lossy: true})
	plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: old.DeepCopy()}},
		Conversion: evaluation.ConversionProbe{URL: *other.Spec.Conversion.Webhook.ClientConfig.URL,
			CABundle: other.Spec.Conversion.Webhook.ClientConfig.CABundle}}
	require.Len(t, run(plan), 2)
}

// Offline, the --objects samples go through the webhook the run names
// (ConversionProbe.URL); without it nothing is probed.
func TestConversionProbeSamples(t *testing.T) {
	served := conversiontest.Serve(t, &conversiontest.Hook{Lossy: true})
	cc := served.Spec.Conversion.Webhook.ClientConfig
	newCRD := conversiontest.WidgetsCRD(t)
	old := newCRD.DeepCopy()
	cfg := config.Default()
	run := func(probe evaluation.ConversionProbe) []string {
		plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: newCRD, Samples: widgetObjects()}}, Conversion: probe}
		res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg})
		require.NoError(t, err)
		return conversionFindings(res)
	}
	require.Empty(t, run(evaluation.ConversionProbe{}))
	require.Equal(t, []string{
		"error conversionWebhook v1 ^.spec.color samples 1/4 dataLoss: ns/a",
		"error conversionWebhook v2 ^.spec.color samples 2/4 dataLoss: ns/b,ns/d",
	}, run(evaluation.ConversionProbe{URL: *cc.URL, CABundle: cc.CABundle}))
	// No CA bundle: the webhook's certificate is not trusted, so nothing
	// is verified.
	got := run(evaluation.ConversionProbe{URL: *cc.URL})
	require.Equal(t, []string{"error conversionWebhook"}, got)
}

// A webhook behind a Service, reached through the cluster's service
// proxy; one the proxy cannot reach (no endpoints: not deployed yet) is
// not verified.
func TestConversionProbeService(t *testing.T) {
	old := conversiontest.WidgetsCRD(t)
	newCRD := old.DeepCopy()
	newCRD.Spec.Conversion = evaluationtest.ConversionService("operators", "widget-converter")
	cfg := config.Default()
	for _, tc := range []struct {
		name     string
		services map[string]conversiontest.Hook
		want     []string
	}{
		{name: "deployed, lossy", services: map[string]conversiontest.Hook{"operators/widget-converter": {Lossy: true}},
			want: []string{
				"error conversionWebhook v1 ^.spec.color cluster 1/4 dataLoss: ns/a",
				"error conversionWebhook v2 ^.spec.color cluster 2/4 dataLoss: ns/b,ns/d",
			}},
		{name: "not deployed", services: map[string]conversiontest.Hook{}, want: []string{"error conversionWebhook"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &evaluationtest.Cluster{Objs: widgetObjects(), Services: evaluationtest.Handlers(tc.services)}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: newCRD}}},
				Settings: &cfg, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
			require.NoError(t, err)
			require.Equal(t, tc.want, conversionFindings(res))
			require.Equal(t, []string{"operators/widget-converter:443 /convert"}, cluster.Proxied)
			for _, f := range res.Findings {
				if f.Change.Kind == "unverified" {
					require.Contains(t, f.ChangeText, "service operators/widget-converter")
					require.Equal(t, finding.RemedyVerifyConversion, f.Remedy.Action)
				}
			}
		})
	}
}

// A webhook slower than the time budget verified nothing: said, with the
// budget.
func TestConversionProbeTimeout(t *testing.T) {
	newCRD := conversiontest.Serve(t, &conversiontest.Hook{Delay: 200 * time.Millisecond})
	old := conversiontest.WidgetsCRD(t)
	u := "https://old-converter.example.com/convert"
	old.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u}
	cfg := config.Default()
	plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: newCRD}}, Conversion: evaluation.ConversionProbe{Timeout: 100 * time.Millisecond}}
	res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
		Cluster: func() (evaluation.Cluster, error) { return &evaluationtest.Cluster{Objs: widgetObjects()}, nil }})
	require.NoError(t, err)
	require.Equal(t, []string{"error conversionWebhook"}, conversionFindings(res))
	for _, f := range res.Findings {
		if f.Check == config.CheckConversionWebhook {
			require.Contains(t, f.ChangeText, "conversion not verified")
			require.Contains(t, f.ReadError, "timeout 100ms")
		}
	}
}

// In a kapp deploy whose change set rolls out the workloads that serve the
// webhook before the CRD (Pair.Ordering's Shipped), the code answering
// before the deploy is the old one: the probe is left to the admission
// webhook at apply time (kind applyTime, a warning with the admission
// webhook installed: TestConversionAtApplyTime has the rest), and the old
// code is not asked.
func TestConversionProbeDeferredToTheWebhook(t *testing.T) {
	old := conversiontest.WidgetsCRD(t)
	newCRD := old.DeepCopy()
	newCRD.Spec.Conversion = evaluationtest.ConversionService("operators", "widget-converter")
	cfg := config.Default()
	cluster := &evaluationtest.Cluster{Objs: widgetObjects(), Count: len(widgetObjects()),
		Services: evaluationtest.Handlers(map[string]conversiontest.Hook{"operators/widget-converter": {Lossy: true}})}
	pair := evaluation.Pair{Old: old, New: newCRD, Ordering: &finding.ConversionOrdering{Service: "operators/widget-converter",
		AdmissionWebhook: "crd-upgrade-safety",
		Workloads:        []finding.OrderedWorkload{{Kind: "Deployment", Namespace: "operators", Name: "widget-converter", Ordered: true}}}}
	res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: evaluation.Plan{Pairs: []evaluation.Pair{pair}},
		Settings: &cfg, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
	require.NoError(t, err)
	require.Equal(t, []string{"warning conversionWebhook"}, conversionFindings(res))
	require.Empty(t, cluster.Proxied, "the old code is not asked")
	for _, f := range res.Findings {
		if f.Check == config.CheckConversionWebhook {
			require.Equal(t, "applyTime", f.Change.Kind)
			require.Contains(t, f.ChangeText, "Deployment operators/widget-converter")
		}
	}
}
