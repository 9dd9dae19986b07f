package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// grow writes a real CRD grown to about -size bytes of YAML: every version's
// ^.spec gets copies of its own schema as new properties (shard1, shard2,
// ...), so the grown CRD has the shape, keywords and descriptions of the
// real one, only more of them. old.yaml is the grown CRD, new.yaml the same
// with a safe change (safeChange).
func grow(args []string) error {
	fs := flag.NewFlagSet("grow", flag.ExitOnError)
	src := fs.String("src", "", "real CRD file to grow")
	size := fs.Int("size", 20<<20, "target size in bytes")
	out := fs.String("out", "", "output folder for old.yaml and new.yaml")
	_ = fs.Parse(args)
	if *src == "" || *out == "" {
		return errors.New("-src and -out are required")
	}
	crd, err := readObject(*src)
	if err != nil {
		return err
	}
	base, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	specs, err := versionSpecs(crd)
	if err != nil {
		return fmt.Errorf("%s: %w", *src, err)
	}
	// Add one copy of every version's spec, measure what it added, then
	// add as many more as reach the size.
	raws := make([][]byte, len(specs))
	for i, s := range specs {
		if raws[i], err = json.Marshal(s); err != nil {
			return err
		}
	}
	addCopy := func(n int) error {
		for i, s := range specs {
			var c map[string]any
			if err := json.Unmarshal(raws[i], &c); err != nil {
				return err
			}
			c["description"] = fmt.Sprintf("shard%d holds a copy of the spec (a CRD grown for the memory benchmark).", n)
			s["properties"].(map[string]any)[fmt.Sprintf("shard%d", n)] = c
		}
		return nil
	}
	copies := 0
	if *size > len(base) {
		if err := addCopy(1); err != nil {
			return err
		}
		one, err := yaml.Marshal(crd)
		if err != nil {
			return err
		}
		perCopy := len(one) - len(base)
		copies = (*size - len(base) + perCopy/2) / perCopy
		for n := 2; n <= copies; n++ {
			if err := addCopy(n); err != nil {
				return err
			}
		}
	}
	old, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	safeChange(specs)
	new, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "old.yaml"), old, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "new.yaml"), new, 0o644); err != nil {
		return err
	}
	fmt.Printf("grow: %s (%d bytes) with %d copies of ^.spec per version: old.yaml %d bytes, new.yaml %d bytes\n",
		filepath.Base(*src), len(base), copies, len(old), len(new))
	return nil
}

// safeChange adds a new optional field to every spec and edits its
// description: no finding, by the rule that documentation edits are never findings (docs/checks.md).
func safeChange(specs []map[string]any) {
	for _, s := range specs {
		s["properties"].(map[string]any)["benchNewField"] = map[string]any{
			"type":        "string",
			"description": "benchNewField is a new optional field (the safe change of the benchmark).",
		}
		d, _ := s["description"].(string)
		s["description"] = d + " (Edited by the benchmark.)"
	}
}

// versionSpecs returns the ^.spec schema of every version of a CRD object.
func versionSpecs(crd map[string]any) ([]map[string]any, error) {
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	var specs []map[string]any
	for _, v := range versions {
		s, ok := dig(v, "schema", "openAPIV3Schema", "properties", "spec").(map[string]any)
		if !ok {
			continue
		}
		if _, ok := s["properties"].(map[string]any); !ok {
			s["properties"] = map[string]any{}
		}
		specs = append(specs, s)
	}
	if len(specs) == 0 {
		return nil, errors.New("no version with a ^.spec schema")
	}
	return specs, nil
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func readObject(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}

// change writes every CRD file of -in to -out with the safe change of
// safeChange: a release where every CRD changed, safely.
func change(args []string) error {
	fs := flag.NewFlagSet("change", flag.ExitOnError)
	in := fs.String("in", "", "folder of CRD files (one CRD per file)")
	out := fs.String("out", "", "output folder")
	_ = fs.Parse(args)
	if *in == "" || *out == "" {
		return errors.New("-in and -out are required")
	}
	files, err := filepath.Glob(filepath.Join(*in, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no .yaml files in %s", *in)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		crd, err := readObject(f)
		if err != nil {
			return err
		}
		specs, err := versionSpecs(crd)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		safeChange(specs)
		b, err := yaml.Marshal(crd)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("change: %d CRDs of %s with a safe change in %s\n", len(files), *in, *out)
	return nil
}
