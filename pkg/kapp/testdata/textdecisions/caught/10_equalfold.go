// want 1
package x

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// strings.EqualFold of a field error's Detail.
func f(e *field.Error) bool {
	return strings.EqualFold(e.Detail, "Forbidden")
}
