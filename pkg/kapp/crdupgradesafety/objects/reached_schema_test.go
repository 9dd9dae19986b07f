package objects

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// TestPrunedValidatorsAgreeWithFull: the validators built for a batch of
// objects from the parts of the schema those objects reach report, for
// each object, exactly what the apiserver's validators of the whole schema
// report. Objects are generated from the old schema of every golden case
// (both ways) and of mutated real CRDs, some with random values put in
// random places, and validated under the new schema in batches of 1 to 8.
func TestPrunedValidatorsAgreeWithFull(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var stats pruneStats
	for _, c := range prooftest.GoldenCases(t) {
		old := enginetest.ParseCRDStrict(t, c.Dir+"/old.yaml", c.Old)
		new := enginetest.ParseCRDStrict(t, c.Dir+"/new.yaml", c.New)
		stats.add(checkPrunedAgree(t, c.Name, old, new, r, 24))
		stats.add(checkPrunedAgree(t, c.Name+" (reversed)", new, old, r, 24))
	}
	if dir, ok := enginetest.RealCRDDirIfPresent(t); ok {
		for _, f := range enginetest.RealCRDFilesIn(t, dir) {
			_, crd := enginetest.ReadRealCRD(t, f)
			stats.add(checkPrunedAgree(t, f, crd, crd, r, 16))
			if mutated, version, _, _, _ := prooftest.MutateCRD(r, crd); mutated != nil {
				stats.add(checkPrunedAgree(t, f+" (mutated)", prooftest.SingleVersion(crd, version), prooftest.SingleVersion(mutated, version), r, 16))
			}
		}
	}
	t.Logf("%d objects in %d batches, %d of them invalid under the new schema", stats.objects, stats.batches, stats.invalid)
	// The comparison means something only if objects fail validation.
	require.Greater(t, stats.invalid, stats.objects/10)
}

type pruneStats struct{ objects, batches, invalid int }

func (s *pruneStats) add(o pruneStats) {
	s.objects += o.objects
	s.batches += o.batches
	s.invalid += o.invalid
}

// checkPrunedAgree validates n objects per version of old, in random
// batches, under new's schema with pruned and with whole validators.
func checkPrunedAgree(t *testing.T, name string, old, new *apiextv1.CustomResourceDefinition, r *rand.Rand, n int) pruneStats {
	t.Helper()
	var stats pruneStats
	newVersions := checks.VersionsByName(new)
	for _, ov := range old.Spec.Versions {
		if newVersions[ov.Name] == nil || ov.Schema == nil {
			continue
		}
		mo, err := prooftest.NewServedSchema(old, ov.Name)
		if err != nil {
			continue // not structural: the apiserver would not serve it
		}
		full, err := newVersionValidator(new, ov.Name, nil, false)
		require.NoError(t, err, name)
		if full == nil {
			continue
		}
		gen := prooftest.NewObjGen(r, "")
		var objs []any
		for range n {
			obj := gen.Object(mo.GVK.GroupVersion().String(), mo.GVK.Kind, mo.Namespaced, mo.Structural, nil)
			if r.IntN(3) == 0 {
				scramble(gen, obj)
			}
			objs = append(objs, obj)
		}
		for len(objs) > 0 {
			size := min(1+r.IntN(8), len(objs))
			batch := objs[:size]
			objs = objs[size:]
			pruned, err := newVersionValidator(new, ov.Name, batch, true)
			require.NoError(t, err, name)
			stats.batches++
			for _, obj := range batch {
				stats.objects++
				want := errorStrings(full.validate(obj.(map[string]any)))
				got := errorStrings(pruned.validate(obj.(map[string]any)))
				if len(want) > 0 {
					stats.invalid++
				}
				if !slices.Equal(want, got) {
					js, _ := yaml.Marshal(obj)
					t.Fatalf("%s: version %s: the pruned validators disagree with the whole schema's\nobject:\n%s\nwhole schema: %q\npruned:       %q",
						name, ov.Name, js, want, got)
				}
			}
		}
	}
	return stats
}

