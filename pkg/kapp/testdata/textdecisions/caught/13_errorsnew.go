// want 2
package x

import "errors"

var errGone = errors.New("gone")

// An error made from another's text, compared.
func f(err error) bool {
	return errors.New(err.Error()) == errGone || errors.Is(errGone, errors.New(err.Error()))
}
