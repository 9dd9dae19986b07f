package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Poster posts a body to one address and returns the answer's body: a
// conversion webhook's transport (conversion.Transport has this method).
type Poster interface {
	Post(ctx context.Context, body []byte) ([]byte, error)
}

// ErrNoREST: the Client has no REST client to reach a Service through the
// apiserver's proxy with.
var ErrNoREST = errors.New("the client has no REST client for the apiserver's service proxy")

// ServiceProxy returns a Poster that reaches path of the Service
// namespace/name on port through the apiserver's service proxy
// (/api/v1/namespaces/<ns>/services/https:<name>:<port>/proxy<path>), with
// the client's credentials: the apiserver dials the Service as it would
// dial a webhook, but does not verify its certificate against a CA bundle.
// It needs create on services/proxy in the namespace.
func (c *Client) ServiceProxy(_ context.Context, namespace, name string, port int32, path string) (Poster, error) {
	if c.REST == nil {
		return nil, ErrNoREST
	}
	return &serviceProxy{rest: c.REST, namespace: namespace, name: name,
		path: "/api/v1/namespaces/" + namespace + "/services/https:" + name + ":" + strconv.Itoa(int(port)) + "/proxy" + path}, nil
}

type serviceProxy struct {
	rest            rest.Interface
	namespace, name string
	path            string
}

func (p *serviceProxy) Post(ctx context.Context, body []byte) ([]byte, error) {
	res := p.rest.Post().AbsPath(p.path).
		SetHeader("Content-Type", runtime.ContentTypeJSON).
		SetHeader("Accept", runtime.ContentTypeJSON).
		Body(body).Do(ctx)
	raw, err := res.Raw()
	if err == nil {
		return raw, nil
	}
	var code int
	res.StatusCode(&code)
	return nil, &ProxyError{Service: p.namespace + "/" + p.name, Code: code, Err: err}
}

// ProxyError is a request through the service proxy that did not succeed:
// Code is the HTTP status (0: no answer). Unanswered tells the conversion
// probe whether the Service's webhook was reached at all.
type ProxyError struct {
	Service string
	Code    int
	Err     error
}

func (e *ProxyError) Error() string {
	return fmt.Sprintf("through the apiserver's service proxy to service %s: %v", e.Service, e.Err)
}

func (e *ProxyError) Unwrap() error { return e.Err }

// Unanswered: the request never reached a webhook that answers: no
// answer, the proxy's own refusal (403: the identity may not create
// services/proxy; 404: no such Service, or nothing at its path), or a
// gateway status (502, 503: no ready endpoints, 504).
func (e *ProxyError) Unanswered() bool {
	switch e.Code {
	case 0, http.StatusForbidden, http.StatusNotFound, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
