package prooftest

// The object generator of the no-false-negatives proof (proof_test.go): it
// writes custom resources meant to be valid under one (old) schema, aimed at
// what another (new) schema may reject: values at the bounds of both,
// enum values, strings matching the patterns (sampled from the regular
// expression, and the shortest string the old pattern accepts and the new
// one rejects), valid values of the formats, nested maps and lists,
// unknown fields under x-kubernetes-preserve-unknown-fields (named after
// the new schema's properties), omitted optional fields (defaults apply).
// Objects the old schema rejects are discarded by the caller, so the
// generator may overshoot.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/relang"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

type ObjGen struct {
	r *rand.Rand
	// focus is the engine field path (without combinator segments) the
	// objects are aimed at: its ancestors are always present and the
	// subtree is filled densely. "" aims everywhere.
	focus  string
	budget int // values left to generate in the current object
	// density is the chance of an optional field, drawn per object:
	// sparse objects reach other cases than dense ones.
	density float64
	// samplers and witnesses cache per pattern (pair).
	samplers  map[string]*relang.Sampler
	witnesses map[[2]string]string
}

func NewObjGen(r *rand.Rand, focus string) *ObjGen {
	return &ObjGen{r: r, focus: focus, samplers: map[string]*relang.Sampler{}, witnesses: map[[2]string]string{}}
}

func (g *ObjGen) Chance(p float64) bool { return g.r.Float64() < p }

func (g *ObjGen) Pick(n int) int { return g.r.IntN(n) }

// object generates a custom resource of s (the old schema) with hints from
// hint (the new schema of the same version, may be nil).
func (g *ObjGen) Object(gvkAPIVersion, kind string, namespaced bool, s, hint *structuralschema.Structural) map[string]any {
	g.budget = 150
	if g.focus != "" {
		g.budget = 60
	}
	g.density = []float64{0.15, 0.5, 0.85}[g.Pick(3)]
	obj, _ := g.value("^", s, hint, 0).(map[string]any)
	if obj == nil {
		obj = map[string]any{}
	}
	obj["apiVersion"] = gvkAPIVersion
	obj["kind"] = kind
	meta := map[string]any{"name": g.resourceName(s)}
	if namespaced {
		meta["namespace"] = "default"
	}
	if g.Chance(0.3) {
		meta["labels"] = map[string]any{"app": "proof"}
	}
	obj["metadata"] = meta
	return obj
}

// resourceName is a valid name, sometimes long, within the constraints
// the old schema puts on metadata.name.
func (g *ObjGen) resourceName(s *structuralschema.Structural) string {
	var nameSchema *structuralschema.Structural
	if s != nil {
		if m, ok := s.Properties["metadata"]; ok {
			if n, ok := m.Properties["name"]; ok {
				nameSchema = &n
			}
		}
	}
	if nameSchema != nil && g.Chance(0.5) {
		if v, ok := g.value("^.metadata.name", nameSchema, nil, 1).(string); ok && v != "" {
			return v
		}
	}
	lengths := []int{1, 5, 12, 40, 63, 64, 100, 253}
	n := lengths[g.Pick(len(lengths))]
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[g.Pick(36)]
	}
	b[0] = 'n'
	return string(b)
}

// isAncestorOrSelf reports whether field path a is p or an ancestor of it.
func IsAncestorOrSelf(a, p string) bool {
	if a == p || a == "^" {
		return true
	}
	if !strings.HasPrefix(p, a) {
		return false
	}
	switch p[len(a)] {
	case '.', '[', '{':
		return true
	}
	return false
}

// inFocus: path is inside the focused subtree (or there is no focus);
// onFocus: path leads to it.
func (g *ObjGen) inFocus(path string) bool { return g.focus == "" || IsAncestorOrSelf(g.focus, path) }
func (g *ObjGen) onFocus(path string) bool { return g.focus != "" && IsAncestorOrSelf(path, g.focus) }

