package conversion

import (
	"reflect"
	"testing"
)

func TestLostPaths(t *testing.T) {
	cases := []struct {
		name      string
		want, got map[string]any
		paths     []string
	}{
		{name: "equal", want: map[string]any{"spec": map[string]any{"a": int64(1)}}, got: map[string]any{"spec": map[string]any{"a": float64(1)}}},
		{name: "apiVersion is no loss", want: map[string]any{"apiVersion": "x/v1"}, got: map[string]any{"apiVersion": "x/v2"}},
		{name: "added fields are no loss", want: map[string]any{}, got: map[string]any{"spec": map[string]any{"a": "b"}}},
		{name: "a dropped field", want: map[string]any{"spec": map[string]any{"a": "b", "c": "d"}}, got: map[string]any{"spec": map[string]any{"a": "b"}},
			paths: []string{".spec.c"}},
		{name: "a changed value in a list", want: map[string]any{"spec": map[string]any{"l": []any{"x", map[string]any{"k": "v"}}}},
			got: map[string]any{"spec": map[string]any{"l": []any{"x", map[string]any{"k": "w"}}}}, paths: []string{".spec.l[1].k"}},
		{name: "a shorter list", want: map[string]any{"l": []any{"x", "y"}}, got: map[string]any{"l": []any{"x"}}, paths: []string{".l"}},
		{name: "a type change", want: map[string]any{"s": map[string]any{}}, got: map[string]any{"s": "x"}, paths: []string{".s"}},
		{name: "a null dropped", want: map[string]any{"s": nil}, got: map[string]any{}, paths: []string{".s"}},
		{name: "an annotation key quoted", want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/x": "1"}}},
			got: map[string]any{"metadata": map[string]any{"annotations": map[string]any{}}}, paths: []string{`.metadata.annotations["example.com/x"]`}},
		{name: "sorted", want: map[string]any{"b": "1", "a": "1"}, got: map[string]any{}, paths: []string{".a", ".b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := lostPaths(tc.want, tc.got); !reflect.DeepEqual(got, tc.paths) {
				t.Errorf("got %q, want %q", got, tc.paths)
			}
		})
	}
}
