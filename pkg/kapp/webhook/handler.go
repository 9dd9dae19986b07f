package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
)

// Paths the server answers on.
const (
	ValidatePath = "/validate"
	HealthzPath  = "/healthz"
	ReadyzPath   = "/readyz"
)

// MaxRequestBytes bounds the body of an admission request. The apiserver
// refuses request bodies over 3 MiB and etcd stores objects up to 1.5 MiB;
// a review of an update carries the CRD twice (object and oldObject), each
// at most 3 MiB as JSON. 16 MiB leaves room for the JSON of a stored
// object being larger than its protobuf in etcd, and bounds the memory of
// a request that is not the apiserver's.
const MaxRequestBytes = 16 << 20

// Deadlines of a review. The apiserver calls a webhook with ?timeout=
// (the configuration's timeoutSeconds; 10s when it sets none) and gives up
// when it passes: the review must answer before that, so its live checks
// end DeadlineMargin earlier (or at half the timeout, for timeouts of
// 2*DeadlineMargin and less).
const (
	DefaultAdmissionTimeout = 10 * time.Second
	DeadlineMargin          = 2 * time.Second
	// MaxAdmissionTimeout is the longest timeoutSeconds the apiserver
	// accepts.
	MaxAdmissionTimeout = 30 * time.Second
)

// Handler serves the admission reviews (ValidatePath) and the probes.
type Handler struct {
	Reviewer *Reviewer
	// MaxInFlight bounds the reviews evaluated at once (decoding and
	// evaluating a large CRD is CPU and memory bound); the others wait,
	// within their deadline. 0: unbounded.
	MaxInFlight int
	// Ready reports whether the server can serve reviews (ReadyzPath).
	// nil: ready.
	Ready func() error
	// BodyReadGrace and MinBodyRate bound how long a request may hold its
	// slot while its body arrives (bodyReader): the first byte within
	// BodyReadGrace of the slot, then at least MinBodyRate bytes a second
	// on average. Zero: DefaultBodyReadGrace, DefaultMinBodyRate.
	BodyReadGrace time.Duration
	MinBodyRate   int64

	slots  chan struct{}
	panics atomic.Int64
	// crds keeps the CRDs (old and new) of recent reviews decoded.
	crds *crdCache
	// flights: concurrent reviews of the same objects share a judgement.
	flights *flights
}

// NewHandler returns the handler of reviewer with at most maxInFlight
// reviews evaluated at once. It gives reviewer a cache of comparisons
// (Reviewer.Comparisons) when it has none.
func NewHandler(reviewer *Reviewer, maxInFlight int) *Handler {
	if reviewer.Comparisons == nil {
		reviewer.Comparisons = evaluation.NewComparisons(evaluation.DefaultComparisons)
	}
	h := &Handler{Reviewer: reviewer, MaxInFlight: maxInFlight, crds: newCRDCache(DefaultCRDCacheBytes),
		flights: newFlights()}
	if maxInFlight > 0 {
		h.slots = make(chan struct{}, maxInFlight)
	}
	return h
}

// slot waits for one of the review slots (none: at once) within ctx and
// returns its release; the error says why it could not get one.
func (h *Handler) slot(ctx context.Context) (release func(), err error) {
	if h.slots == nil {
		return func() {}, nil
	}
	select {
	case h.slots <- struct{}{}:
		return func() { <-h.slots }, nil
	case <-ctx.Done():
		return func() {}, fmt.Errorf("waited for one of the %d review slots (--max-requests-inflight): %w",
			h.MaxInFlight, context.Cause(ctx))
	}
}

// Panics is how many requests panicked outside the review (which recovers
// on its own): every one is a bug (FuzzHandler asserts there are none).
func (h *Handler) Panics() int64 { return h.panics.Load() }