// value generates a value of s at path.
func (g *ObjGen) value(path string, s, hint *structuralschema.Structural, depth int) any {
	g.budget--
	if s == nil {
		return g.RandomJSON(depth)
	}
	if s.Nullable && g.Chance(0.25) {
		return nil
	}
	if vv := s.ValueValidation; vv != nil && len(vv.Enum) > 0 && g.Chance(0.85) {
		return finding.DeepCopyJSON(vv.Enum[g.Pick(len(vv.Enum))].Object)
	}
	switch {
	case s.XIntOrString:
		if g.Chance(0.5) {
			return g.integer(s, hint)
		}
		return g.str(s, hint)
	case s.Type == "object":
		return g.object_(path, s, hint, depth)
	case s.Type == "array":
		return g.array(path, s, hint, depth)
	case s.Type == "string":
		return g.str(s, hint)
	case s.Type == "integer":
		return g.integer(s, hint)
	case s.Type == "number":
		return g.number(s, hint)
	case s.Type == "boolean":
		return g.Chance(0.5)
	default: // untyped: preserves unknown fields
		if hint != nil && hint.Type != "" && g.Chance(0.5) {
			return g.value(path, hint, nil, depth)
		}
		return g.RandomJSON(depth)
	}
}

func (g *ObjGen) object_(path string, s, hint *structuralschema.Structural, depth int) any {
	m := map[string]any{}
	required, excluded := map[string]bool{}, map[string]bool{}
	if vv := s.ValueValidation; vv != nil {
		for _, r := range vv.Required {
			required[r] = true
		}
		// Satisfy every allOf branch's required fields and one branch of
		// each anyOf/oneOf, often leaving out what only the other
		// branches require: objects that match exactly one branch are
		// those a removed or changed branch rejects.
		for _, b := range vv.AllOf {
			for _, r := range b.Required {
				required[r] = true
			}
		}
		exclusive := g.Chance(0.5)
		for _, branches := range [][]structuralschema.NestedValueValidation{vv.AnyOf, vv.OneOf} {
			if len(branches) == 0 {
				continue
			}
			pick := g.Pick(len(branches))
			for i, b := range branches {
				for _, r := range b.Required {
					if i == pick {
						required[r] = true
					} else if exclusive {
						excluded[r] = true
					}
				}
			}
		}
	}
	inFocus := g.inFocus(path)
	p := g.density
	switch {
	case g.focus != "" && inFocus:
	case g.focus != "":
		p = 0.05
	case depth > 3:
		p /= 2
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if depth == 0 && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		child := enginetest.ChildPath(path, name)
		if !required[name] && !g.onFocus(child) && (excluded[name] || g.budget <= 0 || !g.Chance(p)) {
			continue
		}
		prop := s.Properties[name]
		m[name] = g.value(child, &prop, hintProperty(hint, name), depth+1)
	}
	if ap := s.AdditionalProperties; ap != nil && (ap.Bool || ap.Structural != nil) {
		n := g.entries(s, hint, inFocus)
		if g.onFocus(path + "{*}") {
			n = max(n, 1)
		}
		keys := g.keys(s, hint, n)
		var vh *structuralschema.Structural
		if hint != nil && hint.AdditionalProperties != nil {
			vh = hint.AdditionalProperties.Structural
		}
		for _, k := range keys {
			if ap.Structural == nil {
				m[k] = g.RandomJSON(depth + 1)
				continue
			}
			h := vh
			if h == nil {
				h = hintProperty(hint, k)
			}
			m[k] = g.value(path+"{*}", ap.Structural, h, depth+1)
		}
	}
	if s.XPreserveUnknownFields && (g.budget > 0 || inFocus) {
		for _, k := range g.keys(s, hint, g.count(0, 2, inFocus)) {
			if _, ok := s.Properties[k]; ok {
				continue
			}
			h := hintProperty(hint, k)
			if h != nil && g.Chance(0.5) {
				m[k] = g.value(enginetest.ChildPath(path, k), h, nil, depth+1)
			} else {
				m[k] = g.RandomJSON(depth + 1)
			}
		}
	}
	if s.XEmbeddedResource && g.Chance(0.9) {
		m["apiVersion"] = "v1"
		m["kind"] = "ConfigMap"
		if g.Chance(0.5) {
			m["metadata"] = map[string]any{"name": "embedded"}
		}
	}
	return m
}

