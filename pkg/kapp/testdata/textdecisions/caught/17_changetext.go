// want 1
package x

// A finding's text read where a decision is made.
type Finding struct{ ChangeText string }

func f(fs []Finding) int {
	fs[0].ChangeText = "set"
	return len(fs[0].ChangeText)
}
