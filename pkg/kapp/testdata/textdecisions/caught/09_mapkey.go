// want 2
package x

// A map keyed by an error's text: set and read.
func f(errs, others []error) int {
	seen := map[string]bool{}
	for _, e := range errs {
		seen[e.Error()] = true
	}
	n := 0
	for _, e := range others {
		if !seen[e.Error()] {
			n++
		}
	}
	return n
}
