package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The kapp-controller tests: real Apps reconciled by kapp-controller v0.51.0
// (hack/kapp-controller.sh), which runs bin/kapp for every deploy.

// appFiles are the inline files of a test App: a CRD template, the custom
// resources of base/crs.yaml and any extra documents (a kapp Config, the
// marker).
func appFiles(t *testing.T, n names, crdTemplate string, extra map[string][]byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{
		"crd.yaml": n.render(t, crdTemplate),
		"crs.yaml": n.render(t, "base/crs.yaml"),
	}
	for name, data := range extra {
		files[name] = data
	}
	return files
}

// startApp starts a test on an App of its own: base/crd.yaml, base/crs.yaml
// and extra, reconciled.
func (k *kcEnv) startApp(t *testing.T, n names, extra map[string][]byte) {
	t.Helper()
	k.createApp(t, newApp(n, appFiles(t, n, "base/crd.yaml", extra)))
	k.requireReconciled(t, kcNamespace, n.App, kcConditionSucceeded)
}

// requireBlockedApp asserts that the App's reconcile failed because
// CRDUpgradeSafety blocked its deploy, and that the status fields a user
// reads name the check and the finding.
func requireBlockedApp(t *testing.T, st appStatus, check string, tokens ...string) {
	t.Helper()
	for field, text := range map[string]string{
		"status.usefulErrorMessage": st.UsefulErrorMessage,
		"status.deploy.stderr":      st.DeployStderr,
	} {
		require.Containsf(t, text, blockedError, "%s does not say that CRDUpgradeSafety blocked the deploy; status:\n%s", field, st)
		line, ok := findingLine(text, check, tokens...)
		require.Truef(t, ok, "%s names no %q finding with %q; status:\n%s", field, check, tokens, st)
		t.Logf("%s: %s", field, strings.TrimSpace(line))
	}
	require.Contains(t, st.FriendlyDesc, "Reconcile failed")
}

// TestKappControllerApp: an App whose fetched manifests hold a CRD, custom
// resources and a kapp Config enabling CRDUpgradeSafety reconciles; an
// unsafe change to the CRD fails the reconcile with the finding in the App's
// status and leaves the CRD and its custom resources as they were (nor is
// the rest of the change set applied); the App then recovers with a safe
// change, which is applied.
func TestKappControllerApp(t *testing.T) {
	t.Parallel()
	k := kcSetup(t)
	n := newNames(t)
	config := map[string][]byte{"config.yaml": n.render(t, "configs/enabled.yaml")}

	k.startApp(t, n, config)
	before := k.snapshot(t, n)
	require.Len(t, before.CRs, 2, "the App's custom resources")

	unsafe := appFiles(t, n, "unsafe/enum-value-removed/new.yaml", config)
	unsafe["marker.yaml"] = n.marker()
	k.updateApp(t, kcNamespace, n.App, unsafe)
	st := k.requireReconciled(t, kcNamespace, n.App, kcConditionFailed)
	requireBlockedApp(t, st, "enum", n.CRD, "v1", "^.spec.color", `["green"]`)
	t.Logf("status of the blocked App:\n%s", indent(st.String()))
	k.requireUnchanged(t, n, before)

	k.updateApp(t, kcNamespace, n.App, appFiles(t, n, "safe/new.yaml", config))
	k.requireReconciled(t, kcNamespace, n.App, kcConditionSucceeded)
	spec, _ := k.crdVersions(t, n)
	require.Equal(t, []string{"v1", "v2"}, spec, "the safe change (a new version v2) was not applied")
	require.Len(t, k.snapshot(t, n).CRs, 2)
}

// TestKappControllerWarnMode: with mode warn in the App's Config the unsafe
// change is applied and the warning is in the App's deploy output. The
// controller's settings file (mode error) does not apply: an App's own
// Config entry takes precedence.
func TestKappControllerWarnMode(t *testing.T) {
	t.Parallel()
	k := kcSetup(t)
	n := newNames(t)
	config := map[string][]byte{"config.yaml": n.render(t, "configs/warn.yaml")}

	k.startApp(t, n, config)

	k.updateApp(t, kcNamespace, n.App, appFiles(t, n, "unsafe/enum-value-removed/new.yaml", config))
	st := k.requireReconciled(t, kcNamespace, n.App, kcConditionSucceeded)
	line, ok := findingLine(st.DeployStdout, "enum", "Warning: CRDUpgradeSafety:", n.CRD, "^.spec.color")
	require.Truef(t, ok, "status.deploy.stdout has no CRDUpgradeSafety warning for the enum change; status:\n%s", st)
	t.Logf("status.deploy.stdout: %s", strings.TrimSpace(line))
	require.Contains(t, k.crdSchemaJSON(t, n, "v1"), `"enum":["red","blue"]`, "the unsafe change was not applied in warn mode")
}

