// want 2
package x

import "regexp"

var conflict = regexp.MustCompile(`conflict`)

// A regexp on an error's text, and on a status message.
type status struct{ Message string }

func f(err error, s status) bool {
	ok, _ := regexp.MatchString("denied", s.Message)
	return conflict.MatchString(err.Error()) || ok
}
