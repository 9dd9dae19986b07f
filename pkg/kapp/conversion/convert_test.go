package conversion

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiconversion "k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/util/webhook"
)

// oracle is the apiserver's own converter for crd (the unsafe one: the
// inputs are copies already).
func oracle(t *testing.T, crd *apiextv1.CustomResourceDefinition) runtime.ObjectConvertor {
	t.Helper()
	f, err := apiconversion.NewCRConverterFactory(webhook.NewDefaultServiceResolver(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, unsafe, err := f.NewConverter(crd)
	if err != nil {
		t.Fatal(err)
	}
	return unsafe
}

func copies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

// jsonOf compares objects as the JSON they are (numbers by value).
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConvertAgreesWithTheAPIServer runs the apiserver's webhook converter
// and Converter against the same webhook and objects, as one list and one
// object at a time, to every version: Converter refuses exactly what the
// apiserver refuses (naming the check) and converts to the same objects.
func TestConvertAgreesWithTheAPIServer(t *testing.T) {
	cases := []struct {
		name           string
		hook           hook
		reviewVersions []string
		// check Converter names for a list to each version; absent: none.
		check map[string]Check
	}{
		{name: "lossless rename", hook: hook{}},
		{name: "lossy drop", hook: hook{Lossy: true}},
		{name: "failing on some objects", hook: hook{FailLabel: true},
			check: map[string]Check{"v2": CheckResult, "v3": CheckResult}},
		{name: "hub only", hook: hook{HubOnly: true},
			check: map[string]Check{"v3": CheckResult}},
		{name: "wrong uid", hook: hook{WrongUID: true}, check: all(CheckUID)},
		{name: "wrong count", hook: hook{DropOne: true}, check: all(CheckCount)},
		{name: "changed name", hook: hook{Rename: true}, check: all(CheckName)},
		{name: "changed apiVersion", hook: hook{Keep: true}, check: all(CheckAPIVersion)},
		{name: "changed kind", hook: hook{WrongKind: true}, check: all(CheckKind)},
		{name: "changed uid", hook: hook{ChangeUID: true}, check: all(CheckObjectUID)},
		// The name is compared before metadata is read.
		{name: "no metadata", hook: hook{NoMeta: true}, check: all(CheckName)},
		{name: "annotation not a string", hook: hook{IntAnno: true}, check: all(CheckMetadata)},
		{name: "invalid label", hook: hook{BadLabel: true}, check: all(CheckLabels)},
		{name: "labels kept, other metadata restored", hook: hook{AddLabel: true}},
		{name: "annotations over the limit", hook: hook{Stash: 300 << 10}, check: map[string]Check{"v2": CheckAnnotations}},
		{name: "annotations near the limit", hook: hook{Stash: 200 << 10}},
		{name: "answer without apiVersion and kind", hook: hook{NoTypeMeta: true}, check: all(CheckReviewKind)},
		{name: "v1beta1 review: an answer without apiVersion and kind decodes", hook: hook{NoTypeMeta: true},
			reviewVersions: []string{"v1beta1"}},
		{name: "v1beta1 review: a v1 answer does not decode", hook: hook{}, reviewVersions: []string{"v1beta1"},
			check: all(CheckCall)},
		{name: "v1beta1 review: uid not checked", hook: hook{WrongUID: true, NoTypeMeta: true},
			reviewVersions: []string{"v1beta1", "v1"}},
		{name: "http 503", hook: hook{HttpStatus: 503}, check: all(CheckCall)},
		{name: "no supported review version", hook: hook{}, reviewVersions: []string{"v2"}, check: all(CheckReviewVersions)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd, ep := serve(t, &tc.hook)
			if tc.reviewVersions != nil {
				crd.Spec.Conversion.Webhook.ConversionReviewVersions = tc.reviewVersions
			}
			apiserver := oracle(t, crd)
			tr, err := ep.Transport()
			if err != nil {
				t.Fatal(err)
			}
			conv := &Converter{Transport: tr, ReviewVersions: crd.Spec.Conversion.Webhook.ConversionReviewVersions}
			for _, to := range []string{"v1", "v2", "v3"} {
				gv := schema.GroupVersion{Group: "example.com", Version: to}
				// The list.
				list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": gv.String(), "kind": "WidgetList"}}
				for _, o := range widgets() {
					list.Items = append(list.Items, *o)
				}
				want, wantErr := apiserver.ConvertToVersion(list, gv)
				got, gotErr := conv.Convert(context.Background(), copies(widgets()), gv)
				if (wantErr != nil) != (gotErr != nil) {
					t.Fatalf("to %s: apiserver error %v, probe error %v", to, wantErr, gotErr)
				}
				var gotCheck Check
				if re, ok := AsResponseError(gotErr); ok {
					gotCheck = re.Check
				} else if gotErr != nil {
					t.Fatalf("to %s: not a refusal: %v", to, gotErr)
				}
				if gotCheck != tc.check[to] {
					t.Errorf("to %s: check %q, want %q (%v)", to, gotCheck, tc.check[to], gotErr)
				}
				if wantErr == nil {
					items := want.(*unstructured.UnstructuredList).Items
					for i := range items {
						if w, g := jsonOf(t, items[i].Object), jsonOf(t, got[i].Object); !reflect.DeepEqual(w, g) {
							t.Errorf("to %s, object %d:\napiserver %v\nprobe     %v", to, i, w, g)
						}
					}
				}
				// One object at a time.
				for i, o := range widgets() {
					want, wantErr := apiserver.ConvertToVersion(o.DeepCopy(), gv)
					got, gotErr := conv.Convert(context.Background(), []*unstructured.Unstructured{o.DeepCopy()}, gv)
					if (wantErr != nil) != (gotErr != nil) {
						t.Fatalf("object %d to %s: apiserver error %v, probe error %v", i, to, wantErr, gotErr)
					}
					if wantErr == nil {
						if w, g := jsonOf(t, want.(*unstructured.Unstructured).Object), jsonOf(t, got[0].Object); !reflect.DeepEqual(w, g) {
							t.Errorf("object %d to %s:\napiserver %v\nprobe     %v", i, to, w, g)
						}
					}
				}
			}
		})
	}
}

func all(c Check) map[string]Check {
	return map[string]Check{"v1": c, "v2": c, "v3": c}
}