// scramble puts a random JSON value at a random place of obj (below its
// apiVersion, kind and metadata).
func scramble(gen *prooftest.ObjGen, obj map[string]any) {
	var m map[string]any = obj
	for {
		var keys []string
		for k := range m {
			if k != "apiVersion" && k != "kind" && k != "metadata" {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			m[fmt.Sprintf("x%d", gen.Pick(3))] = gen.RandomJSON(0)
			return
		}
		slices.Sort(keys)
		k := keys[gen.Pick(len(keys))]
		child, ok := m[k].(map[string]any)
		if !ok || gen.Chance(0.3) {
			m[k] = gen.RandomJSON(0)
			return
		}
		m = child
	}
}

func errorStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	slices.Sort(out)
	return out
}

func TestPruneAbsentProperties(t *testing.T) {
	const schemaYAML = `
type: object
required: [spec]
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      b: {type: object, properties: {c: {type: string}, d: {type: string}}}
      list: {type: array, items: {type: object, properties: {u: {type: string}, w: {type: string}}}}
      labels: {type: object, additionalProperties: {type: object, properties: {p: {type: string}, q: {type: string}}}}
    anyOf:
    - properties: {a: {minLength: 1}, b: {}}
  status: {type: object, properties: {phase: {type: string}}}
`
	cases := []struct {
		name string
		objs []any
		want string // the properties left, as paths
	}{
		{name: "no objects: nothing reached", objs: nil, want: ""},
		{name: "a missing required field is still seen: required stays", objs: []any{map[string]any{}},
			want: ""},
		{name: "one field", objs: []any{map[string]any{"spec": map[string]any{"a": "x"}}},
			want: "spec spec.a spec.anyOf[0].a"},
		{name: "the union over the batch", objs: []any{
			map[string]any{"spec": map[string]any{"b": map[string]any{"c": "1"}}},
			map[string]any{"spec": map[string]any{"list": []any{map[string]any{"w": "2"}}}, "status": map[string]any{}},
		}, want: "spec spec.anyOf[0].b spec.b spec.b.c spec.list spec.list[*].w status"},
		{name: "map values", objs: []any{map[string]any{"spec": map[string]any{"labels": map[string]any{"k": map[string]any{"q": "1"}}}}},
			want: "spec spec.labels spec.labels{*}.q"},
		{name: "values of another type", objs: []any{map[string]any{"spec": "not an object"}},
			want: "spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := internalSchema(t, schemaYAML)
			pruneAbsentProperties(s, tc.objs)
			require.Equal(t, []string{"spec"}, s.Required)
			require.Equal(t, tc.want, propertyPaths(s, ""))
		})
	}
}

// internalSchema decodes a v1 schema and converts it to the internal type.
func internalSchema(t *testing.T, schemaYAML string) *apiextensions.JSONSchemaProps {
	t.Helper()
	v1 := &apiextv1.JSONSchemaProps{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(schemaYAML), v1))
	s := &apiextensions.JSONSchemaProps{}
	require.NoError(t, apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, s, nil))
	return s
}

