package x

import "strings"

// bound is called with an error's text and with a name: only the call
// with the text gives text; the name, bounded, keys a map.
func bound(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return strings.TrimSpace(s)
}

func g(err error, name string, m map[string]string) {
	m[bound(name, 10)] = bound(err.Error(), 200)
}
