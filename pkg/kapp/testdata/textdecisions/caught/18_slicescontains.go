// want 1
package x

import "slices"

// A status message looked up in a list of known words.
type status struct{ Message string }

func f(s status) bool {
	return slices.Contains([]string{"already exists", "conflict"}, s.Message)
}
