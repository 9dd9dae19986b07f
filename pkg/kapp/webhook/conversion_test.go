package webhook

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
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
	t.Run("the service proxy forbidden: not verified per failMode, the remedy names the grant, the objects not refused", func(t *testing.T) {
		forbidden := func() *admissionv1.AdmissionRequest {
			old := conversiontest.WidgetsCRD(t)
			newCRD := old.DeepCopy()
			newCRD.Spec.Conversion = evaluationtest.ConversionService("operators", "widget-converter")
			req, err := webhooktest.Request(admissionv1.Update, newCRD, old)
			require.NoError(t, err)
			return req
		}
		// The apiserver's service proxy answers 403 to an identity
		// without create on services/proxy.
		proxy := func() *evaluationtest.Cluster {
			return &evaluationtest.Cluster{Objs: objs(), Services: map[string]http.Handler{
				"operators/widget-converter": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					http.Error(w, `services "https:widget-converter:443" is forbidden`, http.StatusForbidden)
				})}}
		}
		grant := `grant its identity create on services/proxy "https:widget-converter:443" in namespace operators`
		r, _ := reviewer(t, nil, proxy())
		resp := r.Review(context.Background(), forbidden())
		require.False(t, resp.Allowed, "failMode closed")
		require.Contains(t, resp.Result.Message, "conversion not verified")
		require.Contains(t, resp.Result.Message, grant)
		require.Contains(t, resp.Result.Message, finding.ConversionProxyRBACCommand)
		require.NotContains(t, resp.Result.Message, "refuses to convert", "the objects are not refused: the webhook was not asked")

		r, _ = reviewer(t, map[string]any{"failMode": "open"}, proxy())
		resp = r.Review(context.Background(), forbidden())
		require.True(t, resp.Allowed, "failMode open")
		require.Len(t, resp.Warnings, 1)
		require.Contains(t, resp.Warnings[0], "conversion not verified")

		// Unreachable for another reason (no endpoints: 503): no grant named.
		r, _ = reviewer(t, nil, &evaluationtest.Cluster{Objs: objs(), Services: map[string]http.Handler{}})
		resp = r.Review(context.Background(), forbidden())
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "conversion not verified")
		require.NotContains(t, resp.Result.Message, "services/proxy")
	})
}
