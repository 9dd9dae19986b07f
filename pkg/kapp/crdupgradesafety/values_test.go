package crdupgradesafety

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestCanonicalJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `null`},
		{` null `, `null`},
		{`1.0`, `1`},
		{`1e2`, `100`},
		{`1E+2`, `100`},
		{`10e-1`, `1`},
		{`-0.50`, `-0.5`},
		{`-0`, `0`},
		{`0.000`, `0`},
		{`100.50`, `100.5`},
		{`0.000001`, `0.000001`},
		{`0.1`, `0.1`},
		{`0.10`, `0.1`},
		{`12345678901234567890`, `12345678901234567890`},
		{`1.5e3`, `1500`},
		{`{"b": 1.0, "a": [2.50, "x"]}`, `{"a":[2.5,"x"],"b":1}`},
		{`"a"`, `"a"`},
		{`not json`, `not json`},
		// Exponents are moved, never expanded past maxPlainDigits.
		{`1e999990`, `1e999990`},
		{`10e999989`, `1e999990`},
		{`-1.50e-400`, `-1.5e-400`},
		{`1e31`, `10000000000000000000000000000000`},
		{`1e32`, `1e32`},
		{`123456789012345678901234567890123`, `1.23456789012345678901234567890123e32`},
		{`{"a": [1e999990]}`, `{"a":[1e999990]}`},
		// An exponent beyond int64 is left as written.
		{`1e99999999999999999999`, `1e99999999999999999999`},
	}
	for _, tc := range cases {
		if got := finding.CanonicalJSON([]byte(tc.in)); got != tc.want {
			t.Errorf("canonicalJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBoundText(t *testing.T) {
	for _, s := range []string{strings.Repeat("a", 5000), strings.Repeat("é", 3000), strings.Repeat("日本", 1000) + "end"} {
		got := finding.BoundText(s, 300)
		if len(got) > 300 || !utf8.ValidString(got) || !strings.Contains(got, " bytes)...") {
			t.Errorf("boundText of %d bytes: %d bytes, valid UTF-8 %v: %q", len(s), len(got), utf8.ValidString(got), got)
		}
	}
	if got := finding.BoundText("short", 300); got != "short" {
		t.Errorf("boundText(short) = %q", got)
	}
}

// crdFromJSON decodes a CRD the way the tools command decodes JSON input:
// enum and default values keep their bytes as written.
func crdFromJSON(t *testing.T, specX string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	js := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + enginetest.TestCRDName + `"},
	"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
	"spec":{"type":"object","properties":{"x":` + specX + `}}}}}}]}}`
	var crd apiextv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(js), &crd); err != nil {
		t.Fatalf("decoding CRD: %v", err)
	}
	return &crd
}

// TestBoundedOutput: one finding's message and field stay bounded whatever
// the input, and numbers render as written, not expanded.
func TestBoundedOutput(t *testing.T) {
	many := make([]string, 100000)
	for i := range many {
		many[i] = fmt.Sprintf(`"value-%06d"`, i)
	}
	long := strings.Repeat("x", 100000)
	cases := []struct {
		name     string
		old, new string // JSON schemas of ^.spec.x
		want     string // a substring of the one finding's message
	}{
		{name: "enum of 100,000 values removed", old: `{"type":"string","enum":[` + strings.Join(many, ",") + `]}`, new: `{"type":"string","enum":["value-000000"]}`,
			want: `enum values removed: ["value-000001", "value-000002", "value-000003", "value-000004", "value-000005", "value-000006", "value-000007", "value-000008", "value-000009", "value-000010", ... (99989 more)]`},
		{name: "enum of 100,000 values added", old: `{"type":"string"}`, new: `{"type":"string","enum":[` + strings.Join(many, ",") + `]}`,
			want: `... (99990 more)]`},
		{name: "huge exponent in an enum", old: `{"type":"number","enum":[1e999990, 2]}`, new: `{"type":"number","enum":[2]}`,
			want: `enum values removed: [1e999990]`},
		{name: "huge exponent in a default", old: `{"type":"number","default":1e999990}`, new: `{"type":"number","default":2e999990}`,
			want: `default changed: 1e999990 -> 2e999990`},
		{name: "equal huge numbers written differently", old: `{"type":"number","default":1e999990}`, new: `{"type":"number","default":10.0e999989}`},
		{name: "huge default object", old: `{"type":"string"}`, new: `{"type":"string","default":"` + long + `"}`,
			want: ` bytes)...`},
		{name: "long pattern", old: `{"type":"string"}`, new: `{"type":"string","pattern":"` + long + `"}`,
			want: ` bytes)...`},
		{name: "long CEL rule", old: `{"type":"string"}`, new: `{"type":"string","x-kubernetes-validations":[{"rule":"self == '` + long + `'"}]}`,
			want: ` bytes)...`},
		{name: "many required fields", old: `{"type":"object"}`, new: `{"type":"object","required":[` + strings.Join(many, ",") + `]}`,
			want: `... (99990 more)]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := Compare(crdFromJSON(t, tc.old), crdFromJSON(t, tc.new), nil)
			if tc.want == "" {
				if len(fs) > 0 {
					t.Fatalf("want no findings, got:\n%s", enginetest.GoldenText(fs))
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %d:\n%.2000s", len(fs), enginetest.GoldenText(fs))
			}
			if m := fs[0].ChangeText; len(m) > finding.MaxMessageBytes || !strings.Contains(m, tc.want) {
				t.Fatalf("message of %d bytes (bound %d) without %q:\n%.3000s", len(m), finding.MaxMessageBytes, tc.want, m)
			}
		})
	}

	t.Run("long field path and exemption reason", func(t *testing.T) {
		name := strings.Repeat("p", 10000)
		old := crdFromJSON(t, `{"type":"object","properties":{"`+name+`":{"type":"string"}}}`)
		new := crdFromJSON(t, `{"type":"object","properties":{"`+name+`":{"type":"integer"}}}`)
		cfg := config.Default()
		cfg.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Reason: long}}
		fs := Compare(old, new, &cfg)
		if len(fs) != 1 {
			t.Fatalf("want one finding, got %d", len(fs))
		}
		f := fs[0]
		if len(f.Field) > finding.MaxFieldBytes || !strings.HasPrefix(string(f.Field), "^.spec.x.ppp") {
			t.Errorf("field of %d bytes (bound %d): %.100s", len(f.Field), finding.MaxFieldBytes, f.Field)
		}
		if m := enginetest.Message(f); len(m) > 2*finding.MaxMessageBytes+len(" (exempted: )")+len("data loss: ") {
			t.Errorf("message of %d bytes", len(enginetest.Message(f)))
		}
	})
}
