// want 2
package x

import "k8s.io/apimachinery/pkg/util/validation/field"

// An error's text kept in a struct field, and returned by a function,
// then used as a map key.
type effect struct{ value string }

func body(e *field.Error) string { return e.ErrorBody() }

func f(errs field.ErrorList, m map[string]int) {
	for _, e := range errs {
		ef := effect{value: e.ErrorBody()}
		m[ef.value]++
		m[body(e)]++
	}
}