// propertyPaths lists the properties of s, sorted, space separated.
func propertyPaths(s *apiextensions.JSONSchemaProps, prefix string) string {
	var out []string
	var walk func(s *apiextensions.JSONSchemaProps, prefix string)
	walk = func(s *apiextensions.JSONSchemaProps, prefix string) {
		for name, p := range s.Properties {
			path := prefix + name
			out = append(out, path)
			walk(&p, path+".")
		}
		for i := range s.AnyOf {
			walk(&s.AnyOf[i], fmt.Sprintf("%sanyOf[%d].", prefix, i))
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(s.Items.Schema, prefix[:len(prefix)-1]+"[*].")
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walk(s.AdditionalProperties.Schema, prefix[:len(prefix)-1]+"{*}.")
		}
	}
	walk(s, prefix)
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestDropUnreachedRules(t *testing.T) {
	const schemaYAML = `
type: object
x-kubernetes-validations: [{rule: "has(self.spec)"}]
properties:
  spec:
    type: object
    x-kubernetes-validations: [{rule: "!has(self.b) || self.b.c != 'x'"}]
    properties:
      a: {type: string, x-kubernetes-validations: [{rule: "self != 'no'"}]}
      b:
        type: object
        x-kubernetes-validations: [{rule: "true"}]
        properties: {c: {type: string, x-kubernetes-validations: [{rule: "self != ''"}]}}
      list: {type: array, items: {type: string, x-kubernetes-validations: [{rule: "self != ''"}]}}
`
	cases := []struct {
		name string
		objs []any
		want string // the nodes that keep rules
	}{
		{name: "no objects", objs: nil, want: ""},
		{name: "the root only", objs: []any{map[string]any{}}, want: "^"},
		{name: "spec and a", objs: []any{map[string]any{"spec": map[string]any{"a": "1"}}}, want: "^ ^.spec ^.spec.a"},
		{name: "an empty list reaches no item", objs: []any{map[string]any{"spec": map[string]any{"list": []any{}}}},
			want: "^ ^.spec"},
		{name: "the union over the batch", objs: []any{
			map[string]any{"spec": map[string]any{"b": map[string]any{}}},
			map[string]any{"spec": map[string]any{"list": []any{"x"}}},
		}, want: "^ ^.spec ^.spec.b ^.spec.list[*]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schema.NewStructural(internalSchema(t, schemaYAML))
			require.NoError(t, err)
			dropUnreachedRules(s, tc.objs)
			var got []string
			var walk func(s *schema.Structural, path string)
			walk = func(s *schema.Structural, path string) {
				if len(s.XValidations) > 0 {
					got = append(got, path)
				}
				for name, p := range s.Properties {
					walk(&p, path+"."+name)
				}
				if s.Items != nil {
					walk(s.Items, path+"[*]")
				}
			}
			walk(s, "^")
			slices.Sort(got)
			require.Equal(t, tc.want, strings.Join(got, " "))
			// Every property stays: rules that stay may name any field.
			require.Len(t, s.Properties["spec"].Properties, 3)
		})
	}
}

// BenchmarkValidateExisting validates batches of generated custom
// resources of large real CRDs (a batch of one, and of 100, which reach
// most of the schema), with the validators built from the whole schema and
// from the parts the batch reaches (what a validator of stored objects does): one
// iteration builds the validators and validates the batch.
//
//	go test -run '^$' -bench ValidateExisting ./pkg/kapp/crdupgradesafety/objects/
func BenchmarkValidateExisting(b *testing.B) {
	for _, f := range []string{enginetest.PrometheusesCRD, "gateway-api/experimental/gateway.networking.k8s.io_httproutes.yaml",
		"cluster-api/new/cluster.x-k8s.io_clusters.yaml"} {
		_, crd := enginetest.ReadRealCRD(b, f)
		var version string
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				version = v.Name
			}
		}
		served, err := prooftest.NewServedSchema(crd, version)
		require.NoError(b, err)
		gen := prooftest.NewObjGen(rand.New(rand.NewPCG(1, 2)), "")
		for _, n := range []int{1, 100} {
			var objs []any
			for range n {
				objs = append(objs, gen.Object(served.GVK.GroupVersion().String(), served.GVK.Kind, served.Namespaced, served.Structural, nil))
			}
			for _, prune := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/objects=%d/prune=%v", crd.Spec.Names.Plural, n, prune), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						v, err := newVersionValidator(crd, version, objs, prune)
						if err != nil {
							b.Fatal(err)
						}
						for _, obj := range objs {
							v.validate(obj.(map[string]any))
						}
					}
				})
			}
		}
	}
}