func hintProperty(hint *structuralschema.Structural, name string) *structuralschema.Structural {
	if hint == nil {
		return nil
	}
	if p, ok := hint.Properties[name]; ok {
		return &p
	}
	return nil
}

// keys returns n map keys or unknown field names: the new schema's
// property names first (a map turned into properties, a field declared
// where unknown fields were kept), then plain ones.
func (g *ObjGen) keys(s, hint *structuralschema.Structural, n int) []string {
	var pool []string
	if hint != nil {
		for name := range hint.Properties {
			if _, ok := s.Properties[name]; !ok {
				pool = append(pool, name)
			}
		}
		sort.Strings(pool)
	}
	pool = append(pool, "k1", "k2", "extra", "x-y_z")
	seen := map[string]bool{}
	var out []string
	for i := 0; len(out) < n && i < 4*n; i++ {
		k := pool[g.Pick(len(pool))]
		if i >= n {
			k = fmt.Sprintf("key%d", i) // enough distinct keys for large counts
		}
		if !seen[k] && !strings.ContainsAny(k, ".[]") {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// entries picks the number of map entries: within the old schema's
// property bounds, often at one of them or just past one of the new
// schema's.
func (g *ObjGen) entries(s, hint *structuralschema.Structural, inFocus bool) int {
	lo, hi := 0, 3
	if vv := s.ValueValidation; vv != nil && vv.MinProperties != nil {
		lo = int(min(*vv.MinProperties, 20))
		hi = max(hi, lo)
	}
	if hint != nil && hint.ValueValidation != nil {
		if b := hint.ValueValidation.MaxProperties; b != nil && *b < 100 {
			hi = max(hi, int(*b)+1)
		}
		if b := hint.ValueValidation.MinProperties; b != nil && *b > 0 && *b <= 20 {
			lo = min(lo, int(*b)-1)
		}
	}
	if vv := s.ValueValidation; vv != nil && vv.MaxProperties != nil {
		hi = min(hi, int(*vv.MaxProperties))
	}
	return g.count(lo, max(lo, hi), inFocus)
}

// count picks a size in [lo, hi], often at a bound, larger in focus.
func (g *ObjGen) count(lo, hi int, inFocus bool) int {
	if !inFocus && g.Chance(0.5) {
		return lo
	}
	switch g.Pick(3) {
	case 0:
		return lo
	case 1:
		return hi
	}
	return lo + g.Pick(hi-lo+1)
}

func (g *ObjGen) array(path string, s, hint *structuralschema.Structural, depth int) any {
	lo, hi := 0, 3
	if vv := s.ValueValidation; vv != nil {
		if vv.MinItems != nil {
			lo = int(min(*vv.MinItems, 20))
			hi = max(hi, lo+1)
		}
		if vv.MaxItems != nil {
			hi = int(min(*vv.MaxItems, int64(lo+5)))
		}
	}
	var hv *structuralschema.Structural
	if hint != nil {
		hv = hint.Items
		if hvv := hint.ValueValidation; hvv != nil && hvv.MaxItems != nil && int(*hvv.MaxItems)+1 <= hi+3 {
			hi = max(hi, int(*hvv.MaxItems)+1) // one more than the new maximum, if the old one allows it
		}
	}
	if vv := s.ValueValidation; vv != nil && vv.MaxItems != nil {
		hi = min(hi, int(*vv.MaxItems))
	}
	n := g.count(lo, max(lo, hi), g.inFocus(path))
	if g.onFocus(path+"[*]") && n == 0 && hi > 0 {
		n = 1
	}
	if g.budget <= 0 {
		n = lo
	}
	list := make([]any, 0, n)
	seen := map[string]bool{}
	for range n {
		v := g.value(path+"[*]", s.Items, hv, depth+1)
		// Sets and maps hold unique items (keys): keep them valid.
		if key := listKey(s, v); key != "" {
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		list = append(list, v)
	}
	// A duplicate item, where the old list type allows it: uniqueness
	// added by the new schema rejects it.
	if s.XListType == nil || *s.XListType == "atomic" {
		if len(list) > 0 && len(list) < hi && g.Chance(0.25) {
			list = append(list, finding.DeepCopyJSON(list[g.Pick(len(list))]))
		}
	}
	return list
}

// listKey identifies an item of a set (its value) or of a map list (its
// key fields); "" for other lists.
func listKey(s *structuralschema.Structural, v any) string {
	if s.XListType == nil {
		return ""
	}
	switch *s.XListType {
	case "set":
		b, _ := json.Marshal(v)
		return string(b)
	case "map":
		m, _ := v.(map[string]any)
		var parts []any
		for _, k := range s.XListMapKeys {
			parts = append(parts, m[k])
		}
		b, _ := json.Marshal(parts)
		return string(b)
	}
	return ""
}

var formatExamples = map[string][]string{
	"bsonobjectid": {"507f1f77bcf86cd799439011"}, "uri": {"https://example.com/a", "/path"},
	"email": {"a@example.com"}, "hostname": {"example.com", "a"}, "ipv4": {"10.0.0.1"},
	"ipv6": {"::1", "2001:db8::1"}, "cidr": {"10.0.0.0/8", "2001:db8::/32"}, "mac": {"00:11:22:33:44:55"},
	"uuid":  {"123e4567-e89b-12d3-a456-426614174000", "a987fbc9-4bed-3078-af07-9141ba07c9f3"},
	"uuid3": {"a987fbc9-4bed-3078-af07-9141ba07c9f3"}, "uuid4": {"123e4567-e89b-42d3-a456-426614174000"},
	"uuid5": {"987fbc97-4bed-5078-9f07-9141ba07c9f3"}, "isbn": {"0306406152", "9780306406157"},
	"isbn10": {"0306406152"}, "isbn13": {"9780306406157"}, "creditcard": {"4111111111111111"},
	"ssn": {"123-45-6789"}, "hexcolor": {"#fff", "#a0b1c2"}, "rgbcolor": {"rgb(1,2,3)"}, "byte": {"YWJj", "YQ=="},
	"date": {"2024-01-02"}, "duration": {"1h", "30s", "1h30m"}, "datetime": {"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.5+01:00"},
	"k8sshortname": {"abc", "a-1"}, "k8slongname": {"a.b-c", "abc"}, "password": {"secret"},
}

func (g *ObjGen) str(s, hint *structuralschema.Structural) any {
	vv := s.ValueValidation
	if vv == nil {
		vv = &structuralschema.ValueValidation{}
	}
	var hvv *structuralschema.ValueValidation
	if hint != nil {
		hvv = hint.ValueValidation
	}
	for range 4 {
		var v string
		examples := formatExamples[checks.NormalizeFormat(vv.Format)]
		switch {
		case vv.Pattern != "" && g.Chance(0.9):
			if w, ok := g.patternWitness(vv.Pattern, hvv); ok && g.Chance(0.3) {
				v = w
			} else if smp := g.sampler(vv.Pattern); smp != nil {
				v, _ = smp.Sample(g.r)
			}
		case len(examples) > 0 && g.Chance(0.85):
			v = examples[g.Pick(len(examples))]
		case hvv != nil && len(hvv.Enum) > 0 && g.Chance(0.3):
			v, _ = hvv.Enum[g.Pick(len(hvv.Enum))].Object.(string)
		case g.Chance(0.6):
			// A length at a bound of either schema.
			var lengths []int64
			for _, b := range []*int64{vv.MinLength, vv.MaxLength} {
				if b != nil {
					lengths = append(lengths, *b, *b+1, max(*b-1, 0))
				}
			}
			if hvv != nil {
				for _, b := range []*int64{hvv.MinLength, hvv.MaxLength} {
					if b != nil {
						lengths = append(lengths, *b+1, max(*b-1, 0))
					}
				}
			}
			lengths = append(lengths, 0, 1, 3)
			n := min(lengths[g.Pick(len(lengths))], 300)
			v = strings.Repeat("a", int(n))
		default:
			v = relang.RandomString(g.r, 6)
		}
		if stringFits(v, vv) {
			return v
		}
	}
	return "a"
}

// stringFits checks the length bounds of the old schema (the rest is left
// to the validator).
func stringFits(v string, vv *structuralschema.ValueValidation) bool {
	n := int64(len([]rune(v)))
	return (vv.MinLength == nil || n >= *vv.MinLength) && (vv.MaxLength == nil || n <= *vv.MaxLength)
}

func (g *ObjGen) sampler(pattern string) *relang.Sampler {
	if s, ok := g.samplers[pattern]; ok {
		return s
	}
	s, err := relang.NewSampler(pattern)
	if err != nil {
		s = nil
	}
	g.samplers[pattern] = s
	return s
}

// patternWitness is a string the old pattern accepts and the new
// schema's pattern rejects, when there is one.
func (g *ObjGen) patternWitness(old string, hvv *structuralschema.ValueValidation) (string, bool) {
	if hvv == nil || hvv.Pattern == "" || hvv.Pattern == old {
		return "", false
	}
	key := [2]string{old, hvv.Pattern}
	if w, ok := g.witnesses[key]; ok {
		return w, w != "\x00none"
	}
	w := "\x00none"
	if res, err := checks.ComparePatterns(old, hvv.Pattern); err == nil && res.Verdict == relang.NotIncluded {
		w = res.Witness
	}
	g.witnesses[key] = w
	return w, w != "\x00none"
}

// bounds returns interesting numbers of a numeric schema and its hint.
func numberCandidates(s, hint *structuralschema.Structural, step float64) []float64 {
	c := []float64{0, 1, -1, 2, 100}
	add := func(vv *structuralschema.ValueValidation) {
		if vv == nil {
			return
		}
		for _, b := range []*float64{vv.Minimum, vv.Maximum} {
			if b != nil {
				c = append(c, *b, *b+step, *b-step)
			}
		}
		if vv.MultipleOf != nil {
			c = append(c, *vv.MultipleOf, 2**vv.MultipleOf, 3**vv.MultipleOf)
		}
	}
	add(s.ValueValidation)
	if hint != nil {
		add(hint.ValueValidation)
	}
	return c
}

// numberIn picks one of the candidates, most often one within the old
// schema's bounds.
func (g *ObjGen) numberIn(s *structuralschema.Structural, c []float64) float64 {
	if vv := s.ValueValidation; vv != nil && g.Chance(0.85) {
		var in []float64
		for _, v := range c {
			if (vv.Minimum == nil || v > *vv.Minimum || v == *vv.Minimum && !vv.ExclusiveMinimum) &&
				(vv.Maximum == nil || v < *vv.Maximum || v == *vv.Maximum && !vv.ExclusiveMaximum) {
				in = append(in, v)
			}
		}
		if len(in) > 0 {
			c = in
		}
	}
	return c[g.Pick(len(c))]
}

func (g *ObjGen) integer(s, hint *structuralschema.Structural) any {
	c := numberCandidates(s, hint, 1)
	c = append(c, math.MaxInt32, math.MinInt32, math.MaxInt32+1, float64(g.r.IntN(2001)-1000))
	return int64(math.Round(g.numberIn(s, c)))
}

func (g *ObjGen) number(s, hint *structuralschema.Structural) any {
	c := numberCandidates(s, hint, 0.5)
	c = append(c, 0.5, 1.25, -2.5)
	v := g.numberIn(s, c)
	if v == math.Trunc(v) && g.Chance(0.5) {
		return int64(v) // JSON has no integer/float distinction: 1 is a number too
	}
	return v
}

// randomJSON is any JSON value (for untyped, preserved fields).
func (g *ObjGen) RandomJSON(depth int) any {
	n := 7
	if depth > 4 || g.budget <= 0 {
		n = 5
	}
	switch g.Pick(n) {
	case 0:
		return relang.RandomString(g.r, 5)
	case 1:
		return int64(g.r.IntN(200) - 100)
	case 2:
		return 0.5 + float64(g.r.IntN(10))
	case 3:
		return g.Chance(0.5)
	case 4:
		return nil
	case 5:
		m := map[string]any{}
		for i := range g.Pick(3) {
			m[fmt.Sprintf("f%d", i)] = g.RandomJSON(depth + 1)
		}
		return m
	default:
		var l []any
		for range g.Pick(3) {
			l = append(l, g.RandomJSON(depth+1))
		}
		return l
	}
}
