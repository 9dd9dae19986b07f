// want 1
package x

import "strings"

// The text passed to a helper that searches it.
func isConflict(msg string) bool { return strings.Contains(msg, "conflict") }

func f(err error) bool { return isConflict(err.Error()) }
