package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

func post(h http.Handler, target, contentType string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandler(t *testing.T) {
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	h := NewHandler(r, 2)
	body, err := webhooktest.Review(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.NoError(t, err)

	rec := post(h, "/validate?timeout=10s", "application/json", body)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &review))
	require.Equal(t, "admission.k8s.io/v1", review.APIVersion)
	require.Equal(t, "AdmissionReview", review.Kind)
	require.False(t, review.Response.Allowed)
	require.Contains(t, review.Response.Result.Message, "[enum] enum values removed")

	for _, tt := range []struct {
		name, method, target, contentType string
		body                              []byte
		code                              int
		text                              string
	}{
		{"GET", http.MethodGet, "/validate", "", nil, 405, "method not allowed"},
		{"not JSON", http.MethodPost, "/validate", "application/yaml", body, 415, "unsupported content type"},
		{"malformed", http.MethodPost, "/validate", "application/json", []byte(`{"apiVersion":`), 400, "decoding the AdmissionReview"},
		{"v1beta1", http.MethodPost, "/validate", "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`), 400,
			`expected a admission.k8s.io/v1 AdmissionReview, got apiVersion "admission.k8s.io/v1beta1"`},
		{"no request", http.MethodPost, "/validate", "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), 400, "has no request"},
		{"no uid", http.MethodPost, "/validate", "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}`), 400, "has no uid"},
		{"too large", http.MethodPost, "/validate", "application/json",
			append([]byte(`{"apiVersion":"`), bytes.Repeat([]byte("x"), MaxRequestBytes)...), 413, "request body over 16777216 bytes"},
		{"healthz", http.MethodGet, "/healthz", "", nil, 200, "ok"},
		{"readyz", http.MethodGet, "/readyz", "", nil, 200, "ok"},
		{"elsewhere", http.MethodGet, "/mutate", "", nil, 404, "404 page not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, bytes.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tt.code, rec.Code, rec.Body.String())
			require.Contains(t, rec.Body.String(), tt.text)
		})
	}
	require.Zero(t, h.Panics())
}

func TestDeadlines(t *testing.T) {
	for _, tt := range []struct {
		query    string
		timeout  time.Duration
		deadline time.Duration
	}{
		{"", 10 * time.Second, 8 * time.Second},
		{"timeout=15s", 15 * time.Second, 13 * time.Second},
		{"timeout=30s", 30 * time.Second, 28 * time.Second},
		{"timeout=5m", 30 * time.Second, 28 * time.Second},
		{"timeout=3s", 3 * time.Second, 1500 * time.Millisecond},
		{"timeout=1s", time.Second, 500 * time.Millisecond},
		{"timeout=-1s", 10 * time.Second, 8 * time.Second},
		{"timeout=soon", 10 * time.Second, 8 * time.Second},
	} {
		req := httptest.NewRequest(http.MethodPost, "/validate?"+tt.query, nil)
		got := admissionTimeout(req)
		require.Equal(t, tt.timeout, got, tt.query)
		require.Equal(t, tt.deadline, reviewDeadline(got), tt.query)
	}
}

// TestHandlerSlots: a review that waits for a slot past its deadline is
// one the webhook could not judge: failMode decides.
func TestHandlerSlots(t *testing.T) {
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	h := NewHandler(r, 1)
	h.slots <- struct{}{} // the one slot is taken
	body, err := webhooktest.Review(request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD))
	require.NoError(t, err)
	start := time.Now()
	rec := post(h, "/validate?timeout=1s", "application/json", body)
	require.Less(t, time.Since(start), time.Second)
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &review))
	require.False(t, review.Response.Allowed)
	require.True(t, strings.HasPrefix(review.Response.Result.Message,
		"CRDUpgradeSafety could not check the update of CRD widgets.example.com, denied under failMode closed: "+
			"the live checks did not finish in time"), review.Response.Result.Message)
	require.Contains(t, review.Response.Result.Message, "waited for one of the 1 review slots (--max-requests-inflight)")
}

// TestReadBody: a body of a known size is read into one buffer of that
// size; an unknown or out-of-bounds size reads to the end; a body shorter
// than its size is an error.
func TestReadBody(t *testing.T) {
	data := []byte(`{"kind":"AdmissionReview"}`)
	for _, tc := range []struct {
		name string
		size int64
		want string
		err  bool
	}{
		{name: "known size", size: int64(len(data)), want: string(data)},
		{name: "unknown size", size: -1, want: string(data)},
		{name: "over the bound: read to the end", size: MaxRequestBytes + 1, want: string(data)},
		{name: "shorter than its size", size: int64(len(data)) + 10, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readBody(bytes.NewReader(data), tc.size)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			if tc.size == int64(len(data)) {
				require.Equal(t, len(data), cap(got), "one buffer of the size")
			}
		})
	}
}