// TestReachedSchemasAgreeOnCEL: the CEL rules run against the reached
// schemas (useReachedSchemas) report, for every object of a batch, exactly
// what they report against the whole schema, for the ways a rule reads a
// value: field access and has() on present, absent and null fields,
// iteration over maps and lists, equality of objects (with unknown fields
// preserved too), embedded resources, int-or-string. Each object is
// validated in a batch of its own and in the batch of all of them, and
// the rules must reject some of them.
func TestReachedSchemasAgreeOnCEL(t *testing.T) {
	const schemaYAML = `
type: object
x-kubernetes-validations: [{rule: "has(self.spec)", message: "spec is required"}]
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: "!has(self.a) || self.a != 'no'"
    - rule: "!has(self.b) || self.b.c.size() < 5"
    - rule: "!has(self.nul) || self.nul != 'q'"
    - rule: "!has(self.deep) || self.deep.p.q != 'z'"
    - rule: "!has(self.io) || self.io != 'bad'"
    - rule: "!has(self.free) || !has(self.free.known) || self.free.known != 'k'"
    properties:
      a: {type: string}
      b: {type: object, properties: {c: {type: string}, d: {type: integer}, e: {type: string}}}
      nul: {type: string, nullable: true}
      io: {x-kubernetes-int-or-string: true}
      deep:
        type: object
        properties:
          p: {type: object, properties: {q: {type: string}, w: {type: string}}}
          other: {type: string}
      labels:
        type: object
        additionalProperties: {type: string}
        x-kubernetes-validations: [{rule: "self.all(k, self[k] != 'x')"}]
      items:
        type: array
        x-kubernetes-validations:
        - rule: "self.all(i, !has(i.name) || i.name != '')"
        - rule: "self.size() == 0 || self.exists(i, has(i.v) && i.v == 1)"
        - rule: "self.all(i, self.exists_one(j, j == i))"
          message: "items are unique"
        items: {type: object, properties: {name: {type: string}, v: {type: integer}, w: {type: string}}}
      free:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties: {known: {type: string}, other: {type: string}}
      frees:
        type: array
        x-kubernetes-validations: [{rule: "self.all(i, self.exists_one(j, j == i))", message: "frees are unique"}]
        items:
          type: object
          x-kubernetes-preserve-unknown-fields: true
          properties: {known: {type: string}, other: {type: string}}
      embedded:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
        x-kubernetes-validations: [{rule: "self.kind != 'Bad'"}, {rule: "!has(self.metadata.name) || self.metadata.name != 'bad'"}]
`
	var props apiextv1.JSONSchemaProps
	require.NoError(t, yaml.Unmarshal([]byte(schemaYAML), &props))
	crd := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{
		Group: "example.com", Scope: apiextv1.NamespaceScoped,
		Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
		Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
			Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &props}}},
	}}
	obj := func(spec string) any {
		o := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "default"}}
		if spec != "" {
			var s any
			require.NoError(t, yaml.Unmarshal([]byte(spec), &s))
			o["spec"] = s
		}
		return o
	}
	objs := []any{
		obj(""),
		obj("{}"),
		obj("{a: ok}"),
		obj("{a: 'no'}"),
		obj("{b: {c: abc}}"),
		obj("{b: {c: abcdef}}"),
		obj("{b: {d: 1}}"),
		obj("{nul: null}"),
		obj("{nul: q}"),
		obj("{io: 3}"),
		obj("{io: bad}"),
		obj("{deep: {other: x}}"),
		obj("{deep: {p: {q: z}}}"),
		obj("{deep: {p: {w: z}}}"),
		obj("{labels: {a: b}}"),
		obj("{labels: {a: x}}"),
		obj("{items: []}"),
		obj("{items: [{name: a, v: 2}]}"),
		obj("{items: [{name: '', v: 1}, {w: x}]}"),
		obj("{items: [{v: 1}]}"),
		obj("{items: [{v: 1, name: a}, {v: 1, name: a}]}"),
		obj("{items: [{v: 1, name: a}, {v: 1, name: b}]}"),
		obj("{items: [{v: 1, w: a}, {v: 1}]}"),
		obj("{free: {known: k}}"),
		obj("{frees: [{unknown: 1}, {unknown: 1}]}"),
		obj("{frees: [{unknown: 1}, {unknown: 2}]}"),
		obj("{frees: [{known: a, unknown: 1}, {known: a}]}"),
		obj("{frees: [{known: a}, {known: a}]}"),
		obj("{frees: [{known: a}, {other: a}]}"),
		obj("{embedded: {apiVersion: v1, kind: Bad, metadata: {name: x}}}"),
		obj("{embedded: {apiVersion: v1, kind: Good, metadata: {name: bad}, spec: {x: 1}}}"),
		obj("{embedded: {apiVersion: v1, kind: Good, metadata: {name: good}}}"),
	}
	full, err := newVersionValidator(crd, "v1", nil, false)
	require.NoError(t, err)
	require.NotNil(t, full.cel)
	all, err := newVersionValidator(crd, "v1", objs, true)
	require.NoError(t, err)
	celErrors := func(v *versionValidator, o any) []string {
		errs, _ := v.cel.Validate(t.Context(), nil, v.structural, o, nil, 1<<40)
		return errorStrings(errs)
	}
	rejected := 0
	for i, o := range objs {
		want := errorStrings(full.validate(o.(map[string]any)))
		wantCEL := celErrors(full, o)
		if len(wantCEL) > 0 {
			rejected++
		}
		one, err := newVersionValidator(crd, "v1", []any{o}, true)
		require.NoError(t, err)
		for name, v := range map[string]*versionValidator{"its own batch": one, "the batch of all": all} {
			js, _ := yaml.Marshal(o)
			require.Equal(t, want, errorStrings(v.validate(o.(map[string]any))), "object %d in %s:\n%s", i, name, js)
			require.Equal(t, wantCEL, celErrors(v, o), "object %d in %s:\n%s", i, name, js)
		}
	}
	require.GreaterOrEqual(t, rejected, 12, "the rules must reject objects for the comparison to mean something")
}