// ServeHTTP routes a request to the review or a probe.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { // net/http's own: let it abort the response
				panic(p)
			}
			h.panics.Add(1)
			if h.Reviewer.Logf != nil {
				h.Reviewer.Logf("panic serving %s: %v\n%s", req.URL.Path, p, debug.Stack())
			}
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
	}()
	switch req.URL.Path {
	case ValidatePath:
		h.validate(w, req)
	case HealthzPath:
		writeText(w, http.StatusOK, "ok")
	case ReadyzPath:
		if h.Ready != nil {
			if err := h.Ready(); err != nil {
				writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		writeText(w, http.StatusOK, "ok")
	default:
		http.NotFound(w, req)
	}
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text+"\n")
}

// readBody reads a request's body of size bytes (its Content-Length, -1
// when unknown) into one buffer of that size, instead of the doublings of
// io.ReadAll (a review of a large CRD is megabytes).
func readBody(body io.Reader, size int64) ([]byte, error) {
	if size <= 0 || size > MaxRequestBytes {
		return io.ReadAll(body)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// validate serves one AdmissionReview: a POST of JSON, at most
// MaxRequestBytes. A body that is not an admission.k8s.io/v1
// AdmissionReview with a request is refused with a 4xx status (the
// apiserver then applies the configuration's failurePolicy); any review it
// can read gets an answer.
func (h *Handler) validate(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeText(w, http.StatusMethodNotAllowed, "method not allowed: POST an AdmissionReview")
		return
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeText(w, http.StatusUnsupportedMediaType, "unsupported content type: expected application/json")
		return
	}
	if req.ContentLength > MaxRequestBytes {
		// Refused before it takes a slot or a byte of memory.
		writeText(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxRequestBytes))
		return
	}
	h.Reviewer.Metrics.inFlightAdd(1)
	defer h.Reviewer.Metrics.inFlightAdd(-1)
	timeout := admissionTimeout(req)
	ctx, cancel := context.WithTimeout(req.Context(), reviewDeadline(timeout))
	defer cancel()

	// A slot bounds the reviews read and decoded at once, and another the
	// judgements (Handler.slot): reading, decoding and judging a large CRD
	// are CPU and memory bound. The body is read only once the slot is
	// granted (a request waiting for one holds no buffer), and must then
	// arrive at once (bodyReader): a client that stalls or dribbles its
	// body loses the slot within BodyReadGrace. A review waiting for the
	// judgement it shares with others (flights) holds none.
	release, slotErr := h.slot(ctx)
	if slotErr != nil {
		// Waited for a slot until the deadline: answer without judging
		// (failMode decides), from the review's head alone.
		review, err := decodeReviewHead(h.bodyReader(w, req, MaxReviewHeadBytes))
		if err != nil {
			h.Reviewer.Metrics.failed(CauseDecode)
			writeText(w, http.StatusServiceUnavailable, slotErr.Error()+"; reading the review's head: "+err.Error())
			return
		}
		h.respond(w, review, h.Reviewer.Unjudged(review.Request, slotErr))
		return
	}
	body, err := readBody(h.bodyReader(w, req, MaxRequestBytes), req.ContentLength)
	if err != nil {
		release()
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeText(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooLarge.Limit))
		case errors.Is(err, os.ErrDeadlineExceeded):
			writeText(w, http.StatusRequestTimeout, "reading the request body: "+err.Error())
		default:
			writeText(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return
	}
	review, objs, err := decodeReview(body, h.crds)
	release()
	if err != nil {
		h.Reviewer.Metrics.failed(CauseDecode)
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	h.respond(w, review, h.Reviewer.review(ctx, review.Request, objs, h.flights, h.slot))
}

// respond writes the review's response.
func (h *Handler) respond(w http.ResponseWriter, review *admissionv1.AdmissionReview, resp *admissionv1.AdmissionResponse) {
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	data, err := json.Marshal(out)
	if err != nil {
		writeText(w, http.StatusInternalServerError, "encoding the response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// crdReview is an AdmissionReview whose objects decode as CRDs in the same
// pass as the review: decoding a review of a large CRD is most of the cost
// of judging it, and the generic review would scan each object twice more
// (as raw JSON, then into the CRD).
type crdReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *struct {
		admissionv1.AdmissionRequest `json:",inline"`
		// Object and OldObject shadow the request's raw objects.
		Object    *apiextv1.CustomResourceDefinition `json:"object,omitempty"`
		OldObject *apiextv1.CustomResourceDefinition `json:"oldObject,omitempty"`
	} `json:"request,omitempty"`
}

// decodeReview decodes an admission.k8s.io/v1 AdmissionReview with a
// request that has a uid, and the request's objects as CRDs (the old one
// from cache when it holds it: fastDecodeReview). When they do not decode
// as CRDs, the review is decoded as it is and objs.err says why (the
// review is then answered as one the webhook cannot judge).
func decodeReview(body []byte, cache *crdCache) (*admissionv1.AdmissionReview, objects, error) {
	review, objs, ok := fastDecodeReview(body, cache)
	if !ok {
		review, objs, ok = decodeReviewSlow(body)
		if !ok {
			return nil, objects{}, objs.err
		}
	}
	return review, objs, checkReview(review)
}

// decodeReviewSlow is decodeReview with encoding/json (sigs.k8s.io/json),
// for the bodies fastDecodeReview does not decode. When the body is not
// JSON, ok is false and objs.err says why.
func decodeReviewSlow(body []byte) (review *admissionv1.AdmissionReview, objs objects, ok bool) {
	var typed crdReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &typed); err == nil && typed.Request != nil {
		review = &admissionv1.AdmissionReview{TypeMeta: typed.TypeMeta, Request: &typed.Request.AdmissionRequest}
		objs = objects{newCRD: typed.Request.Object, oldCRD: typed.Request.OldObject}
		if objs.newCRD != nil {
			objs.err = checkCRD("object", objs.newCRD)
		}
		if objs.oldCRD != nil && objs.err == nil {
			objs.err = checkCRD("oldObject", objs.oldCRD)
		}
	} else {
		review = &admissionv1.AdmissionReview{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, review); err != nil {
			return nil, objects{err: fmt.Errorf("decoding the AdmissionReview: %w", err)}, false
		}
		if review.Request != nil {
			objs = objectsOf(review.Request)
		}
	}
	return review, objs, true
}

// checkReview checks that a decoded review is an admission.k8s.io/v1
// AdmissionReview with a request that has a uid.
func checkReview(review *admissionv1.AdmissionReview) error {
	gv := admissionv1.SchemeGroupVersion.String()
	switch {
	case review.APIVersion != gv || review.Kind != "AdmissionReview":
		return fmt.Errorf("expected a %s AdmissionReview, got apiVersion %q kind %q (set admissionReviewVersions: [v1])",
			gv, review.APIVersion, review.Kind)
	case review.Request == nil:
		return errors.New("the AdmissionReview has no request")
	case review.Request.UID == "":
		return errors.New("the AdmissionReview's request has no uid")
	}
	return nil
}

// admissionTimeout is the timeout the apiserver gives the call: its
// ?timeout= parameter, DefaultAdmissionTimeout when absent or invalid, at
// most MaxAdmissionTimeout.
func admissionTimeout(req *http.Request) time.Duration {
	t, err := time.ParseDuration(req.URL.Query().Get("timeout"))
	switch {
	case err != nil || t <= 0:
		return DefaultAdmissionTimeout
	case t > MaxAdmissionTimeout:
		return MaxAdmissionTimeout
	}
	return t
}

// reviewDeadline is how long a review of a call with the given timeout
// may take: the timeout less DeadlineMargin, or half of it when that is
// shorter.
func reviewDeadline(timeout time.Duration) time.Duration {
	if timeout <= 2*DeadlineMargin {
		return timeout / 2
	}
	return timeout - DeadlineMargin
}
