package crdupgradesafety

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// FuzzCompare mutates the YAML/JSON bytes of an old and a new CRD, seeded
// from every golden case (as YAML and as JSON, which mutates differently).
// Whenever both parse into CRDs, Compare must not panic, must return
// well-formed sorted findings with known check IDs, must be deterministic,
// must leave its arguments untouched, and must find nothing when a CRD is
// compared with itself.
//
//	go test -fuzz=FuzzCompare -fuzztime=120s ./pkg/kapp/crdupgradesafety/
//
// The seeds are whole CRDs (1-3 KB per pair), and the fuzzer minimizes
// every new interesting input for up to -fuzzminimizetime (60s by
// default), which can take most of a short run; -fuzzminimizetime=5s
// leaves more time for mutation.
func FuzzCompare(f *testing.F) {
	for _, c := range prooftest.GoldenCases(f) {
		f.Add(c.Old, c.New)
		oldJSON, err1 := yaml.YAMLToJSON(c.Old)
		newJSON, err2 := yaml.YAMLToJSON(c.New)
		if err1 == nil && err2 == nil {
			f.Add(oldJSON, newJSON)
		}
	}
	f.Fuzz(func(t *testing.T, oldBytes, newBytes []byte) {
		old, ok := fuzzParseCRD(oldBytes)
		if !ok {
			return
		}
		new, ok := fuzzParseCRD(newBytes)
		if !ok {
			return
		}
		fuzzCheckCompare(t, old, new)
	})
}

// fuzzParseCRD parses a CRD leniently (unknown fields are ignored, as the
// apiserver's decoder would) and names it when the input did not, so that
// the findings' CRD names can be checked.
func fuzzParseCRD(b []byte) (*apiextv1.CustomResourceDefinition, bool) {
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return nil, false
	}
	if crd.Name == "" {
		crd.Name = "fuzz.test.example.com"
	}
	return &crd, true
}

// fuzzConfigs are the policies every fuzz input runs under: the default,
// and one that turns every option towards reporting more (strict enum
// additions, servedVersion even under a webhook) in warn mode with an
// exemption, so that the policy code runs too.
func fuzzConfigs() []*config.Settings {
	def := config.Default()
	strict := config.Default()
	strict.Mode = config.ModeWarn
	strict.Checks.SameVersion.Enum.AdditionEnforcement = config.EnforcementStrict
	strict.Checks.ServedVersion.Enum.AdditionEnforcement = config.EnforcementStrict
	strict.Checks.ServedVersion.IgnoreConversion = false
	strict.Waivers = []config.Waiver{{CRD: "fuzz.test.example.com", Checks: []string{config.CheckType}, Reason: "fuzz"}}
	open := config.Default()
	open.FailMode = config.FailModeOpen
	return []*config.Settings{&def, &strict, &open}
}

func fuzzCheckCompare(t *testing.T, old, new *apiextv1.CustomResourceDefinition) {
	t.Helper()
	oldBefore, newBefore := fuzzSnapshot(t, old), fuzzSnapshot(t, new)
	for i, cfg := range fuzzConfigs() {
		got := Compare(old, new, cfg)
		checkFindingInvariants(t, new.Name, got)
		if again := Compare(old, new, cfg); !reflect.DeepEqual(got, again) {
			t.Fatalf("config %d: Compare is not deterministic:\n%s---\n%s", i, enginetest.GoldenText(got), enginetest.GoldenText(again))
		}
	}
	if fuzzSnapshot(t, old) != oldBefore || fuzzSnapshot(t, new) != newBefore {
		t.Fatalf("Compare modified its arguments")
	}
	for _, crd := range []*apiextv1.CustomResourceDefinition{old, new} {
		if !uniqueVersionNames(crd) {
			// The apiserver rejects duplicate version names; which of two
			// "v1" schemas counts is then arbitrary, and a CRD is not
			// equal to itself version by version.
			continue
		}
		for i, cfg := range fuzzConfigs() {
			if fs := Compare(crd, crd, cfg); len(fs) > 0 {
				in, _ := json.Marshal(crd)
				t.Fatalf("config %d: comparing a CRD with itself found:\n%sCRD: %s", i, enginetest.GoldenText(fs), in)
			}
		}
	}
}

func fuzzSnapshot(t *testing.T, crd *apiextv1.CustomResourceDefinition) string {
	t.Helper()
	b, err := json.Marshal(crd)
	if err != nil {
		// Values that parsed but do not marshal (none known): compare
		// the Go representation instead.
		return fmt.Sprintf("%#v", crd)
	}
	return string(b)
}

func uniqueVersionNames(crd *apiextv1.CustomResourceDefinition) bool {
	seen := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if seen[v.Name] {
			return false
		}
		seen[v.Name] = true
	}
	return true
}

