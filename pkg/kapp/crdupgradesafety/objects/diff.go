package objects

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// What reading an object under the new CRD changes: the comparison of the
// old and the new read, field by field, and whether two schemas can read a
// stored object differently at all.

// differ finds the fields whose value differs between an object read under
// the old CRD and under the new one.
type differ struct {
	out *[]objectEffect
	// stored: the objects are read from the apiserver, which applied the
	// old defaults on read: a value equal to the old default may be
	// stored, or only read (defaulting is not persisted until a write).
	stored bool
	// samples: the objects are samples, read under the old CRD from raw
	// (what the sample file sets), which tells a value the sample holds
	// from one only the old CRD's defaults gave it.
	samples bool
}

// object compares a (old read) and b (new read) at the concrete path
// segments path and the schema path sp, under the old and the new
// structural schemas of that node (nil where a side declares none). For
// samples, raw is the sample's own value there (nil where it sets none).
func (d differ) object(path []string, sp schemapath.Path, a, b, raw any, oldS, newS *structuralschema.Structural, root bool) {
	if d.stored && oldS != nil && oldS.Default.Object != nil && a != nil &&
		!sameDefault(oldS, newS) && sameValue(a, oldS.Default.Object) && sameValue(a, b) {
		to := "absent"
		if newS != nil && newS.Default.Object != nil {
			to = renderValue(newS.Default.Object)
		}
		d.emit(finding.EffectDefaulted, path, sp, fmt.Sprintf("%s, the old default -> %s where it is not stored", renderValue(a), to))
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			d.emit(finding.EffectDefaulted, path, sp, renderValue(a)+" -> "+renderValue(b))
			return
		}
		rawMap, _ := raw.(map[string]any)
		for k, x := range av {
			if root && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			csp, co, cn := childSchema(sp, k, oldS, newS)
			cpath := append(path[:len(path):len(path)], fieldSegment(k, len(path) == 0))
			rx, inRaw := rawMap[k]
			y, present := bv[k]
			switch {
			case present:
				d.object(cpath, csp, x, y, rx, co, cn, false)
			case d.samples && (!inRaw || rx == nil && x != nil):
				// The sample never set the field (or set it null): only
				// the old CRD's default gave it a value, which the new
				// CRD no longer gives. Nothing the sample holds is lost.
				d.emit(finding.EffectDefaulted, cpath, csp, renderValue(x)+", the old default -> absent")
			default:
				d.emit(finding.EffectPruned, cpath, csp, renderValue(x))
			}
		}
		for k, y := range bv {
			if _, present := av[k]; present || root && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			if !storable(oldS, k) {
				// The default of a new optional field: no stored object
				// could hold data there (docs/checks.md, "Never findings").
				continue
			}
			csp, _, _ := childSchema(sp, k, oldS, newS)
			d.emit(finding.EffectDefaulted, append(path[:len(path):len(path)], fieldSegment(k, len(path) == 0)), csp, "absent -> "+renderValue(y))
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			d.emit(finding.EffectDefaulted, path, sp, renderValue(a)+" -> "+renderValue(b))
			return
		}
		var co, cn *structuralschema.Structural
		if oldS != nil {
			co = oldS.Items
		}
		if newS != nil {
			cn = newS.Items
		}
		rawList, _ := raw.([]any)
		for i := range max(len(av), len(bv)) {
			cpath := append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]")
			var rx any
			if i < len(rawList) {
				rx = rawList[i]
			}
			switch {
			case i >= len(bv):
				d.emit(finding.EffectPruned, cpath, sp.Items(), renderValue(av[i]))
			case i >= len(av):
				d.emit(finding.EffectDefaulted, cpath, sp.Items(), "absent -> "+renderValue(bv[i]))
			default:
				d.object(cpath, sp.Items(), av[i], bv[i], rx, co, cn, false)
			}
		}
	default:
		if !sameValue(a, b) {
			d.emit(finding.EffectDefaulted, path, sp, renderValue(a)+" -> "+renderValue(b))
		}
	}
}

func (d differ) emit(effect finding.Effect, path []string, sp schemapath.Path, value string) {
	*d.out = append(*d.out, objectEffect{effect: effect, field: strings.Join(path, ""), schemaPath: sp, value: value})
}

// fieldSegment is the concrete path segment of a map key: "spec" at the
// root, ".spec" below.
func fieldSegment(k string, first bool) string {
	if first {
		return k
	}
	return "." + k
}

