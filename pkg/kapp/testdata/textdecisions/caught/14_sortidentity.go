// want 1
package x

import (
	"slices"
	"sort"
)

// Sorted by message, then deduplicated by it: an identity by text.
func f(errs []error) []error {
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })
}
