package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// converterRelease2 is the image of release 2's converter: the fake
// kubelet starts the conversion webhook only for pods of that image (the
// pods of release 1 stand for a release without it).
const converterRelease2 = "registry.example.com/converter:2"

// TestConversionAtApplyTime is issue 39's deploy that ships the new
// conversion webhook and the CRD together (docs/checks.md, "The new code in
// the same deploy"), on the real apiserver with crd-upgrade-safety's
// admission webhook registered as the shipped manifests name it. Release 1:
// the Widget CRD at v1 and a Deployment "converter" that serves no
// conversion webhook; objects stored. Release 2: the Deployment changed
// (kapp change group) and the CRD adding v2 as the storage version with a
// url conversion webhook (change rule: after the group); the fake kubelet
// starts the build at the CRD's URL when release 2's pod starts.
//
//   - lossless: the deploy passes; the preflight's verdict is the
//     apply-time warning (nothing answers the URL before the rollout); the
//     admission webhook's dry run took the apply-time mark, its write
//     probed the new code (a review of the five objects in one batch, which
//     the apiserver's own reads never send); the objects read at v2.
//   - lossy: the preflight passes with the same warning; kapp rolls the
//     Deployment out, then the admission webhook denies the CRD update
//     naming spec.color and the objects: the CRD keeps v1 only, the objects
//     keep spec.color, and the Deployment stays rolled out.
func TestConversionAtApplyTime(t *testing.T) {
	t.Parallel()
	for _, build := range []string{buildLossless, buildLossy} {
		t.Run(build, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			n := newNames(t)
			ns := n.App
			cert, err := webhooktest.WriteCert(t.TempDir())
			require.NoError(t, err)
			addr := freeLoopbackAddr(t)
			start, webhook := convWebhookOnStart(t, build, n, addr, cert)
			hook := func(ctx context.Context, pod *corev1.Pod) error {
				if pod.Spec.Containers[0].Image != converterRelease2 {
					return nil // release 1: no conversion webhook
				}
				return start(ctx, pod)
			}
			e.startFakeKubelet(t, ns, map[string]podHook{"converter": hook})
			e.cleanupApp(t, n.App)

			// Release 1.
			e.deployOK(t, n.App, []string{dir(t, map[string][]byte{
				"crd.yaml": n.render(t, "conversion/widget/old.yaml"),
				"app.yaml": converterDeployment(ns, nil),
			})})
			e.conversionNoneAtCleanup(t, n)
			e.createCRs(t, n, "conversion/widget/objects.yaml")
			p := e.startWebhook(t, "")
			e.registerWebhookNamed(t, n, kube.AdmissionWebhookName, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
			e.requireWebhookCalled(t, n, p)
			before := e.snapshot(t, n)

			// Release 2, ordered as conversionOrdering's remedy says.
			const groupName = "e2e.example.com/converter"
			crd := strings.Replace(string(widgetNewCRD(t, n, "https://"+addr+"/convert", cert.PEM)),
				"metadata:\n  name: "+n.CRD+"\n",
				"metadata:\n  name: "+n.CRD+"\n  annotations:\n    kapp.k14s.io/change-rule: \"upsert after upserting "+groupName+"\"\n", 1)
			require.Contains(t, crd, "change-rule")
			app := strings.Replace(string(converterDeployment(ns, map[string]string{"kapp.k14s.io/change-group": groupName})),
				"image: registry.k8s.io/pause:3.10", "image: "+converterRelease2, 1)
			require.Contains(t, app, converterRelease2)
			r := e.deploy(t, n.App, []string{dir(t, map[string][]byte{"crd.yaml": []byte(crd), "app.yaml": []byte(app)})}, preflightFlag)

			// The preflight: judged at apply time, a warning.
			requireFinding(t, r.out, "conversionWebhook", "Warning:", "conversion judged at apply time",
				"Deployment "+ns+"/converter, rolled out before the CRD changes",
				"ValidatingWebhookConfiguration e2e-") // the first by name (a parallel test registers its own)
			requireNoFinding(t, r.out, "conversionWebhook", "conversion not verified")
			require.NotNil(t, webhook(), "the rollout of release 2 started the conversion webhook")
			require.Equal(t, converterRelease2, e.converterImage(t, ns), "the Deployment rolled out")
			require.Regexp(t, reviewLine(n, true, true), p.log.String(), "the preflight's dry run: allowed, the apply-time warning")

			if build == buildLossless {
				require.Equalf(t, 0, r.exitCode, "the lossless update passes:\n%s", r.out)
				rolledOut := strings.Index(r.out, "ok: reconcile deployment/converter")
				crdUpdated := strings.Index(r.out, "update customresourcedefinition/"+n.CRD)
				require.True(t, rolledOut >= 0 && crdUpdated > rolledOut, "kapp rolls the webhook out before it updates the CRD:\n%s", r.out)
				require.Regexp(t, reviewLine(n, false, true), p.log.String(), "the apply: allowed")
				requireBatchReviewed(t, webhook(), len(widgetNames))
				spec, stored := e.crdVersions(t, n)
				require.Equal(t, []string{"v1", "v2"}, spec)
				require.Equal(t, []string{"v1", "v2"}, stored)
				list, err := e.dyn.Resource(n.gvr("v2")).Namespace("default").List(tctx(t), metav1.ListOptions{})
				require.NoError(t, err)
				require.Len(t, list.Items, len(widgetNames))
				return
			}
			require.NotEqual(t, 0, r.exitCode, "the admission webhook denies the CRD update:\n%s", r.out)
			for _, tok := range []string{"denied the request", "^.spec.color", "data loss", "default/half, default/large, default/quarter and 1 more"} {
				require.Contains(t, r.out, tok)
			}
			require.Regexp(t, reviewLine(n, false, false), p.log.String(), "the apply: denied")
			requireBatchReviewed(t, webhook(), len(widgetNames))
			e.requireUnchanged(t, n, before)
			spec, stored := e.crdVersions(t, n)
			require.Equal(t, []string{"v1"}, spec, "the CRD update was denied")
			require.Equal(t, []string{"v1"}, stored)
			e.requireWidgetSpecsAtV1(t, n, "keeps its fields")
		})
	}
}

