package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConversionOrdering: a kapp deploy that updates a CRD to a conversion
// webhook and rolls out the Deployment that serves it, without kapp
// ordering the two, is blocked by conversionOrdering before anything is
// applied; with the annotations the finding prints, kapp's own graph makes
// the CRD wait for the Deployment, the deploy passes the check and kapp
// rolls the Deployment out (the deployment controller: the clusters have no
// kubelet, the Deployment has 0 replicas) before it updates the CRD. The
// order is read from kapp itself: its change graph (--diff-run
// --change-graph-file-output) and the order of its apply lines. The same
// holds with examples/conversion-ordering/config.yaml instead of the
// annotations (the graph only).
func TestConversionOrdering(t *testing.T) {
	t.Parallel()
	e := setup(t)
	n := newNames(t)
	operator := func(release string) []byte {
		return []byte(strings.ReplaceAll(string(n.render(t, "ordering/operator.yaml")), "__RELEASE__", release))
	}
	e.cleanupApp(t, n.App)
	e.deployOK(t, n.App, []string{dir(t, map[string][]byte{"crd.yaml": n.render(t, "ordering/crd-1.yaml"), "operator.yaml": operator("1")})})
	before := e.snapshot(t, n)
	release2 := func(crd, op []byte, extra ...[]byte) string {
		files := map[string][]byte{"crd.yaml": crd, "operator.yaml": op, "marker.yaml": n.marker()}
		for i, x := range extra {
			files[fmt.Sprintf("extra-%d.yaml", i)] = x
		}
		return dir(t, files)
	}
	deployment := n.Singular + "/operator"

	// Not ordered: blocked, nothing applied.
	r := e.deploy(t, n.App, []string{release2(n.render(t, "ordering/crd-2.yaml"), operator("2"))}, "--preflight=CRDUpgradeSafety")
	requireBlocked(t, r)
	requireFinding(t, r.out, "conversionOrdering", "crd "+n.CRD, "the conversion webhook configuration changes",
		"Service "+n.Singular+"/webhook is served by Deployment "+deployment, "way forward:")
	e.requireUnchanged(t, n, before)
	require.Equal(t, "registry.example.com/operator:1", e.operatorImage(t, n), "the blocked deploy rolled the Deployment out")
	graph := e.changeGraph(t, n.App, release2(n.render(t, "ordering/crd-2.yaml"), operator("2")))
	require.False(t, graph.waits("CustomResourceDefinition/"+n.CRD, "Deployment/"+deployment), "kapp's graph without the annotations")

	// The annotations the finding names, as it names them.
	line, _ := findingLine(r.out, "conversionOrdering")
	group := regexp.MustCompile(`on Deployment ` + regexp.QuoteMeta(deployment) + `: (kapp\.k14s\.io/change-group[^:]*): "([^"]+)"`).FindStringSubmatch(line)
	rule := regexp.MustCompile(`on the CRD: (kapp\.k14s\.io/change-rule[^:]*): "([^"]+)"`).FindStringSubmatch(line)
	require.NotNil(t, group, "the group annotation in %q", line)
	require.NotNil(t, rule, "the rule annotation in %q", line)
	crd2 := strings.Replace(string(n.render(t, "ordering/crd-2.yaml")), "annotations: {}", fmt.Sprintf("annotations: {%s: %q}", rule[1], rule[2]), 1)
	op2 := strings.Replace(string(operator("2")), "annotations: {}", fmt.Sprintf("annotations: {%s: %q}", group[1], group[2]), 1)
	annotated := release2([]byte(crd2), []byte(op2))

	graph = e.changeGraph(t, n.App, annotated)
	require.True(t, graph.waits("CustomResourceDefinition/"+n.CRD, "Deployment/"+deployment), "kapp's graph with the annotations")

	// The whole-app Config of the example orders them too.
	config, err := os.ReadFile(filepath.Join("..", "..", "examples", "conversion-ordering", "config.yaml"))
	require.NoError(t, err)
	graph = e.changeGraph(t, n.App, release2(n.render(t, "ordering/crd-2.yaml"), operator("2"), config))
	require.True(t, graph.waits("CustomResourceDefinition/"+n.CRD, "Deployment/"+deployment), "kapp's graph with examples/conversion-ordering/config.yaml")

	// Ordered: the check passes, kapp rolls the Deployment out, then
	// updates the CRD.
	r = e.deployOK(t, n.App, []string{annotated}, "--preflight=CRDUpgradeSafety")
	requireNoFinding(t, r.out, "conversionOrdering")
	require.Equal(t, "registry.example.com/operator:2", e.operatorImage(t, n))
	spec, _ := e.crdVersions(t, n)
	require.Equal(t, []string{"v1", "v2"}, spec)
	rolledOut := strings.Index(r.out, "ok: reconcile deployment/operator")
	crdUpdated := strings.Index(r.out, "update customresourcedefinition/"+n.CRD)
	require.True(t, rolledOut >= 0 && crdUpdated > rolledOut,
		"kapp updated the CRD (at %d) before the Deployment was rolled out (at %d):\n%s", crdUpdated, rolledOut, r.out)
}

// operatorImage is the image of the Deployment of TestConversionOrdering.
func (e *env) operatorImage(t *testing.T, n names) string {
	t.Helper()
	d, err := e.core.AppsV1().Deployments(n.Singular).Get(tctx(t), "operator", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	require.NoError(t, err)
	return d.Spec.Template.Spec.Containers[0].Image
}

// kappGraph is kapp's change graph as --change-graph-file-output writes it:
// each change, and the changes each waits for directly.
type kappGraph struct {
	Nodes []struct {
		ID   string `json:"id"`
		Data struct {
			Name      string  `json:"name"`
			Namespace *string `json:"namespace"`
			GroupKind struct {
				Kind string `json:"kind"`
			} `json:"groupKind"`
		} `json:"data"`
	} `json:"nodes"`
	Edges []struct {
		Source string `json:"source"`
		Target string `json:"target"`
	} `json:"edges"`
}

// changeGraph is the change graph kapp computes for deploying dir to app,
// without deploying (--diff-run).
func (e *env) changeGraph(t *testing.T, app, dir string) kappGraph {
	t.Helper()
	out := filepath.Join(t.TempDir(), "graph.json")
	r := e.kapp(t, "", "deploy", "-a", app, "-f", dir, "--diff-run", "--change-graph-file-output", out)
	require.Equal(t, 0, r.exitCode, r.out)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var g kappGraph
	require.NoError(t, json.Unmarshal(data, &g))
	return g
}

// waits reports whether the change of from ("Kind/name" or
// "Kind/namespace/name") waits for the change of to, directly or through
// other changes.
func (g kappGraph) waits(from, to string) bool {
	ids := map[string]string{}
	for _, node := range g.Nodes {
		key := node.Data.GroupKind.Kind + "/" + node.Data.Name
		if node.Data.Namespace != nil {
			key = node.Data.GroupKind.Kind + "/" + *node.Data.Namespace + "/" + node.Data.Name
		}
		ids[key] = node.ID
	}
	next := map[string][]string{}
	for _, edge := range g.Edges {
		next[edge.Source] = append(next[edge.Source], edge.Target)
	}
	seen := map[string]bool{}
	stack := []string{ids[from]}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, dep := range next[id] {
			if dep == ids[to] {
				return true
			}
			if !seen[dep] {
				seen[dep] = true
				stack = append(stack, dep)
			}
		}
	}
	return false
}
