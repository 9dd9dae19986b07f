package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConversionProbeMigrate: `kapp tools crd-migrate-storage` probes the
// CRD's conversion webhook with the stored objects before it rewrites any
// (issue 39 item 2, docs/migrate.md). The Widgets stored at v1, the new
// CRD (v2 the storage version) applied with kubectl while a build of
// hack/convwebhook answers: with the lossy build the command stops before
// any write, naming spec.color and the objects, exit non-zero, every
// object as it was (read at v1, where it is stored: no conversion, the
// same resourceVersion) and status.storedVersions still [v1 v2]; with the
// lossless build it migrates.
func TestConversionProbeMigrate(t *testing.T) {
	t.Parallel()
	for _, build := range []string{buildLossless, buildLossy} {
		t.Run(build, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			n := newNames(t)
			e.widgetsAtV1(t, n)
			w := startConvWebhook(t, build, n)
			// Conversion None before the webhook stops (cleanups run last
			// first), as the probe tests do.
			e.conversionNoneAtCleanup(t, n)
			e.applyWidgetCRD(t, n, w)
			require.Eventually(t, func() bool { return len(e.storedVersions(t, n)) == 2 }, 30*time.Second, 200*time.Millisecond)

			raw := func() map[string]string { // name -> resourceVersion, read at v1 (stored there: as is)
				out := map[string]string{}
				for _, name := range widgetNames {
					obj, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Get(tctx(t), name, metav1.GetOptions{})
					require.NoError(t, err)
					out[name] = obj.GetResourceVersion()
				}
				return out
			}
			before := raw()

			r := e.migrate(t, "--crd", n.CRD, "-y")
			if build == buildLossless {
				require.Equalf(t, 0, r.exitCode, "the lossless webhook migrates:\n%s", r.out)
				require.Equal(t, []string{"v2"}, e.storedVersions(t, n))
				e.requireWidgetSpecsAtV1(t, n, "after the migration to v2")
				requireReviewed(t, w, "small", "v1", "v2")
				return
			}
			require.NotEqualf(t, 0, r.exitCode, "the lossy webhook stops the migration:\n%s", r.out)
			for _, token := range []string{"the conversion webhook is not safe for the stored objects: nothing rewritten",
				n.CRD, "spec.color", "default/half", "default/large"} {
				require.Containsf(t, r.out, token, "output:\n%s", r.out)
			}
			require.Equal(t, before, raw(), "no object rewritten: the same resourceVersions")
			require.Equal(t, []string{"v1", "v2"}, e.storedVersions(t, n), "status.storedVersions not trimmed")
			e.requireWidgetSpecsAtV1(t, n, "unchanged")
		})
	}
}
