package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// prometheuses is the largest real CRD of the benchmarks (hack/fetch-crds.sh).
const prometheuses = "../../../.cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml"

// BenchmarkHandler is one review of an update of the prometheuses CRD (a
// new optional field) through the handler, without TLS and without stored
// custom resources: decoding the review, the comparison, the response.
// hack/bench-webhook.sh measures the server under load, over TLS.
//
//	go test -run '^$' -bench Handler -benchmem ./pkg/kapp/webhook/
func BenchmarkHandler(b *testing.B) {
	data, err := os.ReadFile(prometheuses)
	if err != nil {
		b.Skipf("%v (run hack/fetch-crds.sh)", err)
	}
	oldCRD := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, oldCRD); err != nil {
		b.Fatal(err)
	}
	oldCRD.Status.StoredVersions = []string{"v1"}
	newCRD := oldCRD.DeepCopy()
	spec := newCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["benchNewField"] = apiextv1.JSONSchemaProps{Type: "string"}
	newCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	req, err := webhooktest.Request(admissionv1.Update, newCRD, oldCRD)
	if err != nil {
		b.Fatal(err)
	}
	body, err := webhooktest.Review(req)
	if err != nil {
		b.Fatal(err)
	}
	cfg := WebhookSettings(config.Default())
	h := NewHandler(&Reviewer{Settings: &cfg, Cluster: &evaluationtest.Cluster{}}, 0)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, ValidatePath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkDecodeReview decodes a review of an update of the prometheuses
// CRD: with encoding/json (decodeReviewSlow, the decoding before issue
// 32), with the JSON v2 decoder (fastDecodeReview, both CRDs decoded),
// and with both CRDs from the cache (the same CRDs as the last review).
//
//	go test -run '^$' -bench DecodeReview -benchmem ./pkg/kapp/webhook/
func BenchmarkDecodeReview(b *testing.B) {
	data, err := os.ReadFile(prometheuses)
	if err != nil {
		b.Skipf("%v (run hack/fetch-crds.sh)", err)
	}
	oldCRD := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, oldCRD); err != nil {
		b.Fatal(err)
	}
	req, err := webhooktest.Request(admissionv1.Update, oldCRD.DeepCopy(), oldCRD)
	if err != nil {
		b.Fatal(err)
	}
	body, err := webhooktest.Review(req)
	if err != nil {
		b.Fatal(err)
	}
	cache := newCRDCache(DefaultCRDCacheBytes)
	for _, bc := range []struct {
		name   string
		decode func() bool
	}{
		{"encoding-json", func() bool { _, _, ok := decodeReviewSlow(body); return ok }},
		{"json-v2", func() bool { _, _, ok := fastDecodeReview(body, nil); return ok }},
		{"json-v2-cached", func() bool { _, _, ok := fastDecodeReview(body, cache); return ok }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				if !bc.decode() {
					b.Fatal("not decoded")
				}
			}
		})
	}
}
