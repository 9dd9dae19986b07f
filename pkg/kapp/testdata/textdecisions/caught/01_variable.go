// want 1
package x

import "strings"

// A variable holding err.Error(), searched.
func f(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "conflict")
}
