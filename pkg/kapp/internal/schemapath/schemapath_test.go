package schemapath

import (
	"reflect"
	"testing"
)

func TestConstructorsAndSteps(t *testing.T) {
	tests := []struct {
		name  string
		path  Path
		want  string
		steps []Step
	}{
		{"root", Root, "^", nil},
		{"property", Root.Child("spec").Child("size"), "^.spec.size",
			[]Step{{Kind: Property, Name: "spec"}, {Kind: Property, Name: "size"}}},
		{"items and values", Root.Child("spec").Child("items").Items().Child("labels").Values(), "^.spec.items[*].labels{*}",
			[]Step{{Kind: Property, Name: "spec"}, {Kind: Property, Name: "items"}, {Kind: Items}, {Kind: Property, Name: "labels"}, {Kind: Values}}},
		{"branches", Root.Child("spec").Branch(AnyOf, 1).Child("x").Not(), "^.spec.anyOf[1].x.not",
			[]Step{{Kind: Property, Name: "spec"}, {Kind: Branch, Combinator: AnyOf, Index: 1}, {Kind: Property, Name: "x"}, {Kind: NotStep}}},
		{"dotted name", Root.Child("spec").Child("app.kubernetes.io/name"), `^.spec["app.kubernetes.io/name"]`,
			[]Step{{Kind: Property, Name: "spec"}, {Kind: Property, Name: "app.kubernetes.io/name"}}},
		{"property named not", Root.Child("not").Child("allOf").Items(), `^["not"]["allOf"][*]`,
			[]Step{{Kind: Property, Name: "not"}, {Kind: Property, Name: "allOf"}, {Kind: Items}}},
		{"quote in name", Root.Child(`a"]b`), `^["a\"]b"]`, []Step{{Kind: Property, Name: `a"]b`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path.String() != tt.want {
				t.Fatalf("path %q, want %q", tt.path, tt.want)
			}
			steps, err := tt.path.Steps()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(steps, tt.steps) {
				t.Fatalf("steps %+v, want %+v", steps, tt.steps)
			}
			if back := Join(steps); back != tt.path {
				t.Fatalf("Join(Steps) = %q, want %q", back, tt.path)
			}
		})
	}
}

func TestStepsRejectsForeignText(t *testing.T) {
	for _, p := range []Path{"spec.versions[0].name", "^.spec.allOf", "^.spec.oneOf[x]", `^.spec["open`, "^..x"} {
		if _, err := p.Steps(); err == nil {
			t.Errorf("Steps(%q): no error", p)
		}
	}
}

func TestParent(t *testing.T) {
	for p, want := range map[Path]Path{
		"":                   "",
		"^":                  "",
		"^.spec":             "^",
		"^.spec.items[*]":    "^.spec.items",
		"^.spec.labels{*}":   "^.spec.labels",
		"^.spec.allOf[2]":    "^.spec",
		`^.spec["a.b"].c`:    `^.spec["a.b"]`,
		"^.spec.x.not":       "^.spec.x",
		"spec.versions[0].x": "",
	} {
		if got := p.Parent(); got != want {
			t.Errorf("Parent(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestSplitCombinators(t *testing.T) {
	for p, want := range map[Path][2]Path{
		"^.spec.a":                      {"^.spec.a", "^.spec.a"},
		"^.spec.allOf[1].a":             {"^.spec", "^.spec.a"},
		"^.spec.x.not.y.anyOf[0].z[*]":  {"^.spec.x", "^.spec.x.y.z[*]"},
		`^.spec["not"].oneOf[3]["a.b"]`: {`^.spec["not"]`, `^.spec["not"]["a.b"]`},
	} {
		base, stripped := p.SplitCombinators()
		if base != want[0] || stripped != want[1] {
			t.Errorf("SplitCombinators(%q) = %q, %q; want %q, %q", p, base, stripped, want[0], want[1])
		}
	}
}
