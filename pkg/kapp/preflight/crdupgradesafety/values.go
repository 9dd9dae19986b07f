package crdupgradesafety

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// canonicalJSON renders a JSON value with sorted object keys and no
// insignificant white space, so that values from YAML files and from the
// cluster compare equal when they mean the same. Raw bytes that do not parse
// are returned as they are.
func canonicalJSON(raw []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(bytes.TrimSpace(raw))
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// sameJSON reports whether two JSON values are equal, without parsing when
// the bytes already are.
func sameJSON(a, b *apiextv1.JSON) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Raw, b.Raw) || canonicalJSON(a.Raw) == canonicalJSON(b.Raw)
}

func renderJSON(v *apiextv1.JSON) string {
	if v == nil {
		return "(none)"
	}
	return canonicalJSON(v.Raw)
}

// quoteList renders names as ["a", "b"].
func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// valueList renders canonical JSON values as [a, b].
func valueList(items []string) string {
	return "[" + strings.Join(items, ", ") + "]"
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func renderPtr[T int64 | float64](p *T) string {
	if p == nil {
		return "(none)"
	}
	return formatFloat(float64(*p))
}

func renderString(s string) string {
	if s == "" {
		return "(none)"
	}
	return strconv.Quote(s)
}