// TestKappControllerEnvConfig: kapp-controller runs with
// KAPP_CRD_UPGRADE_SAFETY_CONFIG (testdata/kappctrl/controller-settings.yaml);
// an App with no kapp Config at all is then blocked on an unsafe change,
// and the file's settings apply, not just the defaults: its exemption lets
// the same change through for the CRD it names.
func TestKappControllerEnvConfig(t *testing.T) {
	t.Parallel()
	k := kcSetup(t)
	exempt := requireControllerExemption(t)

	t.Run("blocked", func(t *testing.T) {
		t.Parallel()
		n := newNames(t)
		k.startApp(t, n, nil)
		before := k.snapshot(t, n)

		unsafe := appFiles(t, n, "unsafe/enum-value-removed/new.yaml", map[string][]byte{"marker.yaml": n.marker()})
		k.updateApp(t, kcNamespace, n.App, unsafe)
		st := k.requireReconciled(t, kcNamespace, n.App, kcConditionFailed)
		requireBlockedApp(t, st, "enum", n.CRD, "v1", "^.spec.color")
		k.requireUnchanged(t, n, before)
	})
	t.Run("exempted by the file", func(t *testing.T) {
		t.Parallel()
		n := exempt
		k.deleteApp(t, kcNamespace, n.App) // a fixed name: left over by an interrupted run on a reused cluster?
		k.startApp(t, n, nil)

		k.updateApp(t, kcNamespace, n.App, appFiles(t, n, "unsafe/enum-value-removed/new.yaml", nil))
		k.requireReconciled(t, kcNamespace, n.App, kcConditionSucceeded)
		require.Contains(t, k.crdSchemaJSON(t, n, "v1"), `"enum":["red","blue"]`, "the exempted change was not applied")
	})
}

// requireControllerExemption returns the names of the CRD that the
// controller's settings file exempts from the enum check.
func requireControllerExemption(t *testing.T) names {
	t.Helper()
	path := os.Getenv(kcSafetyConfigVar)
	if path == "" {
		t.Fatalf("%s is not set: kapp-controller runs without KAPP_CRD_UPGRADE_SAFETY_CONFIG (run hack/test-e2e.sh --kapp-controller)", kcSafetyConfigVar)
	}
	n := names{Plural: "envexempts", Singular: "envexempt", Kind: "EnvExempt", App: "e2e-envexempt"}
	n.CRD = n.Plural + "." + group
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var settings struct {
		Mode       string
		Exemptions []struct {
			CRD    string
			Checks []string
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &settings))
	require.Equal(t, "error", settings.Mode, "%s: the test expects mode error", path)
	for _, e := range settings.Exemptions {
		if e.CRD == n.CRD && len(e.Checks) == 1 && e.Checks[0] == "enum" {
			return n
		}
	}
	t.Fatalf("%s does not exempt %s from the enum check (and nothing else), which this test relies on", path, n.CRD)
	return names{}
}

// TestKappControllerRawOptionsPreflight: kapp-controller passes only
// allowlisted kapp flags, and --preflight is not one of them: an App asking
// for it in rawOptions fails before kapp runs (docs/kapp-controller.md
// quotes this error).
func TestKappControllerRawOptionsPreflight(t *testing.T) {
	t.Parallel()
	k := kcSetup(t)
	n := newNames(t)
	app := newApp(n, appFiles(t, n, "base/crd.yaml", nil))
	deploy := []any{map[string]any{"kapp": map[string]any{"rawOptions": []any{"--preflight=CRDUpgradeSafety"}}}}
	require.NoError(t, unstructured.SetNestedSlice(app.Object, deploy, "spec", "deploy"))
	k.createApp(t, app)
	st := k.requireReconciled(t, kcNamespace, n.App, kcConditionFailed)
	const rejected = "Unexpected flag '--preflight' specified (either forbidden or unknown)"
	require.Containsf(t, st.UsefulErrorMessage, rejected, "status:\n%s", st)
	t.Logf("status of the App:\n%s", indent(st.String()))
	require.Nil(t, k.getCRD(t, n), "kapp ran although its flags were rejected")
}

