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

// TestWebhookDenialSaidOnceOnReplace (issue 38 item 5): with the
// webhook installed, a deploy with update strategy always-replace (kapp
// deletes and recreates the CRD) is blocked by the preflight's crdDeletion
// finding of the replace, said once: the webhook denies the preflight's
// server-side dry run of the delete as a deletion (another fingerprint,
// the same loss seen from the delete side), and the preflight recognises
// that finding by its facts (the same CRD, crdDeletion) and repeats it
// nowhere.
func TestWebhookDenialSaidOnceOnReplace(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	p := e.startWebhook(t, "")
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	e.requireWebhookCalled(t, n, p)
	before := e.snapshot(t, n)
	require.Len(t, before.CRs, 2)

	crd := withUpdateStrategy(t, n, n.render(t, "safe/new.yaml"), "always-replace")
	r := e.deploy(t, n.App, []string{dir(t, map[string][]byte{"crd.yaml": crd, "marker.yaml": n.marker()})}, preflightFlag)
	requireBlocked(t, r)
	requireFinding(t, r.out, "crdDeletion", n.CRD,
		"update strategy always-replace: kapp would delete and recreate the CRD, deleting its 2 existing custom resources")
	e.requireUnchanged(t, n, before)

	// The webhook did deny the dry run of the delete.
	require.Regexp(t, `op=DELETE crd=`+regexp.QuoteMeta(n.CRD)+` user="[^"]*" dryRun=true allowed=false errors=1`, p.log.String())
	// The loss once in kapp's output: one crdDeletion finding, no
	// apiserverRejects, no quote of the webhook's deletion.
	require.Equal(t, 1, strings.Count(r.out, "[crdDeletion]"), r.out)
	require.NotContains(t, r.out, "apiserverRejects", r.out)
	require.NotContains(t, r.out, "deleting the CRD would delete", r.out)
	require.False(t, strings.Contains(r.out, "denied the request"), "the webhook's denial is not quoted:\n%s", r.out)
}

// TestWebhookDenialStricterSaidWhy (issue 38 item 5): a finding the
// preflight waives (a waiver by fingerprint in its Config) but the webhook,
// whose settings have no such waiver, denies is listed once, inside one
// apiserverRejects finding that labels the webhook's fingerprint and says
// why: an error under the webhook's settings, a warning here, exempted.
// The line ends with one fingerprint, its own.
func TestWebhookDenialStricterSaidWhy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	e.appWithCRs(t, n, "base/crd.yaml", "base/crs.yaml")
	p := e.startWebhook(t, "")
	e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
	e.requireWebhookCalled(t, n, p)
	before := e.snapshot(t, n)
	crd := dir(t, map[string][]byte{"crd.yaml": n.render(t, "unsafe/enum-value-removed/new.yaml"), "marker.yaml": n.marker()})

	// The same settings: the enum finding once, the preflight's own.
	r := e.deploy(t, n.App, []string{crd}, preflightFlag)
	requireBlocked(t, r)
	line, ok := findingLine(r.out, "enum", n.CRD, "^.spec.color")
	require.True(t, ok, r.out)
	fp := regexp.MustCompile(`\[fp:([0-9a-f]{12})\]`).FindStringSubmatch(line)
	require.NotNil(t, fp, line)
	require.NotContains(t, r.out, "apiserverRejects", r.out)

	// Waived by the preflight's Config, not by the webhook's settings.
	cfg := strings.ReplaceAll(string(n.render(t, "configs/waive-fingerprint.yaml")), "__FP__", fp[1])
	r = e.deploy(t, n.App, []string{crd, dir(t, map[string][]byte{"config.yaml": []byte(cfg)})})
	requireBlocked(t, r)
	e.requireUnchanged(t, n, before)
	require.Regexp(t, `op=UPDATE crd=`+regexp.QuoteMeta(n.CRD)+` user="[^"]*" dryRun=true allowed=false errors=1`, p.log.String())
	rejects, ok := findingLine(r.out, "apiserverRejects", n.CRD, "webhook finding "+fp[1])
	require.True(t, ok, r.out)
	require.Contains(t, rejects, "the CRDUpgradeSafety admission webhook denies the update (server-side dry run) for 1 finding this check does not report as an error: ")
	require.Contains(t, rejects, "(webhook finding "+fp[1]+": an error under the webhook's settings; under this check's a warning, exempted: reviewed in e2e")
	require.Len(t, regexp.MustCompile(`\[fp:[0-9a-f]{12}\]`).FindAllString(rejects, -1), 1, "one fingerprint, its own: %s", rejects)
	require.False(t, strings.Contains(r.out, "denied the request"), "the webhook's denial is not quoted:\n%s", r.out)
}