// FuzzStructuredSchemas builds random-ish schemas from fuzz bytes rather than
// mutating YAML: seed drives a small schema generator (every keyword the
// checks know, nested properties, items, map values and combinators), and
// edits overwrite bytes of seed to derive the new schema, so that old and
// new share most of their structure and differ in a few decisions. The two
// schemas become one or two versions of an old and a new CRD.
func FuzzStructuredSchemas(f *testing.F) {
	f.Add([]byte("object with properties"), []byte{3, 7})
	f.Add([]byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd}, []byte{1, 0, 5, 0xff})
	f.Add([]byte("\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07\x07"), []byte{})
	f.Add([]byte("\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4\xf3\xf2\xf1\xf0\xef\xee"), []byte{9, 9, 2, 200})
	f.Fuzz(func(t *testing.T, seed, edits []byte) {
		if len(seed) == 0 || len(seed) > 4096 {
			return
		}
		derived := append([]byte(nil), seed...)
		for i := 0; i+1 < len(edits); i += 2 {
			derived[int(edits[i])%len(derived)] = edits[i+1]
		}
		oldSchema := (&schemaGen{data: seed}).schema(0)
		newSchema := (&schemaGen{data: derived}).schema(0)
		twoVersions := seed[0]&1 == 1
		old := fuzzSchemaCRD(oldSchema, oldSchema, twoVersions, seed[0]&2 == 2)
		new := fuzzSchemaCRD(newSchema, oldSchema, twoVersions, derived[0]&2 == 2)
		fuzzCheckCompare(t, old, new)
	})
}

// fuzzSchemaCRD wraps a schema as version v1 of a CRD; with two versions,
// other becomes the served v1beta1 beside it (so that servedVersion pairs
// run too), with or without a conversion webhook.
func fuzzSchemaCRD(v1, other *apiextv1.JSONSchemaProps, twoVersions, webhook bool) *apiextv1.CustomResourceDefinition {
	crd := &apiextv1.CustomResourceDefinition{}
	crd.Name = "fuzz.test.example.com"
	crd.Spec.Group = "test.example.com"
	crd.Spec.Scope = apiextv1.NamespaceScoped
	crd.Spec.Names = apiextv1.CustomResourceDefinitionNames{Plural: "fuzz", Kind: "Fuzz"}
	crd.Spec.Versions = []apiextv1.CustomResourceDefinitionVersion{{
		Name: "v1", Served: true, Storage: true,
		Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: v1},
	}}
	if twoVersions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{
			Name: "v1beta1", Served: true,
			Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: other.DeepCopy()},
		})
	}
	if webhook {
		crd.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter}
	}
	return crd
}

// schemaGen turns bytes into a schema. Every decision reads the next byte,
// so small byte changes make small schema changes. Once the data is used
// up every decision reads 1, which adds nothing optional, and the tree
// stops growing at maxSchemaNodes nodes, so schemas stay small.
type schemaGen struct {
	data  []byte
	pos   int
	nodes int
}

