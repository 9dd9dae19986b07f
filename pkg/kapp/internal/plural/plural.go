// Package plural is the one pluraliser of the product's messages.
package plural

import (
	"strconv"
	"strings"
)

// Of returns one when n is 1, many otherwise: Of(n, "finding", "findings").
func Of(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count returns n followed by the noun it takes: Count(1, "CRD", "CRDs") is
// "1 CRD", Count(2, "CRD", "CRDs") is "2 CRDs".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Of(n, one, many)
}

// Noun is the English plural of a singular noun (a kind: Widget ->
// Widgets, Policy -> Policies, Ingress -> Ingresses).
func Noun(one string) string {
	lower := strings.ToLower(one)
	switch {
	case lower == "":
		return one
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return one[:len(one)-1] + "ies"
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"),
		strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return one + "es"
	}
	return one + "s"
}
