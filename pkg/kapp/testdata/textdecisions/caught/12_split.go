// want 1
package x

import "strings"

// strings.Split of a message, its parts compared... the split decides.
type cause struct{ Message string }

func f(c cause) string {
	parts := strings.Split(c.Message, ": ")
	return parts[0]
}
