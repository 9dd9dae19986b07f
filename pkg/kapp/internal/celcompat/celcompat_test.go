package celcompat

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// celCase is a case of testdata/cases.json, the input of hack/celoracle.
type celCase struct {
	Name      string                   `json:"name"`
	Schema    apiextv1.JSONSchemaProps `json:"schema"`
	Object    json.RawMessage          `json:"object"`
	OldObject json.RawMessage          `json:"oldObject,omitempty"`
}

type loadedCase struct {
	name     string
	s        *structuralschema.Structural
	internal *apiextensions.JSONSchemaProps
	obj, old map[string]any
}

func loadCases(t *testing.T) []loadedCase {
	t.Helper()
	b, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []celCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	out := make([]loadedCase, len(cases))
	for i, c := range cases {
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&c.Schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		out[i] = loadedCase{name: c.Name, s: s, internal: internal}
		// Numbers as the apiserver decodes them (int64 where integral).
		if err := utiljson.Unmarshal(c.Object, &out[i].obj); err != nil {
			t.Fatal(err)
		}
		if c.OldObject != nil {
			if err := utiljson.Unmarshal(c.OldObject, &out[i].old); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// verdict is what v says of the case: its errors, sorted, as
// hack/celoracle prints them.
func verdict(t *testing.T, v *cel.Validator, c loadedCase) []string {
	var old any
	if c.old != nil {
		old = c.old
	}
	errs, _ := v.Validate(t.Context(), nil, c.s, c.obj, old, celconfig.RuntimeCELCostBudget)
	return messages(errs)
}

func messages(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

// TestSemanticsAgainstTheirOracles: for each case, Before137 gives what
// k8s.io/apiextensions-apiserver v0.35.0 gives (testdata/v135.golden.json,
// written by hack/cel-oracle.sh from that library) and Linked what the
// linked library (v0.37) gives; and the cases hold verdicts that differ
// between the two, each named in differ.
func TestSemanticsAgainstTheirOracles(t *testing.T) {
	b, err := os.ReadFile("testdata/v135.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden map[string][]string
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	// The cases whose verdicts differ between 1.35 and 1.37.
	differ := map[string]bool{
		"set-equal-other-set-has-duplicate":     true,
		"set-equal-literal-with-duplicate":      true,
		"set-equal-stored-duplicate-both-sides": true,
		"set-not-equal-with-duplicate":          true,
		"set-equal-plain-list-with-duplicate":   true,
		"map-equal-other-has-duplicate-key":     true,
		"set-of-numbers-equal-int-and-double":   true,
	}
	cases := loadCases(t)
	if len(golden) != len(cases) {
		t.Fatalf("testdata/v135.golden.json has %d cases, cases.json %d: run hack/cel-oracle.sh", len(golden), len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want135, ok := golden[c.name]
			if !ok {
				t.Fatalf("no oracle verdict: run hack/cel-oracle.sh")
			}
			want137 := verdict(t, cel.NewValidator(c.s, true, celconfig.PerCallLimit), c)
			for _, tc := range []struct {
				sem  Semantics
				want []string
			}{{Before137, want135}, {Linked, want137}} {
				v, err := NewValidator(c.s, true, celconfig.PerCallLimit, tc.sem)
				if err != nil {
					t.Fatal(err)
				}
				if got := verdict(t, v, c); !slices.Equal(got, tc.want) {
					t.Errorf("%s: got %q, want %q", tc.sem, got, tc.want)
				}
			}
			if got := !slices.Equal(want135, want137); got != differ[c.name] {
				t.Errorf("1.35 and 1.37 differ: %t, want %t (1.35 %q, 1.37 %q)", got, differ[c.name], want135, want137)
			}
		})
	}
}

// TestUseInStrategy: the apiserver's custom resource strategy with its
// CEL validator put to Before137 judges a create as 1.35 does, and the
// strategy left Linked as 1.37 does.
func TestUseInStrategy(t *testing.T) {
	for _, c := range loadCases(t) {
		if c.name != "set-equal-other-set-has-duplicate" {
			continue
		}
		for _, tc := range []struct {
			sem      Semantics
			refusing bool // the rule refuses the object
		}{{Before137, false}, {Linked, true}} {
			sv, _, err := validation.NewSchemaValidator(c.internal)
			if err != nil {
				t.Fatal(err)
			}
			strategy := customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(), false,
				runtimeschema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, sv, sv, c.s, nil, nil, nil)
			if err := UseInStrategy(strategy, tc.sem); err != nil {
				t.Fatal(err)
			}
			errs := strategy.Validate(t.Context(), &unstructured.Unstructured{Object: c.obj})
			refusing := slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == "spec" && e.Detail == "rule failed" })
			if refusing != tc.refusing {
				t.Errorf("%s: the rule refuses the object: %t, want %t (%v)", tc.sem, refusing, tc.refusing, errs)
			}
		}
		return
	}
	t.Fatal("case not found")
}

// TestUseFindsTheActivationFactory: a library whose validator or strategy
// is shaped otherwise is refused (ErrLayout), not silently judged at 1.37.
func TestUseFindsTheActivationFactory(t *testing.T) {
	if err := use(&cel.Validator{}, before137Activations); err != nil {
		t.Fatalf("the library's validator: %v", err)
	}
	if err := UseInStrategy(struct{ celValidator int }{}, Before137); err == nil {
		t.Error("a strategy without a CEL validator field: no error")
	}
	if err := UseInStrategy(42, Before137); err == nil {
		t.Error("not a strategy: no error")
	}
	if err := UseInStrategy(42, Linked); err != nil {
		t.Errorf("Linked changes nothing: %v", err)
	}
}
