package finding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// canonicalJSON renders a JSON value with sorted object keys, no
// insignificant white space and numbers in their shortest exact form (1.0
// and 1 are the same number), so that values from YAML files and from the
// cluster compare equal when they mean the same. Empty bytes are null (how
// apiextensions stores a null enum value); bytes that do not parse are
// returned as they are.
func CanonicalJSON(raw []byte) string {
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

// normalizeNumbers rewrites every json.Number in v to its canonical form
// (canonicalNumber).
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return json.Number(canonicalNumber(t.String()))
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

// maxPlainDigits is the longest a canonical number is written without an
// exponent: 1e3 is 1000, but 1e999990 stays 1e999990 rather than a
// million digits.
const maxPlainDigits = 32

// canonicalNumber renders a JSON number exactly, in one form per value, by
// moving its decimal digits rather than computing with them: 1.0, 1e0 and
// 1 are 1; 0.50 is 0.5; 1.5e3 is 1500. A value that would take more than
// maxPlainDigits digits without an exponent is written with one
// (1e999990, 1.5e-400), so that a huge exponent costs nothing. Text that
// is not a JSON number, or whose exponent does not fit an int64, is
// returned as it is.
func canonicalNumber(s string) string {
	t := s
	neg := strings.HasPrefix(t, "-")
	if neg {
		t = t[1:]
	}
	mant, expText, hasExp := strings.Cut(t, "e")
	if !hasExp {
		mant, expText, hasExp = strings.Cut(t, "E")
	}
	intPart, fracPart, _ := strings.Cut(mant, ".")
	if intPart == "" || !AllDigits(intPart) || !AllDigits(fracPart) {
		return s
	}
	var exp int64
	if hasExp {
		e, err := strconv.ParseInt(strings.TrimPrefix(expText, "+"), 10, 64)
		if err != nil || e > math.MaxInt64/2 || e < math.MinInt64/2 {
			return s
		}
		exp = e
	}
	// The value is digits * 10^exp, digits without leading or trailing zeros.
	digits := strings.TrimLeft(intPart+fracPart, "0")
	exp -= int64(len(fracPart))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	digits = trimmed
	if digits == "" {
		return "0"
	}
	sign := ""
	if neg {
		sign = "-"
	}
	n := int64(len(digits))
	switch {
	case exp >= 0 && n+exp <= maxPlainDigits:
		return sign + digits + strings.Repeat("0", int(exp))
	case exp < 0 && -exp <= maxPlainDigits && max(n, -exp+1) <= maxPlainDigits:
		if -exp < n {
			point := n + exp
			return sign + digits[:point] + "." + digits[point:]
		}
		return sign + "0." + strings.Repeat("0", int(-exp-n)) + digits
	}
	// Scientific: d.ddd e (exponent of the first digit).
	out := sign + digits[:1]
	if n > 1 {
		out += "." + digits[1:]
	}
	return out + "e" + strconv.FormatInt(exp+n-1, 10)
}

func AllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sameJSON reports whether two JSON values are equal, without parsing when
// the bytes already are.
func SameJSON(a, b *apiextv1.JSON) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Raw, b.Raw) || CanonicalJSON(a.Raw) == CanonicalJSON(b.Raw)
}

// Output bounds. A finding's message and field stay short whatever the
// input: a value, a list or a path longer than its bound is cut in the
// middle with a count of what was left out.
const (
	// maxMessageBytes bounds a whole message (policy.add).
	MaxMessageBytes = 2048
	// maxFieldBytes bounds a field path and a version name (policy.add).
	MaxFieldBytes = 512
	// maxValueBytes bounds one rendered value: a default, a pattern, a
	// CEL rule, one enum value.
	MaxValueBytes = 512
	// maxListItems is how many items of a list a message names; the rest
	// are counted.
	maxListItems = 10
)

// boundText returns s when it fits max bytes, otherwise its head and tail
// around a note of how many bytes were left out, cut at UTF-8 boundaries.
func BoundText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	keep := max - 32 // room for the note
	head, tail := keep*3/4, keep/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + "...(" + strconv.Itoa(start-head) + " bytes)..." + s[start:]
}

func RenderJSON(v *apiextv1.JSON) string {
	if v == nil {
		return "(none)"
	}
	return BoundText(CanonicalJSON(v.Raw), MaxValueBytes)
}

// quoteList renders names as ["a", "b"], at most maxListItems of them.
func QuoteList(items []string) string {
	n := min(len(items), maxListItems)
	q := make([]string, n)
	for i, s := range items[:n] {
		q[i] = BoundText(strconv.Quote(s), MaxValueBytes)
	}
	return listOf(q, len(items))
}

// valueList renders canonical JSON values as [a, b], at most maxListItems
// of them.
func ValueList(items []string) string {
	n := min(len(items), maxListItems)
	q := make([]string, n)
	for i, s := range items[:n] {
		q[i] = BoundText(s, MaxValueBytes)
	}
	return listOf(q, len(items))
}

// listOf renders the first items of a list of total items, counting the
// rest: [a, b, ... (98 more)].
func listOf(shown []string, total int) string {
	if total > len(shown) {
		shown = append(shown, "... ("+strconv.Itoa(total-len(shown))+" more)")
	}
	return "[" + strings.Join(shown, ", ") + "]"
}

func FormatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func RenderPtr[T int64 | float64](p *T) string {
	if p == nil {
		return "(none)"
	}
	return FormatFloat(float64(*p))
}

func RenderString(s string) string {
	if s == "" {
		return "(none)"
	}
	return BoundText(strconv.Quote(s), MaxValueBytes)
}

// canonicalValue renders a decoded value (from JSON, YAML or the apiserver:
// numbers as int64, float64 or json.Number) as canonical JSON: 1.0 and 1
// render alike.
func CanonicalValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return CanonicalJSON(b)
}

// summarize renders validation errors sorted, the first few in full.
func Summarize(errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return SummarizeList(msgs)
}

// summarizeList renders items sorted, the first few in full.
func SummarizeList(items []string) string {
	slices.Sort(items)
	items = slices.Compact(items)
	const max = 3
	if len(items) > max {
		return strings.Join(items[:max], "; ") + fmt.Sprintf("; and %d more", len(items)-max)
	}
	return strings.Join(items, "; ")
}

// deepCopyJSON copies a decoded JSON or YAML value: maps and lists are
// copied (a nil one becomes an untyped nil), anything else is kept as it is.
func DeepCopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = DeepCopyJSON(e)
		}
		return out
	case []any:
		if x == nil {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = DeepCopyJSON(e)
		}
		return out
	}
	return v
}
