package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Group of every CRD the suite creates; each test has its own plural.
const group = "e2e.example.com"

// The error kapp prints when our check blocks a deploy (README, "Using it").
const blockedError = `preflight checks failed: running preflight check "CRDUpgradeSafety"`

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// env is the cluster and binary under test, shared by all tests.
type env struct {
	kappBin    string
	kubeconfig string
	rest       *rest.Config
	dyn        dynamic.Interface
	core       kubernetes.Interface
}

var (
	envOnce sync.Once
	envVal  *env
	envErr  error
)

// setup returns the shared env. Without KAPP_E2E_BINARY and KUBECONFIG the
// test skips, or fails under CI=true so that CI cannot pass by skipping.
func setup(t *testing.T) *env {
	t.Helper()
	bin, kc := os.Getenv("KAPP_E2E_BINARY"), os.Getenv("KUBECONFIG")
	if bin == "" || kc == "" {
		msg := "KAPP_E2E_BINARY and KUBECONFIG must be set (run hack/test-e2e.sh)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	envOnce.Do(func() { envVal, envErr = newEnv(bin, kc) })
	require.NoError(t, envErr)
	return envVal
}

func newEnv(bin, kc string) (*env, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return nil, fmt.Errorf("KAPP_E2E_BINARY %q is not a file: %v", bin, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, fmt.Errorf("loading KUBECONFIG %q: %w", kc, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// kapp keeps app records in the namespace of -n (default: the
	// kubeconfig's, "default"); the apiserver alone creates both.
	for _, ns := range []string{"default", "kube-system"} {
		if _, err := core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("cluster of KUBECONFIG %q not usable: namespace %s: %w", kc, ns, err)
		}
	}
	return &env{kappBin: abs, kubeconfig: kc, rest: cfg, dyn: dyn, core: core}, nil
}

// ---------------------------------------------------------------- names

// names are the per-test names: a CRD of its own in group e2e.example.com and
// a kapp app of its own, so tests run in parallel and reruns never collide.
type names struct {
	Plural, Singular, Kind, CRD, App string
	// Group, when set, is the CRD's group instead of e2e.example.com.
	Group string
}

var nonAlnum = regexp.MustCompile(`[^a-z0-9]+`)

func newNames(t *testing.T) names {
	t.Helper()
	// The last element of the test name keeps names readable; the random
	// suffix makes them unique. Short: kapp derives a change group name
	// "crds-<group>-<Kind>" that must fit in 63 characters.
	parts := strings.Split(t.Name(), "/")
	base := nonAlnum.ReplaceAllString(strings.ToLower(strings.TrimPrefix(parts[len(parts)-1], "Test")), "")
	if len(base) > 24 {
		base = base[:24]
	}
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	singular := fmt.Sprintf("%s%x", base, b)
	return names{
		Plural:   singular + "s",
		Singular: singular,
		Kind:     "E" + singular, // a Kind starts with a letter, the base may not
		CRD:      singular + "s." + group,
		App:      "e2e-" + singular,
	}
}

func (n names) gvr(version string) schema.GroupVersionResource {
	g := group
	if n.Group != "" {
		g = n.Group
	}
	return schema.GroupVersionResource{Group: g, Version: version, Resource: n.Plural}
}

// render reads a testdata template and fills in the test's names.
func (n names) render(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", path))
	require.NoError(t, err)
	return n.fill(data)
}

func (n names) fill(data []byte) []byte {
	r := strings.NewReplacer("__PLURAL__", n.Plural, "__SINGULAR__", n.Singular, "__KIND__", n.Kind, "__CRD__", n.CRD, "__APP__", n.App)
	return []byte(r.Replace(string(data)))
}

// dir writes files (name -> content) into a new temporary directory.
func dir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	d := t.TempDir()
	for name, data := range files {
		p := filepath.Join(d, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	return d
}

// marker is a ConfigMap added to a deploy that is expected to be blocked:
// it must not exist afterwards (nothing of the change set was applied).
func (n names) marker() []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: ConfigMap
metadata:
  name: marker-%s
  namespace: default
data:
  applied: "true"
`, n.Singular)
}

// ---------------------------------------------------------------- kapp

type result struct {
	args     []string
	out      string // stdout, then stderr
	stdout   string
	stderr   string
	exitCode int
}

// kapp runs the binary under test with args (plus --kubeconfig unless args
// name one) and stdin, and returns what it printed and its exit status.
func (e *env) kapp(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return e.kappEnv(t, nil, stdin, args...)
}

// kappEnv is kapp with extra environment variables (NAME=value).
func (e *env) kappEnv(t *testing.T, extraEnv []string, stdin string, args ...string) result {
	t.Helper()
	full := append([]string{}, args...)
	hasKC := false
	for _, a := range args {
		if a == "--kubeconfig" || strings.HasPrefix(a, "--kubeconfig=") {
			hasKC = true
		}
	}
	if !hasKC {
		full = append(full, "--kubeconfig", e.kubeconfig)
	}
	full = append(full, "--color=false")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.kappBin, full...)
	cmd.Stdin = strings.NewReader(stdin)
	// Two buffers rather than one interleaved stream: kapp writes a table
	// row in several writes, and a line of the other stream could land
	// in between.
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// The settings file of a developer's shell would enable the check for
	// every deploy: only tests that ask for it get it.
	environ := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KAPP_CRD_UPGRADE_SAFETY_CONFIG=")
	})
	cmd.Env = append(append(environ, "KUBECONFIG="+e.kubeconfig), extraEnv...)
	start := time.Now()
	err := cmd.Run()
	res := result{args: full, stdout: stdout.String(), stderr: stderr.String()}
	res.out = res.stdout
	if res.stderr != "" {
		res.out += "\n" + res.stderr
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.exitCode = exitErr.ExitCode()
	default:
		t.Fatalf("running kapp %s: %v", strings.Join(full, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("kapp %s timed out:\n%s", strings.Join(full, " "), res.out)
	}
	t.Logf("$ %skapp %s  # exit %d in %s\n%s", envPrefix(extraEnv), strings.Join(args, " "), res.exitCode, time.Since(start).Round(time.Millisecond), indent(res.out))
	return res
}

func envPrefix(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return strings.Join(env, " ") + " "
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// deploy runs `kapp deploy -a app -f f... -y extra...`.
func (e *env) deploy(t *testing.T, app string, files []string, extra ...string) result {
	t.Helper()
	args := []string{"deploy", "-a", app, "-y"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	return e.kapp(t, "", append(args, extra...)...)
}

// deployOK deploys and fails the test unless kapp succeeded.
func (e *env) deployOK(t *testing.T, app string, files []string, extra ...string) result {
	t.Helper()
	r := e.deploy(t, app, files, extra...)
	require.Equalf(t, 0, r.exitCode, "kapp deploy failed:\n%s", r.out)
	return r
}

// cleanupApp deletes the app (and so its CRDs and their custom resources)
// when the test ends.
func (e *env) cleanupApp(t *testing.T, app string) {
	t.Helper()
	t.Cleanup(func() {
		r := e.kapp(t, "", "delete", "-a", app, "-y")
		if r.exitCode != 0 {
			t.Errorf("cleanup: kapp delete -a %s failed:\n%s", app, r.out)
		}
	})
}

// requireBlocked asserts kapp failed because our check blocked the deploy.
func requireBlocked(t *testing.T, r result) {
	t.Helper()
	require.NotEqualf(t, 0, r.exitCode, "kapp was expected to fail, output:\n%s", r.out)
	require.Containsf(t, r.out, blockedError, "kapp failed, but not because CRDUpgradeSafety blocked it:\n%s", r.out)
}

// findingLine returns the first output line that names check (as a whole
// word), the CRD and every other non-empty token (a version, a field path).
func findingLine(out, check string, tokens ...string) (string, bool) {
	word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(check) + `($|[^A-Za-z0-9_])`)
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !word.MatchString(line) {
			continue
		}
		// A finding's way forward is on the line under it (kapp's error,
		// the webhook's denial: "way forward: ..."; the table: "→ ...").
		if i+1 < len(lines) {
			if next := strings.TrimSpace(lines[i+1]); strings.HasPrefix(next, "way forward: ") || strings.HasPrefix(next, "→ ") {
				line += " " + next
			}
		}
		ok := true
		for _, tok := range tokens {
			if tok != "" && !strings.Contains(line, tok) {
				ok = false
				break
			}
		}
		if ok {
			return line, true
		}
	}
	return "", false
}

func requireFinding(t *testing.T, out, check string, tokens ...string) {
	t.Helper()
	line, ok := findingLine(out, check, tokens...)
	require.Truef(t, ok, "no output line names check %q with %q; output:\n%s", check, tokens, out)
	t.Logf("finding: %s", strings.TrimSpace(line))
}

// withoutFingerprints returns lines (findings as the webhook's warnings or
// kapp print them) without the fingerprint each ends with, which it
// requires: " [fp:1a2b3c4d5e6f]".
func withoutFingerprints(t *testing.T, lines []string) []string {
	t.Helper()
	out := make([]string, len(lines))
	for i, l := range lines {
		loc := fingerprintSuffix.FindStringIndex(l)
		require.NotNil(t, loc, "no fingerprint at the end of %q", l)
		out[i] = l[:loc[0]]
	}
	return out
}

var fingerprintSuffix = regexp.MustCompile(` \[fp:[0-9a-f]{12}\]$`)

func requireNoFinding(t *testing.T, out, check string, tokens ...string) {
	t.Helper()
	line, ok := findingLine(out, check, tokens...)
	require.Falsef(t, ok, "unexpected finding %q: %s\noutput:\n%s", check, line, out)
}

// ---------------------------------------------------------------- cluster

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// getCRD returns the live CRD, or nil when it does not exist.
func (e *env) getCRD(t *testing.T, n names) *unstructured.Unstructured {
	t.Helper()
	crd, err := e.dyn.Resource(crdGVR).Get(tctx(t), n.CRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return crd
}

// createCRs creates the custom resources of a template (multi-document YAML)
// directly through the API, standing for data users already have. It retries
// while the API of a just-established CRD is not served yet.
func (e *env) createCRs(t *testing.T, n names, path string) {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(n.render(t, path)), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		require.NoError(t, err)
		var ri dynamic.ResourceInterface = e.dyn.Resource(n.gvr(gv.Version))
		if u.GetNamespace() != "" {
			ri = e.dyn.Resource(n.gvr(gv.Version)).Namespace(u.GetNamespace())
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err = ri.Create(tctx(t), u, metav1.CreateOptions{})
			if err == nil || !apierrors.IsNotFound(err) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		require.NoErrorf(t, err, "creating %s %s", u.GetKind(), u.GetName())
	}
}

// snapshot is what a blocked deploy must leave untouched: the CRD's spec
// (as JSON, byte for byte), labels, annotations and generation, and every
// custom resource with its resourceVersion and spec.
type snapshot struct {
	CRDSpec        string
	CRDGeneration  int64
	CRDLabels      map[string]string
	CRDAnnotations map[string]string
	CRs            map[string]string // namespace/name -> resourceVersion + spec JSON
}

// appWithCRs deploys the app n.App with the CRD template crd and creates
// the custom resources of the template crs directly (the data users
// already have), and returns the snapshot a blocked update must leave
// unchanged.
func (e *env) appWithCRs(t *testing.T, n names, crd, crs string) snapshot {
	t.Helper()
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, crd)})
	e.createCRs(t, n, crs)
	return e.snapshot(t, n)
}

func (e *env) snapshot(t *testing.T, n names) snapshot {
	t.Helper()
	crd := e.getCRD(t, n)
	require.NotNilf(t, crd, "CRD %s does not exist", n.CRD)
	spec, err := json.Marshal(crd.Object["spec"])
	require.NoError(t, err)
	s := snapshot{
		CRDSpec:        string(spec),
		CRDGeneration:  crd.GetGeneration(),
		CRDLabels:      crd.GetLabels(),
		CRDAnnotations: crd.GetAnnotations(),
		CRs:            map[string]string{},
	}
	// List through a served version of the live CRD.
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	served := ""
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if ok, _ := vm["served"].(bool); ok {
			served, _ = vm["name"].(string)
			break
		}
	}
	require.NotEmptyf(t, served, "CRD %s serves no version", n.CRD)
	list, err := e.dyn.Resource(n.gvr(served)).List(tctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	for _, item := range list.Items {
		sp, err := json.Marshal(item.Object["spec"])
		require.NoError(t, err)
		s.CRs[item.GetNamespace()+"/"+item.GetName()] = item.GetResourceVersion() + " " + string(sp)
	}
	return s
}

// requireUnchanged asserts that the CRD and its custom resources are as they
// were and that the blocked change set's marker ConfigMap was not created.
func (e *env) requireUnchanged(t *testing.T, n names, before snapshot) {
	t.Helper()
	after := e.snapshot(t, n)
	require.Equal(t, before.CRDSpec, after.CRDSpec, "the CRD's spec changed although the deploy was blocked")
	require.Equal(t, before.CRDGeneration, after.CRDGeneration, "the CRD's generation changed")
	require.Equal(t, before.CRDLabels, after.CRDLabels, "the CRD's labels changed")
	require.Equal(t, before.CRDAnnotations, after.CRDAnnotations, "the CRD's annotations changed")
	require.Equal(t, before.CRs, after.CRs, "custom resources changed although the deploy was blocked")
	_, err := e.core.CoreV1().ConfigMaps("default").Get(tctx(t), "marker-"+n.Singular, metav1.GetOptions{})
	require.Truef(t, apierrors.IsNotFound(err), "the marker ConfigMap of the blocked change set exists (err=%v): something was applied", err)
}

// crdSchemaJSON returns the JSON of a version's openAPIV3Schema of the live CRD.
func (e *env) crdSchemaJSON(t *testing.T, n names, version string) string {
	t.Helper()
	_, versions := e.liveVersions(t, n)
	for _, vm := range versions {
		if vm["name"] == version {
			b, err := json.Marshal(vm["schema"])
			require.NoError(t, err)
			return string(b)
		}
	}
	t.Fatalf("CRD %s has no version %s", n.CRD, version)
	return ""
}

// crdVersions returns the names of the live CRD's spec.versions and its
// status.storedVersions.
func (e *env) crdVersions(t *testing.T, n names) (spec, stored []string) {
	t.Helper()
	crd, versions := e.liveVersions(t, n)
	for _, vm := range versions {
		name, _ := vm["name"].(string)
		spec = append(spec, name)
	}
	stored, _, _ = unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return spec, stored
}

// liveVersions returns the live CRD and its spec.versions entries.
func (e *env) liveVersions(t *testing.T, n names) (*unstructured.Unstructured, []map[string]any) {
	t.Helper()
	crd := e.getCRD(t, n)
	require.NotNil(t, crd, "CRD %s is not on the cluster", n.CRD)
	raw, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	versions := make([]map[string]any, 0, len(raw))
	for _, v := range raw {
		vm, _ := v.(map[string]any)
		versions = append(versions, vm)
	}
	return crd, versions
}

// crdDir writes a rendered template as crd.yaml into a new directory, with
// any extra documents as further files, and returns the directory.
func crdDir(t *testing.T, n names, template string, extra ...[]byte) string {
	t.Helper()
	files := map[string][]byte{"crd.yaml": n.render(t, template)}
	for i, x := range extra {
		files[fmt.Sprintf("extra-%d.yaml", i)] = x
	}
	return dir(t, files)
}

// baseApp starts a test on an app of its own: the base CRD deployed
// (without the check) and its custom resources created.
func baseApp(t *testing.T) (*env, names) {
	t.Helper()
	e := setup(t)
	n := newNames(t)
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{crdDir(t, n, "base/crd.yaml")})
	e.createCRs(t, n, "base/crs.yaml")
	return e, n
}

// untilServed runs f until it succeeds or 30s have passed: the API of a
// just-established CRD (or a version just added) may not be served yet.
func untilServed[T any](f func() (T, error)) (T, error) {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		out, err := f()
		if err == nil || time.Now().After(deadline) {
			return out, err
		}
	}
}
