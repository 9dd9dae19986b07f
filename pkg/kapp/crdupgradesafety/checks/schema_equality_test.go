package checks

import (
	"reflect"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestSameSchemaSeesEveryKeyword keeps sameSchema complete: a schema with
// any one keyword set differs from the empty schema, but for the
// documentation keywords; and a copy is the same at any depth.
func TestSameSchemaSeesEveryKeyword(t *testing.T) {
	docs := map[string]bool{"Description": true, "Title": true, "Example": true, "ExternalDocs": true}
	for _, f := range schemaFields {
		one := apiextv1.JSONSchemaProps{}
		fill(reflect.ValueOf(&one).Elem().FieldByIndex(f.Index))
		if got := SameSchema(&apiextv1.JSONSchemaProps{}, &one); got != docs[f.Name] {
			t.Errorf("sameSchema(empty, only %s set) = %v, want %v", f.Name, got, docs[f.Name])
		}
	}
	full := apiextv1.JSONSchemaProps{}
	fill(reflect.ValueOf(&full).Elem())
	nested := apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{"a": full}, AllOf: []apiextv1.JSONSchemaProps{full}}
	cp := nested.DeepCopy()
	if !SameSchema(&nested, cp) {
		t.Fatal("a deep copy is not the same schema")
	}
	a := cp.Properties["a"]
	a.Description = "edited"
	cp.Properties["a"] = a
	if !SameSchema(&nested, cp) {
		t.Fatal("a documentation edit at depth makes schemas differ")
	}
	a.MaxLength = ptrTo(int64(7))
	cp.Properties["a"] = a
	if SameSchema(&nested, cp) {
		t.Fatal("a keyword changed at depth is not seen")
	}
}