// TestReachedSchema: the reached copy keeps the properties some value has
// (an empty map where none), at every depth, and leaves the schema as it
// is.
func TestReachedSchema(t *testing.T) {
	s, err := schema.NewStructural(internalSchema(t, `
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      m: {type: object, additionalProperties: {type: object, properties: {x: {type: string}, z: {type: string}}}}
      l: {type: array, items: {type: object, properties: {x: {type: string}, z: {type: string}}}}
  status: {type: object, properties: {z: {type: string}}}
`))
	require.NoError(t, err)
	r := reachedSchema(s, []any{
		map[string]any{"spec": map[string]any{"m": map[string]any{"k": map[string]any{"x": "1"}}}},
		map[string]any{"spec": map[string]any{"l": []any{map[string]any{"z": "1"}}}, "status": map[string]any{}},
	})
	require.ElementsMatch(t, []string{"spec", "status"}, slices.Collect(maps.Keys(r.Properties)))
	spec := r.Properties["spec"]
	require.ElementsMatch(t, []string{"m", "l"}, slices.Collect(maps.Keys(spec.Properties)))
	require.ElementsMatch(t, []string{"x"}, slices.Collect(maps.Keys(spec.Properties["m"].AdditionalProperties.Structural.Properties)))
	require.ElementsMatch(t, []string{"z"}, slices.Collect(maps.Keys(spec.Properties["l"].Items.Properties)))
	status := r.Properties["status"]
	require.NotNil(t, status.Properties)
	require.Empty(t, status.Properties)
	require.Len(t, s.Properties["spec"].Properties, 3, "the schema itself is left as it is")
	require.Len(t, s.Properties["spec"].Properties["m"].AdditionalProperties.Structural.Properties, 2)
}
