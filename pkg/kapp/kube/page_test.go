package kube

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	sigsjson "sigs.k8s.io/json"
)

// slowPage is what listPage decoded a page with before decodePage.
func slowPage(raw []byte) ([]map[string]any, string, error) {
	var page struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []map[string]any `json:"items"`
	}
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &page)
	return page.Items, page.Metadata.Continue, err
}

// TestDecodePageMatches: decodePage decodes pages as encoding/json with
// integers preserved does, and refuses what it refuses.
func TestDecodePageMatches(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"kind":"WidgetList","apiVersion":"x/v1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[`)
	for i := range 300 {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `{"apiVersion":"x/v1","kind":"Widget","metadata":{"name":"w-%d","generation":%d,"labels":{"a":"b"}},"spec":{"n":%d,"f":%d.5,"e":1e3,"list":[1,"two",null,true,{"x":[]}],"s":"caf\u00e9 \"q\" \ud83d\ude00"}}`, i, i, i-150, i)
	}
	big.WriteString(`]}`)
	pages := []string{
		big.String(),
		`{"items":[]}`,
		`{"items":null,"metadata":{}}`,
		`{"items":[null,{}]}`,
		`{"Items":[{"a":1}],"Metadata":{"continue":"x"}}`,
		`{"items":[{"a":1,"a":2}],"items":[{"b":1}]}`,
		`{"items":[{"n":9223372036854775807,"m":9223372036854775808,"neg":-0,"z":0.0,"big":1E2,"small":-12e-3}]}`,
		`{"metadata":{"continue":null},"items":[{"a":{"b":{"c":[[[]]]}}}]}`,
		` {"items" : [ { "a" : 1 } ] } `,
		`{"items":[1]}`,
		`{"items":{}}`,
		`{"metadata":{"continue":1}}`,
		`{"items":[{"a":1}]`,
		`{"items":[{"a":1e400}]}`,
		`[]`,
		`{"items":[]} x`,
		`{"items":[{"a":"\ud800"}]}`,
	}
	for _, p := range pages {
		wantItems, wantCont, wantErr := slowPage([]byte(p))
		items, cont, err := decodePage([]byte(p))
		name := p
		if len(name) > 60 {
			name = name[:60]
		}
		switch {
		case (wantErr == nil) != (err == nil):
			t.Errorf("%s: encoding/json: %v, decodePage: %v", name, wantErr, err)
		case err == nil && (!reflect.DeepEqual(items, wantItems) || cont != wantCont):
			t.Errorf("%s: decoded differently:\n%#v %q\n%#v %q", name, items, cont, wantItems, wantCont)
		}
	}
}

// BenchmarkDecodePage: a page of 500 small custom resources.
//
//	go test -run '^$' -bench DecodePage -benchmem ./pkg/kapp/kube/
func BenchmarkDecodePage(b *testing.B) {
	var page strings.Builder
	page.WriteString(`{"kind":"WidgetList","apiVersion":"x/v1","metadata":{"resourceVersion":"7","continue":"abc"},"items":[`)
	for i := range 500 {
		if i > 0 {
			page.WriteString(",")
		}
		fmt.Fprintf(&page, `{"apiVersion":"x/v1","kind":"Widget","metadata":{"name":"w-%d","namespace":"default","uid":"0c0f5f5e-6c1a-4a1e-9d7e-%012d","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-11-26T12:00:00Z","managedFields":[{"manager":"kapp","operation":"Update","apiVersion":"x/v1","time":"2026-11-26T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:size":{},"f:replicas":{}}}}]},"spec":{"size":"small","replicas":%d,"tags":["a","b"]}}`, i, i, 1000+i, i)
	}
	page.WriteString(`]}`)
	raw := []byte(page.String())
	for _, bc := range []struct {
		name string
		fn   func([]byte) ([]map[string]any, string, error)
	}{{"encoding-json", slowPage}, {"decodePage", decodePage}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for range b.N {
				if _, _, err := bc.fn(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
