package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scrape returns the text exposition of h.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Type"), "text/plain")
	return rec.Body.String()
}

func reviewBody(t *testing.T, op admissionv1.Operation, newDoc, oldDoc string) []byte {
	t.Helper()
	body, err := webhooktest.Review(request(t, op, newDoc, oldDoc))
	require.NoError(t, err)
	return body
}

func TestMetrics(t *testing.T) {
	m := NewMetrics(nil)
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: []map[string]any{invalidWidget}})
	r.Metrics = m
	h := NewHandler(r, 2)

	// Denied: two error findings (enum, minimum), one stored object read.
	rec := post(h, "/validate?timeout=10s", "application/json", reviewBody(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.Equal(t, http.StatusOK, rec.Code)
	// Allowed: a create is not judged.
	rec = post(h, "/validate?timeout=10s", "application/json", reviewBody(t, admissionv1.Create, testcrd.SafeCRD, ""))
	require.Equal(t, http.StatusOK, rec.Code)
	// A body that does not decode: a failure to judge, cause decode.
	rec = post(h, "/validate", "application/json", []byte(`{"apiVersion":`))
	require.Equal(t, http.StatusBadRequest, rec.Code)

	// The cluster's error: cause api_error, decision error.
	r2, _ := reviewer(t, nil, &evaluationtest.Cluster{Err: errors.New("connection refused")})
	r2.Metrics = m
	rec = post(NewHandler(r2, 2), "/validate?timeout=10s", "application/json", reviewBody(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD))
	require.Equal(t, http.StatusOK, rec.Code)

	// A panic while judging: cause panic.
	r3, _ := reviewer(t, nil, nil)
	r3.Cluster, r3.Metrics = panickingCluster{&evaluationtest.Cluster{}}, m
	r3.Review(context.Background(), request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD))

	// Out of time: cause timeout.
	r4, _ := reviewer(t, nil, nil)
	r4.Cluster, r4.Metrics = blockingCluster{&evaluationtest.Cluster{}}, m
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r4.Review(ctx, request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD))

	text := scrape(t, m.Handler())
	for _, line := range []string{
		`crd_upgrade_safety_webhook_review_duration_seconds_count{decision="denied",operation="update"} 1`,
		`crd_upgrade_safety_webhook_review_duration_seconds_count{decision="allowed",operation="create"} 1`,
		`crd_upgrade_safety_webhook_review_duration_seconds_count{decision="error",operation="update"} 3`,
		`crd_upgrade_safety_webhook_review_duration_seconds_bucket{decision="denied",operation="update",le="+Inf"} 1`,
		`crd_upgrade_safety_webhook_decisions_by_check_total{check="enum",severity="error"} 1`,
		`crd_upgrade_safety_webhook_decisions_by_check_total{check="minimum",severity="error"} 1`,
		`crd_upgrade_safety_webhook_stored_objects_read_total 1`,
		`crd_upgrade_safety_webhook_reviews_in_flight 0`,
		`crd_upgrade_safety_webhook_failures_total{cause="decode"} 1`,
		`crd_upgrade_safety_webhook_failures_total{cause="api_error"} 1`,
		`crd_upgrade_safety_webhook_failures_total{cause="panic"} 1`,
		`crd_upgrade_safety_webhook_failures_total{cause="timeout"} 1`,
		`crd_upgrade_safety_webhook_failures_total{cause="other"} 0`,
		`# TYPE crd_upgrade_safety_webhook_review_duration_seconds histogram`,
		`# TYPE go_goroutines gauge`,
	} {
		require.Contains(t, text, line+"\n")
	}
	require.NotContains(t, text, "certificate_expiry", "no certificate source given")
}

func TestMetricsDecodeCauses(t *testing.T) {
	m := NewMetrics(nil)
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	r.Metrics = m
	req := request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD)
	req.OldObject.Raw = nil
	resp := r.Review(context.Background(), req)
	require.False(t, resp.Allowed)
	require.Contains(t, resp.Result.Message, "the request has no oldObject")
	require.Contains(t, scrape(t, m.Handler()), `crd_upgrade_safety_webhook_failures_total{cause="decode"} 1`+"\n")
}