// childSchema returns the schema path of the field k of an object at sp and
// its old and new schemas: a declared property (in either schema) is
// ".k", an entry of a map (additionalProperties) is "{*}".
func childSchema(sp schemapath.Path, k string, oldS, newS *structuralschema.Structural) (schemapath.Path, *structuralschema.Structural, *structuralschema.Structural) {
	prop := func(s *structuralschema.Structural) (*structuralschema.Structural, bool) {
		if s == nil {
			return nil, false
		}
		if p, ok := s.Properties[k]; ok {
			return &p, true
		}
		return nil, false
	}
	entry := func(s *structuralschema.Structural) *structuralschema.Structural {
		if s == nil || s.AdditionalProperties == nil {
			return nil
		}
		return s.AdditionalProperties.Structural
	}
	po, okOld := prop(oldS)
	pn, okNew := prop(newS)
	if okOld || okNew {
		return sp.Child(k), po, pn
	}
	if eo, en := entry(oldS), entry(newS); eo != nil || en != nil ||
		oldS != nil && oldS.AdditionalProperties != nil || newS != nil && newS.AdditionalProperties != nil {
		return sp.Values(), eo, en
	}
	return sp.Child(k), nil, nil
}

// readsDiffer tells whether reading an object under the new schema n may
// change what reading it under the old schema o gave: a property, unknown
// fields or map entries no longer kept (pruning), a default changed or
// removed, null no longer allowed, a type or an embedded resource changed
// (conservatively). A property only n declares changes nothing stored: its
// default is the "new optional field" rule, not an effect.
func readsDiffer(o, n *structuralschema.Structural) bool {
	switch {
	case o == nil || n == nil:
		return o != n
	case o.Type != n.Type, o.XEmbeddedResource != n.XEmbeddedResource,
		o.XPreserveUnknownFields && !n.XPreserveUnknownFields,
		o.Nullable && !n.Nullable,
		!sameValue(o.Default.Object, n.Default.Object),
		(o.Items == nil) != (n.Items == nil):
		return true
	}
	for name, np := range n.Properties {
		if _, ok := o.Properties[name]; !ok && (hasDefault(&np) || o.XPreserveUnknownFields || o.AdditionalProperties != nil) {
			// A new property's default may satisfy a required field; where
			// the old schema kept unknown fields or map entries, stored
			// objects may hold data under the new property's name.
			return true
		}
	}
	for name, op := range o.Properties {
		np, ok := n.Properties[name]
		if !ok {
			if !n.XPreserveUnknownFields {
				return true
			}
			continue
		}
		if readsDiffer(&op, &np) {
			return true
		}
	}
	if o.AdditionalProperties != nil {
		if n.AdditionalProperties == nil {
			return true
		}
		if o.AdditionalProperties.Structural != nil || n.AdditionalProperties.Structural != nil {
			if readsDiffer(o.AdditionalProperties.Structural, n.AdditionalProperties.Structural) {
				return true
			}
		}
	}
	return o.Items != nil && readsDiffer(o.Items, n.Items)
}

// hasDefault tells whether s or a schema below it has a default.
func hasDefault(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefault(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasDefault(s.AdditionalProperties.Structural) {
		return true
	}
	return hasDefault(s.Items)
}

// storable tells whether an object under the old schema s could hold the
// field k: s declares it, holds map entries, or keeps unknown fields.
func storable(s *structuralschema.Structural, k string) bool {
	if s == nil {
		return false
	}
	_, declared := s.Properties[k]
	return declared || s.AdditionalProperties != nil || s.XPreserveUnknownFields
}

// renderValue is a value as it appears in a message, bounded.
func renderValue(v any) string {
	if v == nil {
		return "null"
	}
	if s, ok := v.(string); ok {
		return finding.BoundText(strconv.Quote(s), 64)
	}
	return finding.BoundText(finding.CanonicalValue(v), 64)
}

// sameDefault tells whether two schemas have the same default.
func sameDefault(oldS, newS *structuralschema.Structural) bool {
	if newS == nil {
		return false
	}
	return sameValue(oldS.Default.Object, newS.Default.Object)
}

// sameValue compares two decoded values (from JSON, YAML or the apiserver):
// scalars of the same type directly, anything else by its canonical JSON
// (1.0 and 1 are the same number).
func sameValue(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case int64:
		if bv, ok := b.(int64); ok {
			return av == bv
		}
	case float64:
		if bv, ok := b.(float64); ok {
			return av == bv
		}
	}
	if b == nil {
		return false
	}
	return finding.CanonicalValue(a) == finding.CanonicalValue(b)
}
