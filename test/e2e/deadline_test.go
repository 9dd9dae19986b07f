package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLiveChecksTimeoutFailsClosed: the apiserver accepts the LIST of the
// existingResources check and never answers. The check gives up after
// liveChecksTimeout (from a kapp Config among the deployed files) and
// blocks the deploy with an error naming the CRD and what was waiting;
// nothing is applied. The change itself is safe, so only the deadline can
// explain the failure.
func TestLiveChecksTimeoutFailsClosed(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	before := e.snapshot(t, n)

	// The check's own LIST: cluster-wide, paged (limit), no label selector
	// (kapp's listings of its app's resources select by label).
	listCRs := regexp.MustCompile(`^/apis/` + regexp.QuoteMeta(group) + `/[^/]+/` + regexp.QuoteMeta(n.Plural) + `$`)
	proxy := newStallingProxy(t, e, func(r *http.Request) bool {
		q := r.URL.Query()
		return r.Method == http.MethodGet && listCRs.MatchString(r.URL.Path) &&
			q.Get("watch") == "" && q.Get("labelSelector") == "" && q.Get("limit") != ""
	})
	kc := proxy.kubeconfig(t, e)
	cfg := []byte(`apiVersion: kapp.k14s.io/v1alpha1
kind: Config
preflightRules:
- name: CRDUpgradeSafety
  config:
    liveChecksTimeout: 3s
`)

	r := e.deploy(t, n.App, []string{crdDir(t, n, "safe/new.yaml", n.marker(), cfg)}, preflightFlag, "--kubeconfig", kc)
	t.Logf("requests through the proxy:\n%s", indent(fmt.Sprint(proxy.log())))
	requireBlocked(t, r)
	require.Contains(t, r.out, "listing "+n.Plural+" of CRD "+n.CRD+" at version v1: "+
		"deadline of 3s (liveChecksTimeout) exceeded before the first page")
	e.requireUnchanged(t, n, before)
}
