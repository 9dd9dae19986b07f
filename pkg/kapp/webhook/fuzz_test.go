package webhook

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	admissionv1 "k8s.io/api/admission/v1"
)

// FuzzHandler posts arbitrary bodies to /validate: whatever the body, the
// handler answers (an AdmissionReview or a 4xx status) and nothing panics,
// neither the request (Handler.Panics) nor a review (which would recover
// and log it). The seeds are real reviews (updates safe and unsafe, a
// delete, a create, a waiver) and malformed ones: wrong types, objects
// that are not CRDs, truncated and null parts.
//
//	go test -fuzz=FuzzHandler -fuzztime=2m ./pkg/kapp/webhook/
func FuzzHandler(f *testing.F) {
	seed := func(req *admissionv1.AdmissionRequest) {
		body, err := webhooktest.Review(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
		f.Add(body[:len(body)/2])
	}
	t := &testing.T{}
	seed(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	seed(request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD))
	seed(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD, config.WaiveAnnotation, "enum", config.WaiveReasonAnnotation, "r"))
	seed(request(t, admissionv1.Create, testcrd.UnsafeCRD, ""))
	seed(deleteRequest(t, testcrd.OldCRD))
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `"x"`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"UPDATE","object":null,"oldObject":null}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"UPDATE",` +
			`"resource":{"group":"apiextensions.k8s.io","version":"v1","resource":"customresourcedefinitions"},` +
			`"object":{"apiVersion":"v1","kind":"ConfigMap"},"oldObject":{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition"}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"DELETE",` +
			`"resource":{"group":"apiextensions.k8s.io","version":"v1","resource":"customresourcedefinitions"},` +
			`"oldObject":{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"versions":[{"name":"v1","served":true,"schema":{"openAPIV3Schema":{"type":7}}}]}}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"UPDATE",` +
			`"resource":{"group":"apiextensions.k8s.io","version":"v1","resource":"customresourcedefinitions"},` +
			`"object":{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b"},"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"x":{"type":"string","enum":[1,null]}}}}}]}},` +
			`"oldObject":{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b"},"spec":{"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"x":{"type":"string","x-kubernetes-validations":[{"rule":"self.size() >"}]}}}}}]}}}}`,
	} {
		f.Add([]byte(s))
	}

	var mu sync.Mutex
	var panics []string
	cfg := WebhookSettings(config.Default())
	r := &Reviewer{Settings: &cfg, Logf: func(format string, args ...any) {
		if line := fmt.Sprintf(format, args...); strings.HasPrefix(line, "panic") {
			mu.Lock()
			panics = append(panics, line)
			mu.Unlock()
		}
	}}
	f.Fuzz(func(t *testing.T, body []byte) {
		r.Cluster = &evaluationtest.Cluster{Count: 2, Objs: []map[string]any{invalidWidget}}
		h := NewHandler(r, 1)
		rec := post(h, "/validate?timeout=5s", "application/json", body)
		if rec.Code != http.StatusOK && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
		if h.Panics() > 0 {
			t.Fatalf("the handler panicked on %q", body)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(panics) > 0 {
			t.Fatalf("a review panicked on %q: %s", body, panics[0])
		}
	})
}
