package webhook

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// watchedBody is a request body that records when it is first read.
type watchedBody struct {
	r     io.Reader
	first atomic.Int64 // unix nanoseconds of the first read; 0: none yet
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.first.CompareAndSwap(0, time.Now().UnixNano())
	return b.r.Read(p)
}

// TestBodyReadAfterSlot: a request waiting for a review slot has not read
// (nor allocated) a byte of its body; its body is read once the slot is
// granted.
func TestBodyReadAfterSlot(t *testing.T) {
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	h := NewHandler(r, 1)
	body, err := webhooktest.Review(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.NoError(t, err)

	h.slots <- struct{}{} // the one slot is taken
	watched := &watchedBody{r: bytes.NewReader(body)}
	req := httptest.NewRequest(http.MethodPost, "/validate?timeout=10s", watched)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { h.ServeHTTP(rec, req); close(done) }()

	time.Sleep(200 * time.Millisecond)
	require.Zero(t, watched.first.Load(), "the body is not read while the request waits for a slot")
	released := time.Now()
	<-h.slots
	<-done
	require.NotZero(t, watched.first.Load())
	require.False(t, time.Unix(0, watched.first.Load()).Before(released), "read after the slot was granted")
	var review admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &review))
	require.False(t, review.Response.Allowed)
	require.Contains(t, review.Response.Result.Message, "[enum] enum values removed")
}

// TestBodyTooLargeNeedsNoSlot: a body announced over MaxRequestBytes is
// refused at once, with every slot taken.
func TestBodyTooLargeNeedsNoSlot(t *testing.T) {
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	h := NewHandler(r, 1)
	h.slots <- struct{}{}
	watched := &watchedBody{r: strings.NewReader("{}")}
	req := httptest.NewRequest(http.MethodPost, "/validate?timeout=10s", watched)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = MaxRequestBytes + 1
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.Zero(t, watched.first.Load())
}

// TestDecodeReviewHead: the head of a review is its request without the
// objects, read no further than the first object.
func TestDecodeReviewHead(t *testing.T) {
	body, err := webhooktest.Review(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.NoError(t, err)
	full, _, err := decodeReview(body, nil)
	require.NoError(t, err)
	want := full.Request.DeepCopy()
	want.Object, want.OldObject = runtime.RawExtension{}, runtime.RawExtension{}

	// Everything after the first object fails the read: the head must not
	// need it.
	cut := bytes.Index(body, []byte(`"object":`)) + len(`"object":`)
	require.Greater(t, cut, len(`"object":`))
	head, err := decodeReviewHead(io.MultiReader(bytes.NewReader(body[:cut]), errReader{}))
	require.NoError(t, err)
	require.Equal(t, full.TypeMeta, head.TypeMeta)
	require.Equal(t, want, head.Request)

	for _, tc := range []struct {
		name, body, err string
	}{
		{"not JSON", `nope`, "decoding the AdmissionReview"},
		{"no uid before the object", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":{}}}`,
			"has no uid"},
		{"not a review", `{"apiVersion":"v1","kind":"Pod","request":{"uid":"x"}}`, "expected a admission.k8s.io/v1 AdmissionReview"},
		{"truncated", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x",`, "decoding the AdmissionReview"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeReviewHead(strings.NewReader(tc.body))
			require.ErrorContains(t, err, tc.err)
		})
	}
	t.Run("members after the request are skipped", func(t *testing.T) {
		head, err := decodeReviewHead(strings.NewReader(
			`{"response":{"uid":"y"},"apiVersion":"admission.k8s.io/v1","request":{"uid":"x","name":"n"},"kind":"AdmissionReview"}`))
		require.NoError(t, err)
		require.Equal(t, "x", string(head.Request.UID))
		require.Equal(t, "n", head.Request.Name)
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("read past the head") }

// TestSlowClients: 64 clients that send their headers and then stall or
// dribble their bodies, over and over, cannot keep the reviews of a
// normal client from being answered: each loses its slot within
// BodyReadGrace, so a review waits at most for the slow requests ahead of
// it, (64 / 4 slots) x BodyReadGrace, twice: once for the slot that reads
// and decodes it, once for the slot of its judgement (the same pool).
func TestSlowClients(t *testing.T) {
	cert, err := webhooktest.WriteCert(t.TempDir())
	require.NoError(t, err)
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
	r.Logf = nil
	const slots, grace, slowClients = 4, 100 * time.Millisecond, 64
	h := NewHandler(r, slots)
	h.BodyReadGrace = grace
	addr, _ := startServerWith(t, &Server{Certs: &CertReloader{CertFile: cert.CertFile, KeyFile: cert.KeyFile}, Handler: h})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var cut, sent atomic.Int64
	for i := range slowClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if slowRequest(ctx, addr, i%2 == 0, &sent) {
					cut.Add(1)
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	require.Eventually(t, func() bool { return sent.Load() >= slowClients }, 10*time.Second, 10*time.Millisecond,
		"every slow client sent its headers")

	body, err := webhooktest.Review(request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.NoError(t, err)
	c := client(cert.PEM, 0)
	bound := 2*time.Duration(slowClients/slots+1)*grace + 2*time.Second // + TLS and the review itself on a loaded machine
	for range 3 {
		start := time.Now()
		resp, err := c.Post("https://"+addr+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		took := time.Since(start)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(data))
		var review admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(data, &review))
		require.Contains(t, review.Response.Result.Message, "[enum] enum values removed", "judged, not only answered")
		require.Less(t, took, bound, "answered within the bound with %d slow clients", slowClients)
		t.Logf("review answered in %s (bound %s) beside %d slow clients; %d slow requests cut so far", took, bound, slowClients, cut.Load())
	}
	require.Positive(t, cut.Load(), "slow requests lose their slot")
}

// slowRequest sends the headers of a review of 1 MiB and then nothing
// (stall) or a byte every 20ms (dribble), until the server ends the
// request. It reports whether the server cut it (an answer or a closed
// connection before the body was complete).
func slowRequest(ctx context.Context, addr string, stall bool, sent *atomic.Int64) bool {
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // the test's own server
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if _, err := fmt.Fprintf(conn, "POST /validate?timeout=30s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", 1<<20); err != nil {
		return false
	}
	sent.Add(1)
	answered := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(conn).ReadString('\n') // the status line, or EOF when closed
		close(answered)
	}()
	if stall {
		select {
		case <-answered:
			return true
		case <-ctx.Done():
			return false
		}
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-answered:
			return true
		case <-ctx.Done():
			return false
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				<-answered
				return true
			}
		}
	}
}
