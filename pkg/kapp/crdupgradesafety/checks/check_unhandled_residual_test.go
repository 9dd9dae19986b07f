package checks

import (
	"reflect"
	"sort"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestResidualKeywords keeps residualUnset exact: after the walk and every
// check but checkUnhandled ran on a schema with every keyword set, the
// keywords still set must be exactly those residualUnset looks at. A new
// JSONSchemaProps field fails this test until a check handles it or it is
// added to residualUnset.
func TestResidualKeywords(t *testing.T) {
	full := apiextv1.JSONSchemaProps{}
	fill(reflect.ValueOf(&full).Elem())
	for _, f := range schemaFields {
		if reflect.ValueOf(full).FieldByIndex(f.Index).IsZero() {
			t.Fatalf("fill left %s unset", f.Name)
		}
	}

	cfg := config.Default()
	r := &pairRun{vc: &cfg.Checks.SameVersion, unhandled: config.FailBlock,
		sink: func(finding.Draft) {}}
	n := &node{run: r, position: position{path: "^", root: true}, old: full, new: full}
	r.compareNode(n)

	var left []string
	v := reflect.ValueOf(n.old)
	for _, f := range schemaFields {
		if !v.FieldByIndex(f.Index).IsZero() {
			left = append(left, f.Name)
		}
	}
	sort.Strings(left)
	want := []string{"AdditionalItems", "Definitions", "Dependencies", "ID", "Items", "PatternProperties", "Ref", "Schema"}
	if !reflect.DeepEqual(left, want) {
		t.Fatalf("keywords no check clears: %v, residualUnset looks at %v", left, want)
	}
	for _, name := range want {
		one := apiextv1.JSONSchemaProps{}
		field := reflect.ValueOf(&one).Elem().FieldByName(name)
		field.Set(reflect.ValueOf(full).FieldByName(name))
		if residualUnset(&one) {
			t.Errorf("residualUnset ignores %s", name)
		}
	}
}

// fill sets every field of v to a non-zero value, recursively one level
// deep for nested schemas (tuple items are left to their Schema form).
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int64:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		if v.Type().Elem() != reflect.TypeOf(apiextv1.JSONSchemaProps{}) {
			fill(v.Elem())
		} else {
			v.Elem().FieldByName("Type").SetString("string")
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		if v.Type().Elem() == reflect.TypeOf(apiextv1.JSONSchemaProps{}) {
			v.Index(0).FieldByName("Type").SetString("string")
		} else {
			fill(v.Index(0))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		e := reflect.New(v.Type().Elem()).Elem()
		if v.Type().Elem() == reflect.TypeOf(apiextv1.JSONSchemaProps{}) {
			e.FieldByName("Type").SetString("string")
		} else {
			fill(e)
		}
		v.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), e)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}
