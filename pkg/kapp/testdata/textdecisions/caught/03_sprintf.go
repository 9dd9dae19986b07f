// want 1
package x

import (
	"fmt"
	"strings"
)

// fmt.Sprintf("%v", err), held and searched.
func f(err error) bool {
	var text = fmt.Sprintf("%v", err)
	return strings.HasPrefix(text, "conflict")
}
