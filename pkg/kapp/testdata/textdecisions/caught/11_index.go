// want 1
package x

import "strings"

// strings.Index into an error's text to cut a field out of it.
func f(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, " in "); i >= 0 {
		return msg[i+4:]
	}
	return ""
}
