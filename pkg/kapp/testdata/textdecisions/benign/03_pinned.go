package x

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// pinned is a pinned parser: it reads the words, its result is a fact.
func pinned(e *field.Error) string {
	if name, _, ok := strings.Cut(e.Detail, `"`); ok {
		return name
	}
	return e.Field
}

func h(errs field.ErrorList) map[string]bool {
	out := map[string]bool{}
	for _, e := range errs {
		out[pinned(e)] = true
	}
	return out
}