// TestHandlerSelfWaiver: a review whose new CRD waives, by its own
// annotations, the removal of a field that stored objects hold is denied,
// whatever the settings let annotations waive; an annotation waiver of a
// check the admin allows, on a change that loses no data, still counts.
func TestHandlerSelfWaiver(t *testing.T) {
	oldDoc := testcrd.CRDYAML("widgets", "Widget", "{size: {type: integer, minimum: 1}, color: {type: string}}")
	newDoc := testcrd.CRDYAML("widgets", "Widget", "{size: {type: integer, minimum: 5}}")
	objs := []map[string]any{
		{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{"color": "red", "size": 7}},
	}
	review := func(t *testing.T, raw map[string]any, newDoc string, annotate ...string) *admissionv1.AdmissionResponse {
		t.Helper()
		r, _ := reviewer(t, raw, &evaluationtest.Cluster{Objs: objs})
		body, err := webhooktest.Review(request(t, admissionv1.Update, newDoc, oldDoc, annotate...))
		require.NoError(t, err)
		rec := post(NewHandler(r, 2), "/validate?timeout=10s", "application/json", body)
		require.Equal(t, http.StatusOK, rec.Code)
		var out admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
		return out.Response
	}
	selfWaiver := []string{"crd-upgrade-safety.kapp.k14s.io/waive", "existingFieldRemoval,existingResources,minimum",
		"crd-upgrade-safety.kapp.k14s.io/waive-reason", "trust me"}
	everything := map[string]any{"annotationWaivers": map[string]any{"checks": []any{"existingFieldRemoval", "existingResources", "minimum"}}}
	for _, raw := range []map[string]any{nil, everything} {
		resp := review(t, raw, newDoc, selfWaiver...)
		require.False(t, resp.Allowed, "settings %v", raw)
		require.Contains(t, resp.Result.Message, "[existingFieldRemoval] data loss: existing field removed")
		require.Contains(t, resp.Result.Message, "acceptDataLoss: [{crd: widgets.example.com, check: existingFieldRemoval, version: v1, path: \"^.spec.color\", objects: 1")
	}
	// Without the field removal, the admin-allowed annotation waives the
	// minimum (no stored object is below 5).
	keep := testcrd.CRDYAML("widgets", "Widget", "{size: {type: integer, minimum: 5}, color: {type: string}}")
	resp := review(t, everything, keep, selfWaiver...)
	require.True(t, resp.Allowed, "%v", resp.Result)
	require.Len(t, resp.Warnings, 1)
	require.Contains(t, resp.Warnings[0], "[minimum] minimum increased: 1 -> 5")
	require.Contains(t, resp.Warnings[0], "(exempted: waive annotation: trust me)")
	// ...and not by default.
	resp = review(t, nil, keep, selfWaiver...)
	require.False(t, resp.Allowed)
	// The settings' acceptance of exactly that loss lets the removal pass.
	accept := map[string]any{"annotationWaivers": map[string]any{"checks": []any{"minimum"}},
		"acceptDataLoss": []any{map[string]any{"crd": "widgets.example.com", "check": "existingFieldRemoval", "version": "v1",
			"path": "^.spec.color", "objects": 1, "reason": "colors retired", "expires": "2099-12-31"}}}
	resp = review(t, accept, newDoc, selfWaiver...)
	require.True(t, resp.Allowed, "%v", resp.Result)
}

// TestHandlerWithholdsStoredValues: a review posted to the handler by any
// client that reaches it (a made-up review of a real CRD with a tightened
// pattern) gets a denial that names the stored object but not the value
// it holds, the whole HTTP response body included; with
// webhook.revealStoredValues the value is there.
func TestHandlerWithholdsStoredValues(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	crdOf := func(pattern string) string {
		return testcrd.CRDYAML("widgets", "Widget", `{token: {type: string, pattern: "`+pattern+`"}}`)
	}
	stored := []map[string]any{{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "one", "namespace": "default"},
		"spec":     map[string]any{"token": token},
	}}
	body, err := webhooktest.Review(request(t, admissionv1.Update, crdOf("^[0-9]+$"), crdOf("^[a-z0-9-]+$")))
	require.NoError(t, err)
	for _, reveal := range []bool{false, true} {
		r, logged := reviewer(t, map[string]any{"webhook": map[string]any{"revealStoredValues": reveal}},
			&evaluationtest.Cluster{Objs: stored})
		rec := post(NewHandler(r, 2), "/validate?timeout=10s", "application/json", body)
		require.Equal(t, http.StatusOK, rec.Code)
		var review admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &review))
		require.False(t, review.Response.Allowed)
		require.Contains(t, review.Response.Result.Message, "default/one (Invalid value")
		require.NotContains(t, strings.Join(*logged, "\n"), token)
		if reveal {
			require.Contains(t, rec.Body.String(), token)
		} else {
			require.NotContains(t, rec.Body.String(), token)
		}
	}
}
