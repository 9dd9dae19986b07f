package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The field removal of unsafe/field-removed loses pollInterval, which one
// of the two base custom resources (first) holds: a loss of stored data
// of 1 object. Written with waiver annotations on the CRD itself that
// name the checks of that loss, it is what issue 37 found passing every
// guard: the object under review waiving its own findings.

// selfWaiverAnnotations waive the field removal's checks on the CRD that
// removes the field.
var selfWaiverAnnotations = map[string]string{
	config.WaiveAnnotation:       "existingFieldRemoval,existingResources",
	config.WaiveReasonAnnotation: "trust me",
}

// selfWaivedFieldRemoval is the field removal with selfWaiverAnnotations
// in its metadata.
func selfWaivedFieldRemoval(t *testing.T, n names) []byte {
	t.Helper()
	doc := string(n.render(t, "unsafe/field-removed/new.yaml"))
	head := "metadata:\n  name: " + n.CRD + "\n"
	require.Contains(t, doc, head)
	ann := head + "  annotations:\n"
	for _, k := range []string{config.WaiveAnnotation, config.WaiveReasonAnnotation} {
		ann += fmt.Sprintf("    %s: %q\n", k, selfWaiverAnnotations[k])
	}
	return []byte(strings.Replace(doc, head, ann, 1))
}

// acceptPollInterval is the acceptDataLoss entry of the loss, for at most
// objects objects, as a settings file's (indent 0) or a kapp Config's.
func acceptPollInterval(n names, objects int, indent string) string {
	return strings.ReplaceAll(fmt.Sprintf(`acceptDataLoss:
- crd: %s
  check: existingFieldRemoval
  version: v1
  path: ^.spec.pollInterval
  objects: %d
  reason: pollInterval retired (e2e)
  expires: "2999-12-31"
`, n.CRD, objects), "\n", "\n"+indent)
}

const (
	refusedSelfWaiver = "not exempted: a waiver annotation cannot waive a loss of stored data"
	acceptedLoss      = "(data loss accepted: pollInterval retired (e2e); at most 1 object; until 2999-12-31)"
)

// TestSelfWaivedFieldRemovalDeploy: kapp deploy --preflight of a field
// removal whose CRD waives its own findings is blocked, the cluster
// unchanged, and the way forward names the acceptDataLoss entry; a kapp
// Config that accepts the loss for fewer objects than hold the field is
// blocked too; one that accepts exactly that loss lets it pass.
func TestSelfWaivedFieldRemovalDeploy(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	before := e.appWithCRs(t, n, "base/crd.yaml", "base/crs.yaml")
	crd := dir(t, map[string][]byte{"crd.yaml": selfWaivedFieldRemoval(t, n), "marker.yaml": n.marker()})
	kappConfig := func(objects int) string {
		return dir(t, map[string][]byte{"config.yaml": []byte(`apiVersion: kapp.k14s.io/v1alpha1
kind: Config
preflightRules:
- name: CRDUpgradeSafety
  config:
    ` + acceptPollInterval(n, objects, "    "))})
	}

	r := e.deploy(t, n.App, []string{crd}, preflightFlag)
	require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail:\n%s", r.out)
	require.Contains(t, r.out, blockedError)
	requireFinding(t, r.out, "existingFieldRemoval", n.CRD, "^.spec.pollInterval", refusedSelfWaiver)
	require.Contains(t, r.out, "acceptDataLoss: [{crd: "+n.CRD+", check: existingFieldRemoval, version: v1, path: \"^.spec.pollInterval\", objects: 1,")
	e.requireUnchanged(t, n, before)

	r = e.deploy(t, n.App, []string{crd, kappConfig(0)})
	require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail:\n%s", r.out)
	requireFinding(t, r.out, "existingFieldRemoval", n.CRD, "not accepted: the loss affects 1 object, more than the 0 accepted")
	e.requireUnchanged(t, n, before)

	r = e.deploy(t, n.App, []string{crd, kappConfig(1)})
	require.Equalf(t, 0, r.exitCode, "the accepted loss was blocked:\n%s", r.out)
	require.Contains(t, r.out, acceptedLoss)
	require.NotContains(t, e.crdSchemaJSON(t, n, "v1"), `"pollInterval"`, "the accepted change was not applied")
}

