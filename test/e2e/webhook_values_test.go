package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWebhookWithholdsStoredValues (issue 37 item 3): `kubectl apply` of a
// CRD whose new pattern refuses a secret-like token a stored custom
// resource holds is denied by the webhook naming the object, the field
// and the rule, without the token (the webhook answers whoever reaches
// it); with webhook.revealStoredValues in its settings the token is in
// the denial. Nothing changes either way.
func TestWebhookWithholdsStoredValues(t *testing.T) {
	t.Parallel()
	const token = "s3cr3t-e2e-t0ken-7f3a"
	for _, tc := range []struct {
		name, settings string
		reveal         bool
	}{
		{"by default", "", false},
		{"revealStoredValues", "webhook:\n  revealStoredValues: true\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, n, p := webhookApp(t, tc.settings)
			e.createCRs(t, n, "impact/token-crs.yaml")
			before := e.snapshot(t, n)

			var out string
			if kubectl := os.Getenv("KUBECTL"); kubectl != "" {
				path := filepath.Join(t.TempDir(), "crd.yaml")
				require.NoError(t, os.WriteFile(path, n.render(t, "impact/title-pattern.yaml"), 0o600))
				b, err := exec.Command(kubectl, "--kubeconfig", e.kubeconfig, "apply", "-f", path).CombinedOutput()
				out = string(b)
				t.Logf("$ kubectl apply -f impact/title-pattern.yaml\n%s", indent(out))
				require.Error(t, err)
			} else {
				_, err := e.updateCRD(t, n, "impact/title-pattern.yaml", false, nil)
				require.Error(t, err)
				out = err.Error()
			}
			require.Contains(t, out, webhookDenial+n.CRD)
			requireFinding(t, out, "pattern", n.CRD, "v1", "^.spec.title", "default/token-holder (Invalid value")
			if tc.reveal {
				require.Contains(t, out, token)
			} else {
				require.NotContains(t, out, token)
				require.NotContains(t, p.log.String(), token, "the webhook's log")
			}
			e.requireUnchanged(t, n, before)
		})
	}
}