// reviewLine matches the admission webhook's log line of an UPDATE of n's
// CRD it judged: the dry run allowed with one warning (the apply-time
// verdict), the write allowed without findings, or the write denied.
func reviewLine(n names, dryRun, allowed bool) *regexp.Regexp {
	verdict := `dryRun=false allowed=false errors=[1-9]`
	switch {
	case dryRun:
		verdict = `dryRun=true allowed=true errors=0 warnings=1 `
	case allowed:
		verdict = `dryRun=false allowed=true errors=0 warnings=0 `
	}
	return regexp.MustCompile(`review uid=\S+ op=UPDATE crd=` + regexp.QuoteMeta(n.CRD) + ` user="[^"]*" ` + verdict)
}

// requireBatchReviewed asserts the conversion webhook answered a review of
// objects stored objects at once: the probe's batch (the apiserver converts
// what it reads from storage one object per review).
func requireBatchReviewed(t *testing.T, w *convWebhook, objects int) {
	t.Helper()
	want := regexp.MustCompile(`^review \S+: ` + strconv.Itoa(objects) + ` objects \(`)
	for _, r := range w.reviews() {
		if want.MatchString(r) {
			return
		}
	}
	t.Fatalf("no review of %d objects at once (the admission webhook's probe); the webhook's reviews:\n%s", objects, strings.Join(w.reviews(), "\n"))
}

// converterImage is the image of the Deployment "converter" of namespace ns.
func (e *env) converterImage(t *testing.T, ns string) string {
	t.Helper()
	d, err := e.core.AppsV1().Deployments(ns).Get(tctx(t), "converter", metav1.GetOptions{})
	require.NoError(t, err)
	return d.Spec.Template.Spec.Containers[0].Image
}
