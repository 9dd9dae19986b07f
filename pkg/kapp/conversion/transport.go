package conversion

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// DefaultRequestTimeout bounds one review, as the apiserver bounds a
// conversion webhook call (k8s.io/apiserver/pkg/util/webhook:
// setGlobalDefaults).
const DefaultRequestTimeout = 30 * time.Second

// maxResponseBytes bounds a webhook's answer the probe reads.
const maxResponseBytes = 256 << 20

// ErrNoWebhook: the CRD does not convert through a webhook.
var ErrNoWebhook = errors.New("crd has no conversion webhook")

// ErrServiceNeedsRoundTripper: an Endpoint naming a service has no way to
// reach it; the caller passes a RoundTripper (the live run: the apiserver's
// service proxy).
var ErrServiceNeedsRoundTripper = errors.New("a service webhook needs a round tripper that reaches the service")

// Transport posts one ConversionReview (JSON) and returns the answer's body.
// A non-2xx answer or a failed call is an error: the apiserver treats both
// as a failed conversion.
type Transport interface {
	Post(ctx context.Context, review []byte) ([]byte, error)
}

// Service names a webhook served by a Service, as in a CRD's clientConfig.
type Service struct {
	Namespace, Name string
	Port            int32
	Path            string
}

// Endpoint is where the probe sends reviews.
//
// For a URL webhook it holds the URL and the CA bundle of the CRD's
// clientConfig, and the TLS server name is the URL's host, as the apiserver
// dials it. For a service webhook the apiserver dials
// <name>.<namespace>.svc:<port> and checks the certificate against that
// name (ServerName); the probe cannot resolve cluster services itself, so
// the caller passes a RoundTripper that reaches the service.
//
// The seam for the live run: set URL to the apiserver's service proxy
// (/api/v1/namespaces/<ns>/services/https:<name>:<port>/proxy/<path>) and
// RoundTripper to the transport of the cluster's rest config. The apiserver
// then dials the service and does not verify its certificate: CABundle and
// ServerName are not checked on that path, and callers say so.
type Endpoint struct {
	URL        string
	Service    *Service
	CABundle   []byte
	ServerName string
	// RoundTripper, when set, replaces the TLS transport built from
	// CABundle and ServerName.
	RoundTripper http.RoundTripper
	// Timeout bounds one review; 0 means DefaultRequestTimeout.
	Timeout time.Duration
}

// EndpointFor returns the endpoint the CRD's conversion webhook names, as
// the apiserver reads it (webhookClientConfigForCRD): a whitespace-only CA
// bundle counts as none, a service without a port is on 443.
func EndpointFor(crd *apiextv1.CustomResourceDefinition) (Endpoint, error) {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return Endpoint{}, fmt.Errorf("crd %s: %w", crd.Name, ErrNoWebhook)
	}
	cc := c.Webhook.ClientConfig
	ep := Endpoint{CABundle: cc.CABundle}
	if len(bytes.TrimSpace(ep.CABundle)) == 0 {
		ep.CABundle = nil
	}
	switch {
	case cc.URL != nil:
		ep.URL = *cc.URL
	case cc.Service != nil:
		s := &Service{Namespace: cc.Service.Namespace, Name: cc.Service.Name, Port: 443}
		if cc.Service.Port != nil && *cc.Service.Port != 0 {
			s.Port = *cc.Service.Port
		}
		if cc.Service.Path != nil {
			s.Path = *cc.Service.Path
		}
		ep.Service = s
		ep.ServerName = s.Name + "." + s.Namespace + ".svc"
		ep.URL = "https://" + net.JoinHostPort(ep.ServerName, strconv.Itoa(int(s.Port))) + s.Path
	default:
		return Endpoint{}, fmt.Errorf("crd %s: webhook client config has neither url nor service: %w", crd.Name, ErrNoWebhook)
	}
	return ep, nil
}

// Transport builds the HTTP transport of the endpoint.
func (e Endpoint) Transport() (Transport, error) {
	u, err := url.Parse(e.URL)
	if err != nil {
		return nil, fmt.Errorf("webhook url: %w", err)
	}
	if u.Scheme != "https" && e.RoundTripper == nil {
		return nil, fmt.Errorf("webhook url %q: the apiserver calls webhooks over https only", e.URL)
	}
	rt := e.RoundTripper
	if rt == nil {
		if e.Service != nil {
			return nil, ErrServiceNeedsRoundTripper
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: e.ServerName}
		if len(e.CABundle) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(e.CABundle) {
				return nil, errors.New("webhook ca bundle holds no pem certificate")
			}
			cfg.RootCAs = pool
		}
		rt = &http.Transport{
			TLSClientConfig:     cfg,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     90 * time.Second,
			Proxy:               http.ProxyFromEnvironment,
		}
	}
	timeout := e.Timeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	return &httpTransport{url: u.String(), client: &http.Client{Transport: rt, Timeout: timeout}}, nil
}

type httpTransport struct {
	url    string
	client *http.Client
}

func (t *httpTransport) Post(ctx context.Context, review []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(review))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, &unansweredError{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the webhook's answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(string(body[:min(len(body), 512)]))}
	}
	return body, nil
}

// StatusError is a webhook answer with a non-2xx HTTP status.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("webhook answered http status %d: %s", e.Code, e.Body)
}

// Unanswered reports whether the webhook got no review delivered: a
// transport failure, or a gateway status (502, 503, 504: a proxy or a load
// balancer that could not reach it, as the apiserver's service proxy
// answers for a Service without ready endpoints). Any error in err's chain
// with a method Unanswered() bool decides (a caller's Transport marks its
// own errors so).
func Unanswered(err error) bool {
	var u interface{ Unanswered() bool }
	return errors.As(err, &u) && u.Unanswered()
}

// Unanswered: a gateway status says the webhook was not reached.
func (e *StatusError) Unanswered() bool {
	return e.Code == http.StatusBadGateway || e.Code == http.StatusServiceUnavailable || e.Code == http.StatusGatewayTimeout
}

// unansweredError is a review the transport could not deliver.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string    { return e.err.Error() }
func (e *unansweredError) Unwrap() error    { return e.err }
func (e *unansweredError) Unanswered() bool { return true }
