package conversion

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestEndpointFor(t *testing.T) {
	port := int32(8443)
	path := "/convert"
	url := "https://hooks.example.com/c"
	cases := []struct {
		name  string
		conv  *apiextv1.CustomResourceConversion
		want  Endpoint
		errIs error
	}{
		{name: "url: the ca bundle as given", conv: &apiextv1.CustomResourceConversion{Strategy: "Webhook", Webhook: &apiextv1.WebhookConversion{
			ClientConfig: &apiextv1.WebhookClientConfig{URL: &url, CABundle: []byte("pem")}}},
			want: Endpoint{URL: url, CABundle: []byte("pem")}},
		{name: "a whitespace-only ca bundle is none", conv: &apiextv1.CustomResourceConversion{Strategy: "Webhook", Webhook: &apiextv1.WebhookConversion{
			ClientConfig: &apiextv1.WebhookClientConfig{URL: &url, CABundle: []byte(" \n")}}},
			want: Endpoint{URL: url}},
		{name: "service: the server name the apiserver checks", conv: &apiextv1.CustomResourceConversion{Strategy: "Webhook", Webhook: &apiextv1.WebhookConversion{
			ClientConfig: &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "sys", Name: "hook", Port: &port, Path: &path}}}},
			want: Endpoint{URL: "https://hook.sys.svc:8443/convert", ServerName: "hook.sys.svc",
				Service: &Service{Namespace: "sys", Name: "hook", Port: 8443, Path: "/convert"}}},
		{name: "service without a port: 443", conv: &apiextv1.CustomResourceConversion{Strategy: "Webhook", Webhook: &apiextv1.WebhookConversion{
			ClientConfig: &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "sys", Name: "hook"}}}},
			want: Endpoint{URL: "https://hook.sys.svc:443", ServerName: "hook.sys.svc",
				Service: &Service{Namespace: "sys", Name: "hook", Port: 443}}},
		{name: "strategy None", conv: &apiextv1.CustomResourceConversion{Strategy: "None"}, errIs: ErrNoWebhook},
		{name: "no conversion", errIs: ErrNoWebhook},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{Conversion: tc.conv}}
			got, err := EndpointFor(crd)
			if !errors.Is(err, tc.errIs) {
				t.Fatalf("error %v, want %v", err, tc.errIs)
			}
			if err == nil && (got.URL != tc.want.URL || got.ServerName != tc.want.ServerName || string(got.CABundle) != string(tc.want.CABundle) ||
				(got.Service == nil) != (tc.want.Service == nil) || (got.Service != nil && *got.Service != *tc.want.Service)) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTransport(t *testing.T) {
	h := &hook{}
	_, ep := serve(t, h)
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v2","objects":[]}}`

	// The CA bundle is checked: without it the loopback certificate is
	// not trusted.
	noCA := ep
	noCA.CABundle = nil
	tr, err := noCA.Transport()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Post(context.Background(), []byte(review)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the ca bundle: error %v, want a certificate error", err)
	}
	// A server name the certificate does not hold is refused.
	wrongName := ep
	wrongName.ServerName = "hook.sys.svc"
	tr, _ = wrongName.Transport()
	if _, err := tr.Post(context.Background(), []byte(review)); err == nil {
		t.Error("a server name the certificate lacks was accepted")
	}
	tr, _ = ep.Transport()
	if _, err := tr.Post(context.Background(), []byte(review)); err != nil {
		t.Errorf("with the ca bundle: %v", err)
	}

	// http URLs are refused; a service needs a round tripper.
	if _, err := (Endpoint{URL: "http://127.0.0.1:1/"}).Transport(); err == nil {
		t.Error("an http url was accepted")
	}
	if _, err := (Endpoint{URL: "https://hook.sys.svc:443", Service: &Service{}}).Transport(); !errors.Is(err, ErrServiceNeedsRoundTripper) {
		t.Errorf("service without round tripper: %v", err)
	}

	// The seam: a round tripper of the caller's (here: plain http to a
	// proxy path, as the apiserver's service proxy is reached).
	var proxied string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied = r.URL.Path
		h.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	seam := Endpoint{URL: proxy.URL + "/api/v1/namespaces/sys/services/https:hook:443/proxy/convert", RoundTripper: http.DefaultTransport}
	tr, err = seam.Transport()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Post(context.Background(), []byte(review)); err != nil {
		t.Fatal(err)
	}
	if proxied != "/api/v1/namespaces/sys/services/https:hook:443/proxy/convert" {
		t.Errorf("proxied to %q", proxied)
	}

	// A non-2xx answer is a StatusError.
	h.HttpStatus = 503
	tr, _ = ep.Transport()
	var se *StatusError
	if _, err := tr.Post(context.Background(), []byte(review)); !errors.As(err, &se) || se.Code != 503 {
		t.Errorf("error %v, want a StatusError 503", err)
	}
}
