// Command celoracle is the oracle of the CEL semantics of Kubernetes 1.35:
// it validates objects with the x-kubernetes-validations rules of their
// schemas as k8s.io/apiextensions-apiserver v0.35.0 (the apiserver of 1.35)
// does, and prints each case's errors. pkg/kapp/internal/celcompat's tests
// compare its Before137 semantics with this output
// (testdata/v135.golden.json there); hack/cel-oracle.sh rewrites it.
//
// Input (stdin): a JSON list of cases {"name", "schema" (an
// apiextensions.k8s.io/v1 JSONSchemaProps), "object", "oldObject"
// (optional: validated as an update)}. Output (stdout): a JSON object
// from each case's name to its errors (strings, sorted).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

type celCase struct {
	Name      string                   `json:"name"`
	Schema    apiextv1.JSONSchemaProps `json:"schema"`
	Object    json.RawMessage          `json:"object"`
	OldObject json.RawMessage          `json:"oldObject,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "celoracle:", err)
		os.Exit(1)
	}
}

func run() error {
	var cases []celCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		return fmt.Errorf("decoding cases: %w", err)
	}
	out := map[string][]string{}
	for _, c := range cases {
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&c.Schema, internal, nil); err != nil {
			return fmt.Errorf("case %s: converting schema: %w", c.Name, err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return fmt.Errorf("case %s: structural schema: %w", c.Name, err)
		}
		v := cel.NewValidator(s, true, celconfig.PerCallLimit)
		// Numbers as the apiserver decodes them: int64 where integral.
		var obj, old map[string]any
		if err := utiljson.Unmarshal(c.Object, &obj); err != nil {
			return fmt.Errorf("case %s: decoding object: %w", c.Name, err)
		}
		var oldArg any
		if c.OldObject != nil {
			if err := utiljson.Unmarshal(c.OldObject, &old); err != nil {
				return fmt.Errorf("case %s: decoding old object: %w", c.Name, err)
			}
			oldArg = old
		}
		errs, _ := v.Validate(context.Background(), nil, s, obj, oldArg, celconfig.RuntimeCELCostBudget)
		msgs := []string{}
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		sort.Strings(msgs)
		out[c.Name] = msgs
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
