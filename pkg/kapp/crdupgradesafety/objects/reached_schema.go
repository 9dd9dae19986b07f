package objects

import (
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
)

// The existingResources check validates a batch of custom resources with
// validators built, per batch, from the new schema of their version. Real
// objects set a small part of a large schema, and building the validators
// of the whole schema (compiling every CEL rule above all) cost more than
// validating the objects. Both validators only descend into values that
// are present, so the parts of the schema no object of the batch reaches
// are left out before the validators are built: the result is the same
// for those objects (TestPrunedValidatorsAgreeWithFull proves it against
// validators of the whole schema, over real CRDs and generated objects).

// pruneAbsentProperties removes from s, in place, every property that no
// value of vals (the values the schema node s validates) has, at every
// depth: the OpenAPI validator visits a property only when the object has
// it (its parent's `required` list, which is kept, says when it must).
// Below keywords whose values it does not follow (patternProperties,
// dependencies, additionalItems, tuple items, definitions, $ref), s is
// left whole.
func pruneAbsentProperties(s *apiextensions.JSONSchemaProps, vals []any) {
	if s == nil || len(s.PatternProperties) > 0 || len(s.Dependencies) > 0 || s.AdditionalItems != nil ||
		len(s.Definitions) > 0 || s.Ref != nil {
		return
	}
	// allOf, anyOf, oneOf and not validate the value itself.
	for i := range s.AllOf {
		pruneAbsentProperties(&s.AllOf[i], vals)
	}
	for i := range s.AnyOf {
		pruneAbsentProperties(&s.AnyOf[i], vals)
	}
	for i := range s.OneOf {
		pruneAbsentProperties(&s.OneOf[i], vals)
	}
	pruneAbsentProperties(s.Not, vals)

	if len(s.Properties) > 0 {
		for name, prop := range s.Properties {
			present := propertyValues(vals, name)
			if len(present) == 0 {
				delete(s.Properties, name)
				continue
			}
			pruneAbsentProperties(&prop, present)
			s.Properties[name] = prop
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		// The properties no value lacks are still in s.Properties: the
		// other keys are those additionalProperties validates.
		pruneAbsentProperties(s.AdditionalProperties.Schema, additionalValues(vals, s.Properties))
	}
	if s.Items != nil && s.Items.Schema != nil && len(s.Items.JSONSchemas) == 0 {
		pruneAbsentProperties(s.Items.Schema, itemValues(vals))
	}
}

// dropUnreachedRules removes, in place, the CEL rules
// (x-kubernetes-validations) of every node of s that no value of vals
// reaches. The CEL validator runs a node's rules only on a value that is
// present, and the rules it keeps are compiled against the whole schema
// (s keeps every property: a rule may name a field that no object has).
func dropUnreachedRules(s *schema.Structural, vals []any) {
	if s == nil {
		return
	}
	if len(vals) == 0 {
		dropRules(s)
		return
	}
	for name, prop := range s.Properties {
		dropUnreachedRules(&prop, propertyValues(vals, name))
		s.Properties[name] = prop
	}
	if s.AdditionalProperties != nil {
		dropUnreachedRules(s.AdditionalProperties.Structural, additionalValues(vals, s.Properties))
	}
	dropUnreachedRules(s.Items, itemValues(vals))
}

// The CEL validator evaluates a rule against the schema of its node: each
// field access of a rule (self.spec.x) and each object value it makes asks
// the node's schema for its properties, which the apiserver's adaptor
// (model.(*Structural).Properties) rebuilds as a new map of all of them at
// every call: a rule on a node of hundreds of properties spent most of the
// CEL time there. The rules are compiled against the whole schema (a rule
// may name a field no object has), but at run time a node's schema is
// asked only for the keys its value has (unstructuredMap: Find, Iterator,
// Equal look up the keys of the value), and whether it has properties at
// all. useReachedSchemas gives every node of the compiled validator the
// schema of reachedSchema instead: the same node with only the properties
// some value of the batch has (an empty map where the node has
// properties but no value any of them), so that each lookup builds a map
// of those only. The errors are the same for the objects of the batch
// (TestPrunedValidatorsAgreeWithFull, TestReachedSchemasAgreeOnCEL).

// reachedSchema returns a copy of s in which every node keeps only the
// properties that some value of vals (the values s validates) has, at
// every depth; a node whose Properties is not nil keeps a map (empty when
// no value has any of them). Everything else of each node is as in s (a
// shallow copy), and s is left as it is.
func reachedSchema(s *schema.Structural, vals []any) *schema.Structural {
	if s == nil {
		return nil
	}
	c := *s
	if s.Properties != nil {
		children := map[string][]any{}
		for _, v := range vals {
			m, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for k, pv := range m {
				if _, ok := s.Properties[k]; ok {
					children[k] = append(children[k], pv)
				}
			}
		}
		c.Properties = make(map[string]schema.Structural, len(children))
		for k, pvs := range children {
			prop := s.Properties[k]
			c.Properties[k] = *reachedSchema(&prop, pvs)
		}
	}
	if s.AdditionalProperties != nil {
		ap := *s.AdditionalProperties
		ap.Structural = reachedSchema(ap.Structural, additionalValues(vals, s.Properties))
		c.AdditionalProperties = &ap
	}
	c.Items = reachedSchema(s.Items, itemValues(vals))
	return &c
}

// useReachedSchemas sets the schema of every node of v, the CEL validator
// compiled from a schema of which r is the reached copy (reachedSchema), to
// the node of r at the same place. Nodes that no value reaches (their rules
// never run) and allOf validators keep theirs.
func useReachedSchemas(v *cel.Validator, r *schema.Structural) {
	if v == nil || r == nil {
		return
	}
	v.Schema = r
	for name, child := range v.Properties {
		if p, ok := r.Properties[name]; ok {
			useReachedSchemas(&child, &p)
			v.Properties[name] = child
		}
	}
	if v.AdditionalProperties != nil && r.AdditionalProperties != nil {
		useReachedSchemas(v.AdditionalProperties, r.AdditionalProperties.Structural)
	}
	useReachedSchemas(v.Items, r.Items)
}

// dropRules removes every CEL rule of s and below. Rules nested in an
// allOf's value validations are kept (rare, and keeping a rule that does
// not run changes nothing).
func dropRules(s *schema.Structural) {
	if s == nil {
		return
	}
	s.XValidations = nil
	for name, prop := range s.Properties {
		dropRules(&prop)
		s.Properties[name] = prop
	}
	if s.AdditionalProperties != nil {
		dropRules(s.AdditionalProperties.Structural)
	}
	dropRules(s.Items)
}

// propertyValues returns the values of key name in the objects among vals.
func propertyValues(vals []any, name string) []any {
	var out []any
	for _, v := range vals {
		if m, ok := v.(map[string]any); ok {
			if pv, ok := m[name]; ok {
				out = append(out, pv)
			}
		}
	}
	return out
}

// additionalValues returns the values, in the objects among vals, of the
// keys that props does not name.
func additionalValues[S any](vals []any, props map[string]S) []any {
	var out []any
	for _, v := range vals {
		if m, ok := v.(map[string]any); ok {
			for k, pv := range m {
				if _, ok := props[k]; !ok {
					out = append(out, pv)
				}
			}
		}
	}
	return out
}

// itemValues returns the elements of the arrays among vals.
func itemValues(vals []any) []any {
	var out []any
	for _, v := range vals {
		if a, ok := v.([]any); ok {
			out = append(out, a...)
		}
	}
	return out
}
