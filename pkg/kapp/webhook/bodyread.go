package webhook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	admissionv1 "k8s.io/api/admission/v1"
	sigsjson "sigs.k8s.io/json"
)

// The pace a request's body must keep once it holds a review slot. The
// apiserver writes a review's body right after its headers, so it is in
// the socket's buffers, or arriving at the network's speed, by the time a
// slot is granted: megabytes in milliseconds. A client that stalls or
// dribbles its body (by mistake, or to hold the slots) is cut off, and the
// slot goes to the next request: a slot is held at most BodyReadGrace plus
// the body's size at MinBodyRate (4.5 s for the 16 MiB bound, 0.5 s for a
// body that never comes).
const (
	DefaultBodyReadGrace = 500 * time.Millisecond
	DefaultMinBodyRate   = 4 << 20 // bytes per second
)

// MaxReviewHeadBytes bounds what is read of a review that waited for a
// slot in vain (decodeReviewHead): the apiserver writes the request's uid,
// kind, name and operation before its objects.
const MaxReviewHeadBytes = 64 << 10

// bodyReader is the body of req, at most limit bytes, read under a read
// deadline that moves with the bytes received (paceReader): from now,
// BodyReadGrace plus what has arrived at MinBodyRate.
func (h *Handler) bodyReader(w http.ResponseWriter, req *http.Request, limit int64) io.Reader {
	grace, rate := h.BodyReadGrace, h.MinBodyRate
	if grace <= 0 {
		grace = DefaultBodyReadGrace
	}
	if rate <= 0 {
		rate = DefaultMinBodyRate
	}
	rc := http.NewResponseController(w)
	return &paceReader{r: http.MaxBytesReader(w, req.Body, limit), setDeadline: rc.SetReadDeadline,
		start: time.Now(), grace: grace, rate: rate}
}

// paceReader reads r with a read deadline (setDeadline: the connection's)
// of start + grace + n/rate before each read, n the bytes read so far: a
// body must start within grace and keep arriving at rate on average.
// Where the deadline cannot be set (a ResponseWriter without a
// connection, in tests), r is read as it is.
type paceReader struct {
	r           io.Reader
	setDeadline func(time.Time) error
	start       time.Time
	grace       time.Duration
	rate        int64
	n           int64
}

func (p *paceReader) Read(b []byte) (int, error) {
	earned := time.Duration(float64(p.n) / float64(p.rate) * float64(time.Second))
	if err := p.setDeadline(p.start.Add(p.grace + earned)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, fmt.Errorf("setting the read deadline: %w", err)
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}

// decodeReviewHead decodes the AdmissionReview of r without its objects:
// its apiVersion and kind, and the members of its request up to the first
// object (the apiserver writes uid, kind, resource, name, namespace,
// operation and userInfo first). It reads no further than the request's
// first object, within whatever bound r has, and keeps nothing of the
// objects: the head of a review answered without being judged (Unjudged).
func decodeReviewHead(r io.Reader) (*admissionv1.AdmissionReview, error) {
	dec := jsontext.NewDecoder(r)
	var top, request bytes.Buffer
	top.WriteByte('{')
	request.WriteByte('{')
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, fmt.Errorf("decoding the AdmissionReview: expected an object (%w)", err)
	}
	member := func(buf *bytes.Buffer, name string, value []byte) {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		quoted, _ := jsontext.AppendQuote(nil, name)
		buf.Write(quoted)
		buf.WriteByte(':')
		buf.Write(value)
	}
	inRequest, stop := false, false
	for !stop {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("decoding the AdmissionReview: %w", err)
		}
		if tok.Kind() == '}' {
			if !inRequest {
				break
			}
			inRequest = false
			continue
		}
		name := tok.String()
		switch {
		case inRequest && (name == "object" || name == "oldObject"):
			stop = true
		case !inRequest && name == "request":
			if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
				return nil, fmt.Errorf("decoding the AdmissionReview's request: expected an object (%w)", err)
			}
			inRequest = true
		case inRequest:
			v, err := dec.ReadValue()
			if err != nil {
				return nil, fmt.Errorf("decoding the AdmissionReview's request: %w", err)
			}
			member(&request, name, v)
		case name == "apiVersion" || name == "kind":
			v, err := dec.ReadValue()
			if err != nil {
				return nil, fmt.Errorf("decoding the AdmissionReview: %w", err)
			}
			member(&top, name, v)
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, fmt.Errorf("decoding the AdmissionReview: %w", err)
			}
		}
	}
	request.WriteByte('}')
	member(&top, "request", request.Bytes())
	top.WriteByte('}')
	review := &admissionv1.AdmissionReview{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(top.Bytes(), review); err != nil {
		return nil, fmt.Errorf("decoding the AdmissionReview's head: %w", err)
	}
	if err := checkReview(review); err != nil {
		return nil, err
	}
	return review, nil
}
