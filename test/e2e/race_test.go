package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The race the preflight cannot close (issue 25 item 7): kapp checks the
// change set, then applies it; someone else may write in between. kapp
// deploy without -y asks for confirmation after the preflight and before
// the apply, which lets a test write in between, deterministically.

// deployInterrupted runs `kapp deploy` with the preflight and, when kapp
// asks for confirmation (the preflight has passed), runs meanwhile, then
// confirms. It returns kapp's result.
func (e *env) deployInterrupted(t *testing.T, app string, files []string, meanwhile func()) result {
	t.Helper()
	args := []string{"deploy", "-a", app, "--preflight=CRDUpgradeSafety", "--kubeconfig", e.kubeconfig, "--color=false"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.kappBin, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KAPP_CRD_UPGRADE_SAFETY_CONFIG=") })
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	asked := false
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(out.String(), "Continue?") {
			asked = true
			break
		}
		if cmd.ProcessState != nil {
			break
		}
	}
	if asked {
		meanwhile()
		_, _ = io.WriteString(stdin, "y\n")
	}
	_ = stdin.Close()
	err = cmd.Wait()
	res := result{args: args, out: out.String(), stdout: out.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		res.exitCode = exitErr.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("$ kapp %s  # exit %d\n%s", strings.Join(args, " "), res.exitCode, indent(res.out))
	require.True(t, asked, "kapp never asked for confirmation: the preflight did not pass")
	return res
}

// TestRaceCRDChangedAfterPreflight: a CRD that someone else changes between
// the preflight and kapp's apply is not overwritten unchecked. kapp's
// update carries the resourceVersion it read: the apiserver refuses it
// (409), kapp reads the CRD again, finds that its approved diff no longer
// matches, and stops; the other writer's change stays.
func TestRaceCRDChangedAfterPreflight(t *testing.T) {
	t.Parallel()
	e, n := baseApp(t)
	r := e.deployInterrupted(t, n.App, []string{crdDir(t, n, "safe/new.yaml")}, func() {
		// Another writer widens the enum of color meanwhile.
		crd := e.getCRD(t, n)
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		v := versions[0].(map[string]any)
		color, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec", "properties", "color")
		color["enum"] = []any{"red", "green", "blue", "purple"}
		require.NoError(t, unstructured.SetNestedMap(v, color, "schema", "openAPIV3Schema", "properties", "spec", "properties", "color"))
		require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
		_, err := e.dyn.Resource(crdGVR).Update(tctx(t), crd, metav1.UpdateOptions{})
		require.NoError(t, err)
	})
	require.NotEqual(t, 0, r.exitCode)
	require.Contains(t, r.out, "Failed to update due to resource conflict (approved diff no longer matches)")
	schema := e.crdSchemaJSON(t, n, "v1")
	require.Contains(t, schema, "purple", "the other writer's change was overwritten")
	require.NotContains(t, schema, "priority", "kapp applied its change over the other writer's")
}

// TestRaceObjectsCreatedAfterPreflight: custom resources created between
// the preflight and the apply are what the preflight cannot see. The CRD
// lowers replicas' maximum from 10 to 5, waived on the CRD as reviewed
// ("no stored object has more than 5"): the preflight's existingResources
// check finds no object above 5. Meanwhile someone creates one with 8.
// Without the webhook, kapp applies the update and the new object is
// invalid under the schema now stored; with the webhook, the update itself
// is judged when it happens, and denied.
func TestRaceObjectsCreatedAfterPreflight(t *testing.T) {
	t.Parallel()
	waived := func(t *testing.T, n names) string {
		crd := strings.Replace(string(n.render(t, "unsafe/maximum-decreased/new.yaml")),
			"  name: "+n.CRD+"\n",
			"  name: "+n.CRD+"\n  annotations:\n    "+config.WaiveAnnotation+": maximum\n    "+
				config.WaiveReasonAnnotation+": no stored object has more than 5 replicas\n", 1)
		require.Contains(t, crd, config.WaiveAnnotation)
		return dir(t, map[string][]byte{"crd.yaml": []byte(crd)})
	}
	createEight := func(t *testing.T, e *env, n names) func() {
		return func() {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": n.Kind,
				"metadata": map[string]any{"name": "eight", "namespace": "default"},
				"spec":     map[string]any{"replicas": int64(8)},
			}}
			_, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Create(tctx(t), obj, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}

	t.Run("without the webhook: the gap", func(t *testing.T) {
		t.Parallel()
		e, n := baseApp(t)
		r := e.deployInterrupted(t, n.App, []string{waived(t, n)}, createEight(t, e, n))
		require.Equal(t, 0, r.exitCode)
		requireFinding(t, r.out, "maximum", n.CRD, "exempted: waive annotation")
		require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"maximum":5`)
		// The object is stored with 8 under a schema that allows 5.
		got, err := e.dyn.Resource(n.gvr("v1")).Namespace("default").Get(tctx(t), "eight", metav1.GetOptions{})
		require.NoError(t, err)
		replicas, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
		require.EqualValues(t, 8, replicas)
	})
	t.Run("with the webhook: denied", func(t *testing.T) {
		t.Parallel()
		// The admin lets annotations waive maximum (by default the
		// webhook counts none): the reviewed change passes, the object
		// it now affects does not.
		e, n, _ := webhookApp(t, "annotationWaivers:\n  checks: [maximum]\n")
		r := e.deployInterrupted(t, n.App, []string{waived(t, n)}, createEight(t, e, n))
		require.NotEqual(t, 0, r.exitCode)
		require.Contains(t, r.out, "CRDUpgradeSafety denied the update of CRD "+n.CRD)
		requireFinding(t, r.out, "existingResources", n.CRD, "default/eight")
		require.Contains(t, e.crdSchemaJSON(t, n, "v1"), `"maximum":10`)
	})
}