// TestKappControllerExample: examples/kapp-controller, deployed as its
// README says, reconciles (kapp waits for the App), and its Config blocks an
// unsafe change of its CRD.
func TestKappControllerExample(t *testing.T) {
	t.Parallel()
	k := kcSetup(t)
	example := filepath.Join("..", "..", "examples", "kapp-controller")
	appYAML, err := os.ReadFile(filepath.Join(example, "app.yaml"))
	require.NoError(t, err)
	rbacYAML, err := os.ReadFile(filepath.Join(example, "rbac.yaml"))
	require.NoError(t, err)
	var app unstructured.Unstructured
	require.NoError(t, yaml.Unmarshal(appYAML, &app.Object))
	ns, name := app.GetNamespace(), app.GetName()

	const kappApp = "e2e-example-widgets-operator"
	t.Cleanup(func() {
		// kapp deletes the App before its service account (change rules in
		// app.yaml), and waits until kapp-controller has deleted the CRD.
		if r := k.kapp(t, "", "delete", "-a", kappApp, "-y"); r.exitCode != 0 {
			t.Errorf("cleanup: kapp delete -a %s failed:\n%s%s", kappApp, r.out, k.logTail(name))
		}
	})
	r := k.deploy(t, kappApp, []string{filepath.Join(example, "app.yaml"), filepath.Join(example, "rbac.yaml")})
	require.Equalf(t, 0, r.exitCode, "deploying %s failed:\n%s%s", example, r.out, k.diagnostics(t, ns, name))
	k.requireReconciled(t, ns, name, kcConditionSucceeded)
	crd := names{CRD: "widgets.demo.example.com"}
	require.NotNil(t, k.getCRD(t, crd), "the example's CRD was not deployed")
	schemaBefore := k.crdSchemaJSON(t, crd, "v1")

	// Release 2 of the operator drops the enum value its Widget uses.
	const enum = "enum: [small, medium, large]"
	require.Contains(t, string(appYAML), enum)
	unsafe := dir(t, map[string][]byte{
		"app.yaml":  []byte(strings.Replace(string(appYAML), enum, "enum: [small, large]", 1)),
		"rbac.yaml": rbacYAML,
	})
	r = k.deploy(t, kappApp, []string{unsafe})
	require.NotEqualf(t, 0, r.exitCode, "kapp was expected to report the failed reconcile:\n%s", r.out)
	st := k.requireReconciled(t, ns, name, kcConditionFailed)
	requireBlockedApp(t, st, "enum", crd.CRD, "v1", "^.spec.size", `["medium"]`)
	// The stored Widget that uses the value, named in the finding's impact.
	requireBlockedApp(t, st, "enum", crd.CRD, "stored Widget", "default/first")
	t.Logf("status of the blocked App:\n%s", indent(st.String()))
	require.Equal(t, schemaBefore, k.crdSchemaJSON(t, crd, "v1"), "the blocked change reached the cluster")
}

// TestKappControllerReleaseOverlay: examples/kapp-controller/controller's ytt overlay,
// applied to the release templates of the kapp-controller version the
// tests run, gives the kapp-controller container (where kapp runs)
// KAPP_CRD_UPGRADE_SAFETY_CONFIG naming a file of the ConfigMap of
// controller/settings.yaml, whose settings are valid.
func TestKappControllerReleaseOverlay(t *testing.T) {
	t.Parallel()
	kcSetup(t)
	ytt, release := os.Getenv(kcYttVar), os.Getenv(kcReleaseConfigVar)
	require.NotEmptyf(t, ytt, "%s is not set", kcYttVar)
	require.NotEmptyf(t, release, "%s is not set", kcReleaseConfigVar)
	example := filepath.Join("..", "..", "examples", "kapp-controller")

	out, err := exec.Command(ytt, "-f", filepath.Join(release, "config"), "-f", filepath.Join(release, "values-schema.yml"),
		"-f", filepath.Join(example, "controller", "overlay.yaml")).CombinedOutput()
	require.NoErrorf(t, err, "ytt:\n%s", out)
	var deployment *appsv1.Deployment
	for _, doc := range yamlDocs(t, out) {
		if doc.GetKind() == "Deployment" && doc.GetName() == "kapp-controller" {
			deployment = &appsv1.Deployment{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(doc.Object, deployment))
		}
	}
	require.NotNil(t, deployment, "no Deployment kapp-controller in the release templates")

	settingsYAML, err := os.ReadFile(filepath.Join(example, "controller", "settings.yaml"))
	require.NoError(t, err)
	var cm corev1.ConfigMap
	require.NoError(t, yaml.UnmarshalStrict(settingsYAML, &cm))
	require.Equal(t, deployment.Namespace, cm.Namespace, "the ConfigMap must be in kapp-controller's namespace")

	spec := deployment.Spec.Template.Spec
	var path string
	for _, c := range spec.Containers {
		for _, env := range c.Env {
			if env.Name == "KAPP_CRD_UPGRADE_SAFETY_CONFIG" {
				require.Equal(t, "kapp-controller", c.Name, "kapp runs in the kapp-controller container, not in %s", c.Name)
				path = env.Value
			}
		}
	}
	require.NotEmpty(t, path, "no container has KAPP_CRD_UPGRADE_SAFETY_CONFIG")
	mountedFrom := map[string]string{} // volume -> ConfigMap
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			mountedFrom[v.Name] = v.ConfigMap.Name
		}
	}
	found := false
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if c.Name == "kapp-controller" && mountedFrom[m.Name] == cm.Name && filepath.Join(m.MountPath, filepath.Base(path)) == path {
				found = true
			}
		}
	}
	require.Truef(t, found, "%s is not a file of ConfigMap %s mounted in the kapp-controller container", path, cm.Name)
	settings, ok := cm.Data[filepath.Base(path)]
	require.Truef(t, ok, "ConfigMap %s has no key %s", cm.Name, filepath.Base(path))
	var raw map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(settings), &raw))
	_, err = config.Decode(raw)
	require.NoError(t, err, "the settings of controller/settings.yaml")
}

// yamlDocs decodes a multi-document YAML stream.
func yamlDocs(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var docs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		if obj != nil {
			docs = append(docs, &unstructured.Unstructured{Object: obj})
		}
	}
}
