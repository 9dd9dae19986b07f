package checks

import (
	"bytes"
	"slices"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// sameSchema reports whether two schemas are equal but for documentation
// (description, title, example, externalDocs) at any depth: documentation
// edits inside a combinator are never findings, and versions that differ
// only in documentation serve the same content. It compares field by
// field without copying or boxing (it runs over whole version schemas);
// TestSameSchemaSeesEveryKeyword keeps it complete as JSONSchemaProps
// grows.
func SameSchema(a, b *apiextv1.JSONSchemaProps) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Type == b.Type && a.Format == b.Format && a.Pattern == b.Pattern &&
		a.ID == b.ID && a.Schema == b.Schema && equalPtr(a.Ref, b.Ref) &&
		sameRawJSON(a.Default, b.Default) && slices.EqualFunc(a.Enum, b.Enum, func(x, y apiextv1.JSON) bool { return bytes.Equal(x.Raw, y.Raw) }) &&
		equalPtr(a.Maximum, b.Maximum) && equalPtr(a.Minimum, b.Minimum) && equalPtr(a.MultipleOf, b.MultipleOf) &&
		a.ExclusiveMaximum == b.ExclusiveMaximum && a.ExclusiveMinimum == b.ExclusiveMinimum &&
		equalPtr(a.MaxLength, b.MaxLength) && equalPtr(a.MinLength, b.MinLength) &&
		equalPtr(a.MaxItems, b.MaxItems) && equalPtr(a.MinItems, b.MinItems) &&
		equalPtr(a.MaxProperties, b.MaxProperties) && equalPtr(a.MinProperties, b.MinProperties) &&
		a.UniqueItems == b.UniqueItems && a.Nullable == b.Nullable && slices.Equal(a.Required, b.Required) &&
		equalPtr(a.XPreserveUnknownFields, b.XPreserveUnknownFields) && a.XEmbeddedResource == b.XEmbeddedResource &&
		a.XIntOrString == b.XIntOrString && slices.Equal(a.XListMapKeys, b.XListMapKeys) &&
		equalPtr(a.XListType, b.XListType) && equalPtr(a.XMapType, b.XMapType) &&
		slices.EqualFunc(a.XValidations, b.XValidations, sameValidationRule) &&
		sameItems(a.Items, b.Items) && sameSchemaList(a.AllOf, b.AllOf) && sameSchemaList(a.AnyOf, b.AnyOf) &&
		sameSchemaList(a.OneOf, b.OneOf) && SameSchema(a.Not, b.Not) &&
		sameSchemaMap(a.Properties, b.Properties) && sameSchemaMap(a.PatternProperties, b.PatternProperties) &&
		sameSchemaMap(a.Definitions, b.Definitions) && sameOrBool(a.AdditionalProperties, b.AdditionalProperties) &&
		sameOrBool(a.AdditionalItems, b.AdditionalItems) && sameDependencies(a.Dependencies, b.Dependencies)
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sameRawJSON(a, b *apiextv1.JSON) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Raw, b.Raw)
}

func sameValidationRule(a, b apiextv1.ValidationRule) bool {
	return a.Rule == b.Rule && a.Message == b.Message && a.MessageExpression == b.MessageExpression &&
		equalPtr(a.Reason, b.Reason) && a.FieldPath == b.FieldPath && equalPtr(a.OptionalOldSelf, b.OptionalOldSelf)
}

func sameItems(a, b *apiextv1.JSONSchemaPropsOrArray) bool {
	if a == nil || b == nil {
		return a == b
	}
	return SameSchema(a.Schema, b.Schema) && sameSchemaList(a.JSONSchemas, b.JSONSchemas)
}

func sameOrBool(a, b *apiextv1.JSONSchemaPropsOrBool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Allows == b.Allows && SameSchema(a.Schema, b.Schema)
}

func sameDependencies(a, b apiextv1.JSONSchemaDependencies) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || !SameSchema(x.Schema, y.Schema) || !slices.Equal(x.Property, y.Property) {
			return false
		}
	}
	return true
}

func sameSchemaMap(a, b map[string]apiextv1.JSONSchemaProps) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !SameSchema(&av, &bv) {
			return false
		}
	}
	return true
}

func sameSchemaList(a, b []apiextv1.JSONSchemaProps) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !SameSchema(&a[i], &b[i]) {
			return false
		}
	}
	return true
}
