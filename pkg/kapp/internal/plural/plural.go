// Package plural is the one pluraliser of the product's messages.
package plural

import "strconv"

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
