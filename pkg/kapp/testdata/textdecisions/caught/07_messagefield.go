// want 1
package x

import "strings"

// A condition's .Message read by strings.
type condition struct {
	Type    string
	Message string
}

func f(c condition) bool {
	return c.Type == "Failed" && strings.Contains(c.Message, "storage")
}
