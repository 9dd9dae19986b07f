package main

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// minimalObject returns a minimal custom resource of crd: what the schema
// of every served version requires (merged), with the first enum value,
// the default, the lowest bound, a string matching the pattern. It is
// checked at every served version (the apiserver serves stored objects at
// each, without conversion) with the apiserver's own validation (OpenAPI
// schema, list sets and maps, CEL rules, through the engine's ObjectReader): ok is false
// when the generated object is not valid, and the CRD then gets no custom
// resources.
func minimalObject(crd *apiextv1.CustomResourceDefinition, name string) (obj map[string]any, ok bool) {
	obj = map[string]any{}
	var storage string
	var served []string
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Storage {
			storage = v.Name
		}
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		served = append(served, v.Name)
		root := v.Schema.OpenAPIV3Schema
		if m, ok := generate(root, 0).(map[string]any); ok {
			merge(obj, m)
		}
		if spec, ok := root.Properties["spec"]; ok {
			if m, ok := generate(&spec, 1).(map[string]any); ok {
				merge(obj, map[string]any{"spec": m})
			}
		}
	}
	if storage == "" || len(served) == 0 {
		return nil, false
	}
	delete(obj, "status")
	obj["kind"] = crd.Spec.Names.Kind
	meta := map[string]any{"name": name}
	if crd.Spec.Scope == apiextv1.NamespaceScoped {
		meta["namespace"] = "default"
	}
	obj["metadata"] = meta
	cfg := config.Default()
	for _, v := range served {
		obj["apiVersion"] = crd.Spec.Group + "/" + v
		// Read under the CRD as both the old and the new one: any rejection
		// is an existingResources finding.
		pol := finding.NewPolicy(&cfg, crd.Name)
		r, err := objects.NewObjectReaderFor(pol, crd, crd, v, finding.SourceSamples, nil)
		if err != nil {
			return obj, false
		}
		r.Read([]map[string]any{obj})
		if findings := pol.Apply(nil, []finding.VersionImpact{r.Result()}); len(findings) > 0 {
			return obj, false
		}
	}
	obj["apiVersion"] = crd.Spec.Group + "/" + storage
	return obj, true
}

// merge adds src's fields to dst, recursively for objects.
func merge(dst, src map[string]any) {
	for k, v := range src {
		d, dok := dst[k].(map[string]any)
		s, sok := v.(map[string]any)
		switch {
		case dok && sok:
			merge(d, s)
		case dst[k] == nil:
			dst[k] = v
		}
	}
}

// generate returns a minimal value of schema s.
func generate(s *apiextv1.JSONSchemaProps, depth int) any {
	if s == nil || depth > 40 {
		return nil
	}
	if s.Default != nil {
		var v any
		if json.Unmarshal(s.Default.Raw, &v) == nil {
			return normalize(v)
		}
	}
	if len(s.Enum) > 0 {
		var v any
		if json.Unmarshal(s.Enum[0].Raw, &v) == nil {
			return normalize(v)
		}
	}
	if s.XIntOrString {
		return int64(1)
	}
	typ := s.Type
	if typ == "" {
		for _, branches := range [][]apiextv1.JSONSchemaProps{s.AnyOf, s.OneOf, s.AllOf} {
			for _, b := range branches {
				if b.Type != "" {
					typ = b.Type
					break
				}
			}
		}
	}
	switch typ {
	case "object":
		m := map[string]any{}
		required := append([]string(nil), s.Required...)
		sort.Strings(required)
		for _, name := range required {
			if p, ok := s.Properties[name]; ok {
				m[name] = generate(&p, depth+1)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				m[name] = generate(s.AdditionalProperties.Schema, depth+1)
			}
		}
		if s.MinProperties != nil {
			names := make([]string, 0, len(s.Properties))
			for n := range s.Properties {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if int64(len(m)) >= *s.MinProperties {
					break
				}
				if _, set := m[n]; !set {
					p := s.Properties[n]
					m[n] = generate(&p, depth+1)
				}
			}
			for i := 0; int64(len(m)) < *s.MinProperties && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil; i++ {
				m[fmt.Sprintf("key%d", i)] = generate(s.AdditionalProperties.Schema, depth+1)
			}
		}
		return m
	case "array":
		n := int64(0)
		if s.MinItems != nil {
			n = *s.MinItems
		}
		items := make([]any, 0, n)
		for i := int64(0); i < n && s.Items != nil && s.Items.Schema != nil; i++ {
			items = append(items, distinct(generate(s.Items.Schema, depth+1), i))
		}
		return items
	case "string":
		return minimalString(s)
	case "integer", "number":
		v := 0.0
		if s.Minimum != nil {
			v = math.Ceil(*s.Minimum)
			if s.ExclusiveMinimum {
				v++
			}
		} else if s.Maximum != nil && *s.Maximum < 0 {
			v = math.Floor(*s.Maximum)
			if s.ExclusiveMaximum {
				v--
			}
		}
		if s.MultipleOf != nil && *s.MultipleOf > 0 {
			v = math.Ceil(v / *s.MultipleOf) * *s.MultipleOf
		}
		if typ == "integer" || v == math.Trunc(v) {
			return int64(v)
		}
		return v
	case "boolean":
		return false
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return map[string]any{}
	}
	return nil
}

// distinct makes the i-th generated item of a list differ from the others
// (sets and map lists need unique items or keys).
func distinct(v any, i int64) any {
	if i == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%s%d", x, i)
	case int64:
		return x + i
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, ok := x[k].(string); ok {
				x[k] = fmt.Sprintf("%s%d", s, i)
			}
		}
	}
	return v
}

var formats = map[string]string{
	"date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "duration": "1s", "byte": "YQ==",
	"uri": "https://example.com", "url": "https://example.com", "email": "a@example.com",
	"hostname": "example.com", "ipv4": "10.0.0.1", "ipv6": "::1", "ip": "10.0.0.1", "cidr": "10.0.0.0/24",
	"uuid": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "int-or-string": "1", "password": "a",
}

var stringCandidates = []string{"a", "example", "example.com", "abc-def", "a1", "Abc", "1", "10", "1s", "5m", "1Gi",
	"https://example.com", "a/b", "example.com/a", "10.0.0.1", "10.0.0.0/24", "us-east-1", "default", "v1",
	"2024-01-01T00:00:00Z", "a@example.com", "/a", "A", "a_b", "a.b", "0", "+1", "*", "a=b", "http://example.com"}

// minimalString returns a string of s's format, or the first candidate
// matching its pattern and lengths.
func minimalString(s *apiextv1.JSONSchemaProps) string {
	if v, ok := formats[s.Format]; ok && s.Pattern == "" {
		return v
	}
	var re *regexp.Regexp
	if s.Pattern != "" {
		var err error
		if re, err = regexp.Compile(s.Pattern); err != nil {
			re = nil
		}
	}
	for _, c := range stringCandidates {
		if s.MinLength != nil && int64(len(c)) < *s.MinLength {
			c += strings.Repeat("a", int(*s.MinLength)-len(c))
		}
		if s.MaxLength != nil && int64(len(c)) > *s.MaxLength {
			continue
		}
		if re == nil || re.MatchString(c) {
			return c
		}
	}
	return "a"
}

// normalize turns JSON numbers decoded as float64 into int64 when whole.
func normalize(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) {
			return int64(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	}
	return v
}
