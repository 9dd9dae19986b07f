// want 1
package x

import "bytes"

// bytes.Contains of an error's text.
func f(err error) bool {
	return bytes.Contains([]byte(err.Error()), []byte("refused"))
}
