package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	ours "github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// app is a generated kapp app: v1/ and v2/ hold the same custom resources
// and n CRDs, v2's each with a safe change.
type app struct {
	dir        string
	crds       int
	crdBytes   int64 // v1 CRD files
	kinds      int   // CRDs with custom resources
	crs        int
	sources    int
	namespaced map[string]bool // by CRD name
}

// buildApp writes an app of n CRDs cycling through the real CRD files
// under crdsDir (each with its own group gNNN.bench.example.com) and crs
// custom resources spread over the CRDs for which a minimal valid object
// could be generated.
func buildApp(crdsDir, dir string, n, crs int) (*app, error) {
	files, err := realCRDFiles(crdsDir)
	if err != nil {
		return nil, err
	}
	a := &app{dir: dir, crds: n, sources: len(files), namespaced: map[string]bool{}}
	for _, sub := range []string{"v1/crds", "v2/crds", "v1/crs", "v2/crs"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	type kind struct {
		crd *apiextv1.CustomResourceDefinition
		obj map[string]any
	}
	var withCRs []kind
	cfg := config.Default()
	for i := 0; i < n; i++ {
		src := files[i%len(files)]
		crd, err := readObject(src)
		if err != nil {
			return nil, err
		}
		rename(crd, fmt.Sprintf("g%03d.bench.example.com", i))
		v1, typed, err := marshalCRD(crd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		// The safe change; if the check would object (it should not), only
		// the description edit.
		changed, _ := readObjectBytes(v1)
		safeChangeCRD(changed, true)
		v2, typed2, err := marshalCRD(changed)
		if err != nil {
			return nil, err
		}
		if hasError(ours.Compare(typed, typed2, &cfg)) {
			changed, _ = readObjectBytes(v1)
			safeChangeCRD(changed, false)
			if v2, typed2, err = marshalCRD(changed); err != nil {
				return nil, err
			}
			if hasError(ours.Compare(typed, typed2, &cfg)) {
				return nil, fmt.Errorf("%s: the safe change has error findings", src)
			}
		}
		name := fmt.Sprintf("%03d-%s.yaml", i, typed.Spec.Names.Plural)
		if err := os.WriteFile(filepath.Join(dir, "v1/crds", name), v1, 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "v2/crds", name), v2, 0o644); err != nil {
			return nil, err
		}
		a.crdBytes += int64(len(v1))
		a.namespaced[typed.Name] = typed.Spec.Scope == apiextv1.NamespaceScoped
		if obj, ok := minimalObject(typed, "cr"); ok {
			withCRs = append(withCRs, kind{typed, obj})
		}
	}
	if len(withCRs) == 0 {
		return nil, fmt.Errorf("no CRD with a valid generated custom resource")
	}
	a.kinds = len(withCRs)

	files2 := make([]bytes.Buffer, len(withCRs))
	for k := 0; k < crs; k++ {
		j := k % len(withCRs)
		obj := deepCopy(withCRs[j].obj)
		obj["metadata"].(map[string]any)["name"] = fmt.Sprintf("cr-%05d", k)
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		files2[j].WriteString("---\n")
		files2[j].Write(b)
	}
	for j, buf := range files2 {
		name := fmt.Sprintf("%s.yaml", withCRs[j].crd.Name)
		for _, v := range []string{"v1", "v2"} {
			if err := os.WriteFile(filepath.Join(dir, v, "crs", name), buf.Bytes(), 0o644); err != nil {
				return nil, err
			}
		}
	}
	a.crs = crs
	return a, nil
}

// realCRDFiles lists the real CRD files: every release fetched, but one
// release of cluster-api.
func realCRDFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && filepath.Base(path) == "old" && strings.Contains(path, "cluster-api") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no CRD files in %s (run hack/fetch-crds.sh)", dir)
	}
	return files, err
}

// rename gives a CRD object its own group (and name), without the
// metadata and conversion of its project.
func rename(crd map[string]any, group string) {
	spec := crd["spec"].(map[string]any)
	spec["group"] = group
	delete(spec, "conversion")
	plural := spec["names"].(map[string]any)["plural"].(string)
	crd["metadata"] = map[string]any{"name": plural + "." + group}
	delete(crd, "status")
}

// safeChangeCRD edits the description of every version's schema and, with
// field, adds a new optional field under ^.spec (or at the root) where
// nothing could be stored under its name yet.
func safeChangeCRD(crd map[string]any, field bool) {
	versions, _ := dig(crd, "spec", "versions").([]any)
	for _, v := range versions {
		root, ok := dig(v, "schema", "openAPIV3Schema").(map[string]any)
		if !ok {
			continue
		}
		d, _ := root["description"].(string)
		root["description"] = strings.TrimSpace(d + " Edited by the benchmark.")
		if !field {
			continue
		}
		target := root
		if spec, ok := dig(root, "properties", "spec").(map[string]any); ok {
			target = spec
		}
		if preserves(target) || (target["type"] != nil && target["type"] != "object") {
			continue
		}
		props, ok := target["properties"].(map[string]any)
		if !ok {
			continue
		}
		props["benchNote"] = map[string]any{"type": "string", "description": "benchNote is a new optional field."}
	}
}

func preserves(s map[string]any) bool {
	p, _ := s["x-kubernetes-preserve-unknown-fields"].(bool)
	return p
}

func hasError(fs []finding.Finding) bool {
	for _, f := range fs {
		if f.Severity == finding.SeverityError {
			return true
		}
	}
	return false
}

func marshalCRD(obj map[string]any) ([]byte, *apiextv1.CustomResourceDefinition, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return nil, nil, err
	}
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return nil, nil, err
	}
	return b, &crd, nil
}

func readObjectBytes(b []byte) (map[string]any, error) {
	var obj map[string]any
	err := yaml.Unmarshal(b, &obj)
	return obj, err
}

func deepCopy(obj map[string]any) map[string]any {
	b, _ := json.Marshal(obj)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// appCmd writes the app of the deploy benchmark (see buildApp).
func appCmd(args []string) error {
	fs := flag.NewFlagSet("app", flag.ExitOnError)
	crds := fs.String("crds", ".cache/crds", "real CRDs (hack/fetch-crds.sh)")
	out := fs.String("out", ".cache/bench/deploy/app", "output folder (v1/, v2/)")
	n := fs.Int("n", 300, "CRDs")
	crs := fs.Int("crs", 5000, "custom resources")
	_ = fs.Parse(args)
	a, err := buildApp(*crds, *out, *n, *crs)
	if err != nil {
		return err
	}
	fmt.Printf("app: %d CRDs (%.1f MiB, cycling %d real CRDs), %d custom resources over %d of them, in %s\n",
		a.crds, mib(a.crdBytes), a.sources, a.crs, a.kinds, a.dir)
	return nil
}
