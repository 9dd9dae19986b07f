package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The conversion probe of issue 39 (docs/checks.md, conversionWebhook) on
// the real apiserver, with the three builds of hack/convwebhook answering
// at the URL the new Widget CRD names (v2 becomes the storage version): the
// lossless update passes; the lossy one is blocked naming spec.color and
// the objects, the failing one naming the objects it cannot convert, with
// nothing applied; through kapp deploy's preflight, the admission webhook
// and the CI command.

// conversionCase is one build and what the probe must say of it.
type conversionCase struct {
	build string
	// tokens are in the conversionWebhook finding; none: the update passes.
	tokens []string
}

var conversionCases = []conversionCase{
	{build: buildLossless},
	// small, large, half and quarter hold spec.color; the first three by
	// name are named, with the count of the others.
	{build: buildLossy, tokens: []string{"^.spec.color", "data loss", "the new conversion webhook loses this field",
		"4 of 5 stored", "default/half, default/large, default/quarter and 1 more"}},
	// half and quarter hold a string in spec.replicas.
	{build: buildFailing, tokens: []string{"refuses to convert stored objects from v1 to v2", "2 of 5 stored", "default/half", "default/quarter"}},
}

// TestConversionProbeDeploy: kapp deploy --preflight=CRDUpgradeSafety
// probes the webhook the new CRD names with the stored objects before it
// applies anything (what TestConversionLossyIsNotYetBlocked recorded as
// the gap: the lossy update was applied and the objects read at v2
// without spec.color).
func TestConversionProbeDeploy(t *testing.T) {
	t.Parallel()
	for _, tc := range conversionCases {
		t.Run(tc.build, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			n := newNames(t)
			e.deployWidgetsAtV1(t, n)
			w := startConvWebhook(t, tc.build, n)
			// Conversion None before the webhook stops (cleanups run last
			// first): a CRD whose webhook is gone fails every LIST of it,
			// those of the other tests' ownerReferences included.
			e.conversionNoneAtCleanup(t, n)
			before := e.snapshot(t, n)

			newDir := dir(t, map[string][]byte{"crd.yaml": widgetNewCRD(t, n, w.URL, w.CABundle)})
			r := e.deploy(t, n.App, []string{newDir}, preflightFlag)
			if tc.tokens == nil {
				require.Equalf(t, 0, r.exitCode, "the lossless update passes:\n%s", r.out)
				spec, stored := e.crdVersions(t, n)
				require.Equal(t, []string{"v1", "v2"}, spec)
				require.Equal(t, []string{"v1", "v2"}, stored)
				requireReviewed(t, w, "small", "v1", "v2")
				return
			}
			requireBlocked(t, r)
			requireFinding(t, r.out, "conversionWebhook", tc.tokens...)
			e.requireUnchanged(t, n, before)
			spec, stored := e.crdVersions(t, n)
			require.Equal(t, []string{"v1"}, spec, "nothing applied")
			require.Equal(t, []string{"v1"}, stored)
			e.requireWidgetSpecsAtV1(t, n, "unchanged")
		})
	}
}

// TestConversionProbeWebhook: the admission webhook probes the new
// conversion webhook when a writer (here the dynamic client, as kubectl)
// updates the CRD to name it.
func TestConversionProbeWebhook(t *testing.T) {
	t.Parallel()
	for _, tc := range conversionCases {
		t.Run(tc.build, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			n := newNames(t)
			e.deployWidgetsAtV1(t, n)
			// Cleanups run last first: the admission webhook goes, then
			// conversion None (which it would deny: v1's spec.size is not
			// in v2), then the conversion webhook stops (a CRD whose
			// webhook is gone fails every LIST of it, other tests' too).
			w := startConvWebhook(t, tc.build, n)
			e.conversionNoneAtCleanup(t, n)
			p := e.startWebhook(t, "")
			e.registerWebhook(t, n, p.url(), p.cert.PEM, admissionregistrationv1.Fail)
			e.requireWebhookCalled(t, n, p)
			before := e.snapshot(t, n)

			err := e.updateCRDTo(t, n, widgetNewCRD(t, n, w.URL, w.CABundle))
			if tc.tokens == nil {
				require.NoError(t, err, "the lossless update passes the webhook")
				return
			}
			require.Error(t, err, "the webhook denies the update")
			t.Logf("denied: %v", err)
			for _, tok := range tc.tokens {
				require.Contains(t, err.Error(), tok)
			}
			e.requireUnchanged(t, n, before)
		})
	}
}

// TestConversionProbeCI: kapp tools crd-upgrade-safety with --objects
// samples and a conversion webhook run locally (--conversion-webhook-url,
// --conversion-webhook-ca-file), no cluster: exit status 3 and the
// findings for the lossy and failing builds, 0 for the lossless one.
func TestConversionProbeCI(t *testing.T) {
	t.Parallel()
	for _, tc := range conversionCases {
		t.Run(tc.build, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			n := newNames(t)
			w := startConvWebhook(t, tc.build, n)
			d := dir(t, map[string][]byte{
				"old.yaml":     n.render(t, "conversion/widget/old.yaml"),
				"new.yaml":     widgetNewCRD(t, n, "https://converter.example.com/convert", nil),
				"objects.yaml": n.render(t, "conversion/widget/objects.yaml"),
				"ca.pem":       w.CABundle,
			})
			r := e.kapp(t, "", "tools", "crd-upgrade-safety", "-f", filepath.Join(d, "old.yaml"), "--file2", filepath.Join(d, "new.yaml"),
				"--objects", filepath.Join(d, "objects.yaml"),
				"--conversion-webhook-url", w.URL, "--conversion-webhook-ca-file", filepath.Join(d, "ca.pem"), "--output", "markdown")
			if tc.tokens == nil {
				require.Equalf(t, 0, r.exitCode, "the lossless webhook passes:\n%s", r.out)
				requireReviewed(t, w, "small", "v1", "v2")
				return
			}
			require.Equalf(t, 3, r.exitCode, "an error finding:\n%s", r.out)
			// The impact counts samples, not stored objects.
			tokens := make([]string, len(tc.tokens))
			for i, tok := range tc.tokens {
				tokens[i] = strings.Replace(tok, " of 5 stored", " of 5 sample", 1)
			}
			requireFinding(t, r.out, "conversionWebhook", tokens...)
		})
	}
}

// updateCRDTo updates n's CRD to doc (a rendered CRD), as another writer
// than kapp would: the live object's resourceVersion and labels kept.
func (e *env) updateCRDTo(t *testing.T, n names, doc []byte) error {
	t.Helper()
	live := e.getCRD(t, n)
	require.NotNil(t, live)
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(doc, &obj.Object))
	obj.SetResourceVersion(live.GetResourceVersion())
	obj.SetLabels(live.GetLabels())
	obj.SetAnnotations(live.GetAnnotations())
	_, err := e.dyn.Resource(crdGVR).Update(tctx(t), obj, metav1.UpdateOptions{})
	return err
}
