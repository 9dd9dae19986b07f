// want 2
package x

// == and != against an error's text.
func f(err, other error) bool {
	return err.Error() == "timeout" || "canceled" != other.Error()
}
