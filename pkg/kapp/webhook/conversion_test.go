package webhook

import (
	"context"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestReviewConversionWebhook: an update that points a CRD at new
// conversion code is judged by what that code does to the stored objects,
// within the settings' budget (webhook.conversion), which a probe cut
// short names.
func TestReviewConversionWebhook(t *testing.T) {
	objs := func() []map[string]any {
		var out []map[string]any
		for _, w := range conversiontest.Widgets() {
			out = append(out, w.Object)
		}
		return out
	}
	update := func(h *conversiontest.Hook) *admissionv1.AdmissionRequest {
		newCRD := conversiontest.Serve(t, h)
		old := conversiontest.WidgetsCRD(t)
		u := "https://old-converter.example.com/convert"
		old.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u}
		req, err := webhooktest.Request(admissionv1.Update, newCRD, old)
		require.NoError(t, err)
		return req
	}
	t.Run("lossless: allowed", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: objs()})
		resp := r.Review(context.Background(), update(&conversiontest.Hook{}))
		require.True(t, resp.Allowed, resp.Result)
	})
	t.Run("lossy: denied, naming the field and the objects", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: objs()})
		resp := r.Review(context.Background(), update(&conversiontest.Hook{Lossy: true}))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "version v1 field ^.spec.color: [conversionWebhook] data loss: the new conversion webhook loses this field")
		require.Contains(t, resp.Result.Message, "1 of 4 stored Widgets loses it: ns/a")
		require.Contains(t, resp.Result.Message, "2 of 4 stored Widgets lose it: ns/b, ns/d")
	})
	t.Run("failing on an object: denied, naming it, without the webhook's words (stored values stay in)", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: objs()})
		resp := r.Review(context.Background(), update(&conversiontest.Hook{FailLabel: true}))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "refuses to convert stored objects from v1 to v2 (result)")
		require.Contains(t, resp.Result.Message, "1 of 4 stored Widgets refused: ns/c")
		require.NotContains(t, resp.Result.Message, "cannot unmarshal", "the webhook's message may quote stored data")
	})
	t.Run("the budget: maxObjects cuts the probe short, a warning naming it", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"webhook": map[string]any{"conversion": map[string]any{"maxObjects": 1, "timeout": "2s"}}},
			&evaluationtest.Cluster{Objs: objs()})
		resp := r.Review(context.Background(), update(&conversiontest.Hook{FailLabel: true}))
		require.True(t, resp.Allowed, "ns/c, the object refused, is past the budget")
		require.Len(t, resp.Warnings, 1)
		require.Contains(t, resp.Warnings[0], "conversion probed for 1 of 4 stored Widgets: the budget (maxObjects 1, timeout 2s; maxObjects reached) cut it short")
	})
	t.Run("the budget: a webhook slower than timeout verified nothing", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"webhook": map[string]any{"conversion": map[string]any{"timeout": "100ms"}}},
			&evaluationtest.Cluster{Objs: objs()})
		resp := r.Review(context.Background(), update(&conversiontest.Hook{Delay: 300 * time.Millisecond}))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "conversion not verified")
	})
	t.Run("the default budget probes the four", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: objs()})
		resp := r.Review(context.Background(), update(&conversiontest.Hook{FailLabel: true}))
		require.False(t, resp.Allowed)
		require.Empty(t, resp.Warnings)
	})
	t.Run("not answering: denied as not verified under failMode closed, allowed with a warning under open", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: objs()})
		resp := r.Review(context.Background(), update(&conversiontest.Hook{HttpStatus: 503}))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "conversion not verified")
		r, _ = reviewer(t, map[string]any{"failMode": "open"}, &evaluationtest.Cluster{Objs: objs()})
		resp = r.Review(context.Background(), update(&conversiontest.Hook{HttpStatus: 503}))
		require.True(t, resp.Allowed)
		require.Len(t, resp.Warnings, 1)
		require.Contains(t, resp.Warnings[0], "conversion not verified")
	})
}