// TestMetricsForbiddenCause: a read the role does not allow counts as
// cause forbidden, not api_error: the alert is "regenerate the role".
func TestMetricsForbiddenCause(t *testing.T) {
	m := NewMetrics(nil)
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{Err: &kube.ForbiddenError{Group: "example.com", Resource: "widgets", Verb: "list",
		Err: apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", errors.New("RBAC"))}})
	r.Metrics = m
	resp := r.Review(context.Background(), request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD))
	require.False(t, resp.Allowed)
	text := scrape(t, m.Handler())
	require.Contains(t, text, `crd_upgrade_safety_webhook_failures_total{cause="forbidden"} 1`+"\n")
	require.Contains(t, text, `crd_upgrade_safety_webhook_failures_total{cause="api_error"} 0`+"\n")
}

func TestMetricsCertificateExpiry(t *testing.T) {
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	certs := &CertReloader{CertFile: cert.CertFile, KeyFile: cert.KeyFile}
	m := NewMetrics(certs)
	require.Contains(t, scrape(t, m.Handler()), "crd_upgrade_safety_webhook_certificate_expiry_timestamp_seconds 0\n", "none loaded yet")
	require.NoError(t, certs.Load())

	block, _ := pem.Decode(cert.PEM)
	require.NotNil(t, block)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	want := strconv.FormatFloat(float64(leaf.NotAfter.Unix()), 'g', -1, 64)
	require.Contains(t, scrape(t, m.Handler()), "crd_upgrade_safety_webhook_certificate_expiry_timestamp_seconds "+want+"\n")
}

func TestServerMetrics(t *testing.T) {
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	certs := &CertReloader{CertFile: cert.CertFile, KeyFile: cert.KeyFile}
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	r.Metrics = NewMetrics(certs)
	listening, metricsListening := make(chan net.Addr, 1), make(chan net.Addr, 1)
	srv := &Server{BindAddress: "127.0.0.1", Certs: certs, Handler: NewHandler(r, 4), Logf: t.Logf,
		Listening:          func(a net.Addr) { listening <- a },
		MetricsBindAddress: "127.0.0.1:0", Metrics: r.Metrics,
		MetricsListening: func(a net.Addr) { metricsListening <- a }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var addr, maddr string
	for addr == "" || maddr == "" {
		select {
		case a := <-listening:
			addr = a.String()
		case a := <-metricsListening:
			maddr = a.String()
		case err := <-done:
			t.Fatalf("server did not start: %v", err)
		}
	}
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() { _ = stop() })

	resp, err := client(cert.PEM, 0).Post("https://"+addr+ValidatePath+"?timeout=10s", "application/json",
		bytes.NewReader(reviewBody(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD)))
	require.NoError(t, err)
	_ = resp.Body.Close()

	// Plain HTTP, on its own address.
	resp, err = http.Get("http://" + maddr + MetricsPath)
	require.NoError(t, err)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	text := string(data)
	require.Contains(t, text, `crd_upgrade_safety_webhook_review_duration_seconds_count{decision="denied",operation="update"} 1`+"\n")
	require.Regexp(t, `(?m)^crd_upgrade_safety_webhook_certificate_expiry_timestamp_seconds [1-9]`, text)

	// The review server does not serve metrics.
	resp, err = client(cert.PEM, 0).Get("https://" + addr + MetricsPath)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	require.NoError(t, stop())
	_, err = http.Get("http://" + maddr + MetricsPath)
	require.Error(t, err, "the metrics server stops with the server")
}

func TestLogger(t *testing.T) {
	_, err := NewLogger(io.Discard, "yaml")
	require.EqualError(t, err, `unknown value "yaml" (allowed: json, text)`)

	var buf bytes.Buffer
	l, err := NewLogger(&buf, LogFormatJSON)
	require.NoError(t, err)
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	r.Logf, r.LogFields = l.Printf, l.Fields
	r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	l.Printf("serving on %s", "x")

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 2)
	var review map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &review), lines[0])
	for _, k := range []string{"time", "uid", "took"} {
		require.NotEmpty(t, review[k], k)
	}
	_, err = time.Parse(time.RFC3339Nano, review["time"].(string))
	require.NoError(t, err)
	delete(review, "time")
	delete(review, "uid")
	delete(review, "took")
	require.Equal(t, map[string]any{"msg": "review", "op": "UPDATE", "crd": "widgets.example.com", "user": "test",
		"dryRun": false, "allowed": false, "errors": float64(2), "warnings": float64(0)}, review)
	var msg map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &msg))
	require.Equal(t, "serving on x", msg["msg"])

	buf.Reset()
	l, err = NewLogger(&buf, LogFormatText)
	require.NoError(t, err)
	r.Logf, r.LogFields = l.Printf, l.Fields
	r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.Regexp(t, `^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d review uid=review-\d+ op=UPDATE crd=widgets.example.com user="test" dryRun=false allowed=false errors=2 warnings=0 took=\S+\n$`, buf.String())
}

// TestCountingKeepsEveryCapability: the decorator a review wraps the
// cluster in forwards every method of evaluation.Cluster, the optional
// capabilities (DependentsOf, ListStorageVersionMigrations) included.
func TestCountingKeepsEveryCapability(t *testing.T) {
	evaluationtest.RequireForwardsEveryMethod(t, func(c evaluation.Cluster) evaluation.Cluster {
		d, _ := counting(c)
		return d
	})
}

// TestEveryLiveCheckThroughCounting: every check that reads the cluster
// finds through the review's decorator what it finds on the bare Cluster
// (evaluationtest.LiveChecks; the evaluation's decorators have the same
// test, TestEveryLiveCheckThroughEveryDecorator).
func TestEveryLiveCheckThroughCounting(t *testing.T) {
	evaluationtest.RequireEveryLiveCheck(t, evaluationtest.LiveChecks(t), func() *evaluationtest.Cluster { return evaluationtest.LiveCluster(t) },
		func(c evaluation.Cluster) evaluation.Cluster {
			d, _ := counting(c)
			return d
		})
}
