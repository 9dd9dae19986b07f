package crdupgradesafety

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// canonicalJSON renders a JSON value with sorted object keys, no
// insignificant white space and numbers in their shortest exact form (1.0
// and 1 are the same number), so that values from YAML files and from the
// cluster compare equal when they mean the same. Empty bytes are null (how
// apiextensions stores a null enum value); bytes that do not parse are
// returned as they are.
func canonicalJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "null"
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(normalizeNumbers(v))
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// normalizeNumbers rewrites every json.Number in v to its shortest exact
// decimal form: integers without fraction or exponent (1.0, 1e0 -> 1),
// others as exact decimals.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(t.String())
		if !ok {
			return t
		}
		if r.IsInt() {
			return json.Number(r.Num().String())
		}
		if f, exact := r.Float64(); exact {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
		return t
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	}
	return v
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

// countNoun renders "1 sub-schema", "2 sub-schemas".
func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
