package kube

import (
	"errors"
	"testing"
)

// TestProxyErrorUnanswered: what the service proxy answers when it never
// reached a webhook (no answer, its own refusal, no Service, no ready
// endpoints) is no verdict of the webhook; any other status is.
func TestProxyErrorUnanswered(t *testing.T) {
	for code, want := range map[int]bool{0: true, 403: true, 404: true, 502: true, 503: true, 504: true, 400: false, 500: false, 422: false} {
		e := &ProxyError{Service: "ops/conv", Code: code, Err: errors.New("x")}
		if got := e.Unanswered(); got != want {
			t.Errorf("status %d: Unanswered() = %t, want %t", code, got, want)
		}
	}
}
