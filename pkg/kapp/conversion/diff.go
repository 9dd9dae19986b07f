package conversion

import (
	"regexp"
	"sort"
	"strconv"
)

// lostPaths returns the paths of the values of want that got does not hold
// equal, sorted: the fields a round trip lost or changed. Fields only got
// has (a stash annotation, a defaulted field) are no loss. apiVersion is
// left out: a conversion changes it.
func lostPaths(want, got map[string]any) []string {
	var paths []string
	for _, k := range sortedKeys(want) {
		if k == "apiVersion" {
			continue
		}
		paths = appendLost(paths, keyPath("", k), want[k], got[k], hasKey(got, k))
	}
	return paths
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func appendLost(paths []string, path string, want, got any, present bool) []string {
	if !present {
		return append(paths, path)
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return append(paths, path)
		}
		for _, k := range sortedKeys(w) {
			paths = appendLost(paths, keyPath(path, k), w[k], g[k], hasKey(g, k))
		}
		return paths
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return append(paths, path)
		}
		for i := range w {
			paths = appendLost(paths, path+"["+strconv.Itoa(i)+"]", w[i], g[i], true)
		}
		return paths
	}
	if !equalScalar(want, got) {
		return append(paths, path)
	}
	return paths
}

// equalScalar compares JSON scalars, numbers by value (int64 and float64
// both come out of JSON decoding).
func equalScalar(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// keyPath appends a map key to a path: .key, or ['key'] when the key is
// not a plain name (an annotation such as example.com/stash).
func keyPath(path, k string) string {
	if identifier.MatchString(k) {
		return path + "." + k
	}
	return path + "[" + strconv.Quote(k) + "]"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
