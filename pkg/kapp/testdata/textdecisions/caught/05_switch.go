// want 1
package x

// A switch on an error's text.
func f(err error) int {
	switch err.Error() {
	case "timeout":
		return 1
	}
	return 0
}