func (g *schemaGen) next() byte {
	if g.pos >= len(g.data) {
		return 1
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

func (g *schemaGen) pick(options ...string) string { return options[int(g.next())%len(options)] }

func (g *schemaGen) chance(outOf int) bool { return int(g.next())%outOf == 0 }

func (g *schemaGen) rawJSON() apiextv1.JSON {
	switch g.next() % 5 {
	case 0:
		return apiextv1.JSON{Raw: []byte(strconv.Itoa(int(g.next()) % 4))}
	case 1:
		return apiextv1.JSON{Raw: []byte(strconv.Quote(g.pick("a", "b", "c", "Auto")))}
	case 2:
		return apiextv1.JSON{Raw: []byte(`{"k":` + strconv.Itoa(int(g.next())%3) + `}`)}
	case 3:
		return apiextv1.JSON{Raw: []byte(`[` + strconv.Itoa(int(g.next())%3) + `]`)}
	default:
		return apiextv1.JSON{Raw: []byte(g.pick("true", "null", "1.5", "1.50"))}
	}
}

const (
	maxSchemaDepth = 4
	maxSchemaNodes = 64
)

func (g *schemaGen) schema(depth int) *apiextv1.JSONSchemaProps {
	g.nodes++
	s := &apiextv1.JSONSchemaProps{}
	s.Type = g.pick("", "object", "object", "array", "string", "integer", "number", "boolean")
	if g.chance(4) {
		s.Description = g.pick("a", "b")
	}
	if g.chance(5) {
		s.Format = g.pick("int32", "int64", "date-time", "hostname")
	}
	// Value keywords mostly where they apply: the apiserver ignores a
	// keyword of another kind than the type's (clearIgnoredKeywords).
	often := func(kind string, rarely int) int {
		if checks.HoldsKind(s.Type, kind) {
			return 3
		}
		return rarely
	}
	if g.chance(often("string", 10)) {
		s.Pattern = g.pick("^a$", "^b+$")
	}
	if g.chance(4) {
		for n := int(g.next()) % 4; n >= 0; n-- {
			s.Enum = append(s.Enum, g.rawJSON())
		}
	}
	if g.chance(5) {
		d := g.rawJSON()
		s.Default = &d
	}
	if g.chance(5) {
		s.Nullable = true
	}
	for _, p := range []**float64{&s.Minimum, &s.Maximum, &s.MultipleOf} {
		if g.chance(often("number", 12)) {
			v := float64(int(g.next())%7) / float64(1+int(g.next())%4)
			*p = &v
		}
	}
	for i, p := range []**int64{&s.MinLength, &s.MaxLength, &s.MinItems, &s.MaxItems, &s.MinProperties, &s.MaxProperties} {
		if g.chance(often([]string{"string", "array", "object"}[i/2], 14)) {
			v := int64(g.next() % 5)
			*p = &v
		}
	}
	s.ExclusiveMinimum = g.chance(9)
	s.ExclusiveMaximum = g.chance(9)
	s.UniqueItems = g.chance(9)
	if g.chance(5) {
		s.XIntOrString = true
		if g.chance(2) {
			s.AnyOf = []apiextv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}
		}
	}
	if g.chance(5) {
		t := g.chance(2)
		s.XPreserveUnknownFields = &t
	}
	if g.chance(6) {
		lt := g.pick("atomic", "set", "map", "")
		s.XListType = &lt
		if lt == "map" {
			s.XListMapKeys = []string{g.pick("a", "b")}
		}
	}
	if g.chance(7) {
		mt := g.pick("atomic", "granular", "")
		s.XMapType = &mt
	}
	if g.chance(6) {
		s.XEmbeddedResource = true
	}
	for n := int(g.next()) % 3; n > 0 && g.chance(3); n-- {
		r := apiextv1.ValidationRule{Rule: g.pick("self.a > 0", "self.b == 'x'", "self == oldSelf"), Message: g.pick("", "m")}
		if g.chance(4) {
			b := true
			r.OptionalOldSelf = &b
		}
		s.XValidations = append(s.XValidations, r)
	}
	if depth >= maxSchemaDepth || g.nodes >= maxSchemaNodes {
		return s
	}
	if s.Type == "object" || s.Type == "" {
		for _, name := range []string{"a", "b", "c", "d"} {
			if g.chance(2) {
				if s.Properties == nil {
					s.Properties = map[string]apiextv1.JSONSchemaProps{}
				}
				s.Properties[name] = *g.schema(depth + 1)
			}
		}
		if len(s.Properties) > 0 && g.chance(3) {
			for name := range s.Properties {
				if g.chance(2) {
					s.Required = append(s.Required, name)
				}
			}
		}
		switch g.next() % 6 {
		case 0:
			s.AdditionalProperties = &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: g.schema(depth + 1)}
		case 1:
			s.AdditionalProperties = &apiextv1.JSONSchemaPropsOrBool{Allows: g.chance(2)}
		}
	}
	if s.Type == "array" || g.chance(8) {
		switch g.next() % 5 {
		case 0:
			// no items
		case 1:
			s.Items = &apiextv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextv1.JSONSchemaProps{*g.schema(depth + 1)}}
		default:
			s.Items = &apiextv1.JSONSchemaPropsOrArray{Schema: g.schema(depth + 1)}
		}
	}
	for _, list := range []*[]apiextv1.JSONSchemaProps{&s.AllOf, &s.AnyOf, &s.OneOf} {
		if g.chance(7) {
			for n := 1 + int(g.next())%2; n > 0; n-- {
				*list = append(*list, *g.schema(depth + 1))
			}
		}
	}
	if g.chance(9) {
		s.Not = g.schema(depth + 1)
	}
	return s
}

// TestStructuredSchemaGenerator guards FuzzStructuredSchemas against testing
// nothing: over fixed pseudo-random inputs, the generated pairs must reach
// most checks.
func TestStructuredSchemaGenerator(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]int{}
	withFindings := 0
	const runs = 500
	for range runs {
		seed := make([]byte, 64+rng.IntN(512))
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		derived := append([]byte(nil), seed...)
		for range 1 + rng.IntN(4) {
			derived[rng.IntN(len(derived))] = byte(rng.Uint32())
		}
		old := fuzzSchemaCRD((&schemaGen{data: seed}).schema(0), (&schemaGen{data: seed}).schema(0), seed[0]&1 == 1, false)
		new := fuzzSchemaCRD((&schemaGen{data: derived}).schema(0), (&schemaGen{data: seed}).schema(0), seed[0]&1 == 1, false)
		fs := Compare(old, new, nil)
		if len(fs) > 0 {
			withFindings++
		}
		for _, f := range fs {
			seen[f.Check]++
		}
	}
	t.Logf("%d of %d generated pairs had findings; checks reached: %v", withFindings, runs, seen)
	want := append([]string{config.CheckExistingFieldRemoval, config.CheckServedVersion, config.CheckUnhandled}, config.PropertyCheckIDs...)
	for _, id := range want {
		if seen[id] == 0 {
			t.Errorf("no generated pair reached check %s: extend schemaGen", id)
		}
	}
	if withFindings < runs/10 || withFindings == runs {
		t.Errorf("%d of %d generated pairs had findings: want some with and some without", withFindings, runs)
	}
}
