// want 1
package x

import "fmt"

// fmt.Sprint of an error, compared.
func f(err error) bool {
	return fmt.Sprint(err) == "not found"
}
