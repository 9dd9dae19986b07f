// Package kapp_test checks the house plan: which package may import which.
package kapp_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/crdsafety/kapp/"

// layers are the module's packages from the bottom up: a package imports
// only packages of lower layers (Go itself rules out cycles). Shared
// helpers at the bottom; the configuration, the client-go adapter and the
// conversion probe; the engine's rooms; the services built on it
// (evaluation, input loading, the storage migration), which return facts;
// the outputs (report composes the English of findings and of the kapp
// error at the edge, so no service can import it); test fixtures of the
// engine and of the services; the kapp hook and the admission webhook; the
// commands; the binary.
var layers = [][]string{
	{"docs", "pkg/kapp/internal/", "pkg/kapp/crdupgradesafety/internal/relang"},
	// gittest builds its repositories' CRDs with testcrd. conversion talks
	// to a conversion webhook as kube talks to the cluster.
	{"pkg/kapp/config", "pkg/kapp/kube", "pkg/kapp/conversion", "pkg/kapp/conversion/conversiontest", "pkg/kapp/internal/gittest"},
	// The engine in rooms, from the bottom up: the finding model (and the
	// policy that makes findings); the schema and CRD checks and the
	// apiserver's validation of a CRD, which know only findings; the
	// stored-object readers (they read what the checks found); the
	// engine's front (one call per pair).
	{"pkg/kapp/crdupgradesafety/finding"},
	{"pkg/kapp/crdupgradesafety/checks", "pkg/kapp/crdupgradesafety/apivalidation"},
	{"pkg/kapp/crdupgradesafety/objects"},
	{"pkg/kapp/crdupgradesafety"},
	{"pkg/kapp/evaluation", "pkg/kapp/inputs", "pkg/kapp/migration"},
	{"pkg/kapp/report"},
	// The engine tests' fixtures render findings through report; the
	// proofs' generators build on them.
	{"pkg/kapp/evaluation/evaluationtest", "pkg/kapp/webhook/webhooktest", "pkg/kapp/kube/kubetest",
		"pkg/kapp/crdupgradesafety/internal/enginetest"},
	{"pkg/kapp/preflight", "pkg/kapp/webhook", "pkg/kapp/crdupgradesafety/internal/prooftest"},
	{"pkg/kapp/cmd/tools"},
	{"pkg/kapp/cmd"},
	{"cmd/kapp", "test/e2e", "hack/", "pkg/kapp"},
}

// layerOf returns the layer of a package path relative to the module: the
// one with the longest matching entry (an entry ending in / is a prefix).
func layerOf(t *testing.T, pkg string) int {
	best, bestLen := -1, -1
	for i, entries := range layers {
		for _, e := range entries {
			match := pkg == e || (strings.HasSuffix(e, "/") && strings.HasPrefix(pkg, e))
			if match && len(e) > bestLen {
				best, bestLen = i, len(e)
			}
		}
	}
	if best < 0 {
		t.Fatalf("package %s is in no layer: add it to layers", pkg)
	}
	return best
}

func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, module)
		fromLayer := layerOf(t, from)
		checked++
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := strings.TrimPrefix(imp, module)
			if l := layerOf(t, to); l >= fromLayer && !strings.HasPrefix(to, from+"/") {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", from, fromLayer, to, l)
			}
		}
	}
	if checked < 15 {
		t.Fatalf("only %d packages listed", checked)
	}
}

// speechless are packages that return facts and compose no output: no
// import, however indirect, of the package that words them (report) or of
// kapp's terminal UI (go-cli-ui, which report's table brings).
var speechless = map[string][]string{
	"pkg/kapp/evaluation": {module + "pkg/kapp/report", "github.com/cppforlife/go-cli-ui/"},
}

// TestServicesComposeNoWords: the evaluation service returns findings and
// its error as facts; the front-ends compose the words at the edge,
// through report (issue 38). TestLayers keeps report above the services;
// this test also catches a path through a package of the same or a lower
// layer, or outside the module.
func TestServicesComposeNoWords(t *testing.T) {
	for pkg, forbidden := range speechless {
		out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("%s: only %d dependencies listed", pkg, len(deps))
		}
		for _, dep := range deps {
			for _, f := range forbidden {
				if dep == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)) {
					t.Errorf("%s depends on %s: it returns facts, and the front-ends word them through report", pkg, dep)
				}
			}
		}
	}
}

// engineFront is what a package outside the engine may import of it: its
// front (one call per pair, and what the service needs of the rooms) and
// the finding model every output speaks; the other rooms (checks,
// objects, apivalidation, internal) are the engine's own.
var engineFront = []string{"pkg/kapp/crdupgradesafety", "pkg/kapp/crdupgradesafety/finding"}

// TestEngineFront: no package outside the engine (evaluation above all,
// its tests and fixtures included) imports an inner room of the engine;
// they talk to its front (issue 38).
func TestEngineFront(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const engine = "pkg/kapp/crdupgradesafety"
	dec := json.NewDecoder(strings.NewReader(string(out)))
	sawEvaluation := false
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, module)
		if from == engine || strings.HasPrefix(from, engine+"/") {
			continue
		}
		sawEvaluation = sawEvaluation || from == "pkg/kapp/evaluation"
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			to := strings.TrimPrefix(imp, module)
			if strings.HasPrefix(to, engine+"/") && !slices.Contains(engineFront, to) {
				t.Errorf("%s imports %s, a room inside the engine: talk to its front (%s)", from, to, strings.Join(engineFront, ", "))
			}
		}
	}
	if !sawEvaluation {
		t.Fatal("pkg/kapp/evaluation not listed")
	}
}
