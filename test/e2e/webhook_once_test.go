package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestWebhookDenialSaidOnce (issue 38 item 5): with the CRDUpgradeSafety
// admission webhook installed, a deploy with the preflight of an update
// the webhook denies (a storagePruning update) is blocked by the
// preflight's own findings, each said once: the webhook denies the
// preflight's server-side dry run, and the preflight recognises the
// denial by the findings it carries as data (status causes, kept by the
// apiserver), not by its words, and repeats none of them.
func TestWebhookDenialSaidOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "storagepruning/1-v1beta1.yaml")}, preflightFlag)
	p := e.startWebhook(t, "")
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	e.requireWebhookCalled(t, n, p)
	before := e.snapshot(t, n)

	r := e.deploy(t, n.App, []string{crdDir(t, n, "storagepruning/2-v1beta3.yaml", n.marker())}, preflightFlag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "storagePruning", "v1beta3", "^.spec.accessPolicy",
		"pruned from every write through v1beta3: the storage version v1beta1 does not declare it")
	e.requireUnchanged(t, n, before)

	// The webhook did deny the dry run of the update.
	require.Regexp(t, `op=UPDATE crd=`+regexp.QuoteMeta(n.CRD)+` user="[^"]*" dryRun=true allowed=false errors=[1-9]`, p.log.String())
	// Each finding once in kapp's error, none inside a quote of the denial.
	fps := regexp.MustCompile(`\[fp:[0-9a-f]{12}\]`).FindAllString(r.out, -1)
	require.NotEmpty(t, fps, r.out)
	seen := map[string]int{}
	for _, fp := range fps {
		seen[fp]++
	}
	for fp, times := range seen {
		require.Equalf(t, 1, times, "%s %d times in kapp's output:\n%s", fp, times, r.out)
	}
	require.NotContains(t, r.out, "apiserverRejects", r.out)
	require.False(t, strings.Contains(r.out, "denied the request"), "the webhook's denial is not quoted:\n%s", r.out)
}