// TestWebhookSelfWaivedFieldRemoval: kubectl apply of the self-waiving
// field removal is denied by the webhook as registered in the suite, with
// its default settings and with settings that let annotations waive both
// checks: no annotation passes a loss of stored data. The cluster is
// unchanged.
func TestWebhookSelfWaivedFieldRemoval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, settings string }{
		{"default settings", ""},
		{"annotations allowed for the checks", "annotationWaivers:\n  checks: [existingFieldRemoval, existingResources]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, n, _ := webhookApp(t, tc.settings)
			before := e.snapshot(t, n)
			out, err := e.kubectlApply(t, selfWaivedFieldRemoval(t, n))
			if err == errNoKubectl {
				// Another writer than kapp, as kubectl's update is.
				_, err = e.updateCRD(t, n, "unsafe/field-removed/new.yaml", false, selfWaiverAnnotations)
				require.Error(t, err)
				require.True(t, apierrors.IsForbidden(err), err)
				out = err.Error()
			} else {
				require.Error(t, err, out)
			}
			require.Contains(t, out, "CRDUpgradeSafety denied the update of CRD "+n.CRD)
			requireFinding(t, out, "existingFieldRemoval", n.CRD, "^.spec.pollInterval", refusedSelfWaiver)
			e.requireUnchanged(t, n, before)
		})
	}
}

// TestWebhookAcceptDataLoss: the webhook's settings accept the loss: for
// exactly the objects that hold the field the update passes, with a
// warning that says so; for fewer, it is denied.
func TestWebhookAcceptDataLoss(t *testing.T) {
	t.Parallel()
	for _, objects := range []int{0, 1} {
		t.Run(fmt.Sprintf("objects-%d", objects), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			n := newNames(t)
			e.cleanupApp(t, n.App)
			e.deployOK(t, n.App, []string{crdDir(t, n, "base/crd.yaml")})
			e.createCRs(t, n, "base/crs.yaml")
			p := e.startWebhook(t, acceptPollInterval(n, objects, ""))
			e.registerWebhook(t, n, p.url(), p.cert.PEM, "Fail")
			e.requireWebhookCalled(t, n, p)
			before := e.snapshot(t, n)

			warnings, err := e.updateCRD(t, n, "unsafe/field-removed/new.yaml", false, selfWaiverAnnotations)
			if objects == 0 {
				require.Error(t, err)
				require.True(t, apierrors.IsForbidden(err), err)
				requireFinding(t, err.Error(), "existingFieldRemoval", n.CRD, "not accepted: the loss affects 1 object, more than the 0 accepted")
				e.requireUnchanged(t, n, before)
				return
			}
			require.NoError(t, err)
			require.Len(t, warnings, 1, "%q", warnings)
			require.Contains(t, warnings[0], "[existingFieldRemoval] data loss: existing field removed")
			// The apiserver shortens a long warning in its middle.
			require.Contains(t, warnings[0], "ed: pollInterval retired (e2e); at most 1 object; until 2999-12-31) [fp:")
			require.NotContains(t, e.crdSchemaJSON(t, n, "v1"), `"pollInterval"`)
		})
	}
}

// errNoKubectl: KUBECTL is not set (hack/test-e2e.sh sets it).
var errNoKubectl = fmt.Errorf("KUBECTL is not set")

// kubectlApply runs `kubectl apply -f` of doc with the cluster's kubectl
// (KUBECTL), and returns what it printed.
func (e *env) kubectlApply(t *testing.T, doc []byte) (string, error) {
	t.Helper()
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		return "", errNoKubectl
	}
	path := filepath.Join(t.TempDir(), "crd.yaml")
	require.NoError(t, os.WriteFile(path, doc, 0o600))
	out, err := exec.Command(kubectl, "--kubeconfig", e.kubeconfig, "apply", "-f", path).CombinedOutput()
	t.Logf("$ kubectl apply -f crd.yaml\n%s", indent(string(out)))
	return string(out), err
}
