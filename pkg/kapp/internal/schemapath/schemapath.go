// Package schemapath owns the grammar of the schema paths findings carry:
// "^.spec.items[*].name", "^.spec.labels{*}", "^.spec.allOf[1].x",
// "^.spec.not". The engine builds paths only with these constructors, and
// every reader (the object reader's join, the YAML positions of the tools
// command) walks them only with Steps, so the grammar has one owner.
//
// Grammar, from the root "^":
//
//	.name        a property (names that hold one of . [ ] { } " ^ or that
//	             read as a combinator are written ["name"], JSON-quoted)
//	[*]          the items of an array
//	{*}          the values of a map (additionalProperties)
//	.allOf[i]    branch i of allOf (anyOf, oneOf alike)
//	.not         the schema inside not
//
// A Path is a string underneath, so that the engine's walk builds it at the
// cost of a concatenation; its value is the text outputs print.
package schemapath

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is a schema path. The zero value is "no path" (a finding about a
// whole CRD or version).
type Path string

// Root is the path of a version's openAPIV3Schema.
const Root Path = "^"

// Combinator keywords of a Branch step, and Not.
const (
	AllOf = "allOf"
	AnyOf = "anyOf"
	OneOf = "oneOf"
	Not   = "not"
)

// Kind is the kind of one step of a path.
type Kind int

const (
	Property Kind = iota + 1
	Items
	Values
	Branch  // Combinator and Index are set
	NotStep // the schema inside not
)

// Step is one step of a path below the root.
type Step struct {
	Kind       Kind
	Name       string // Property: the property's name
	Combinator string // Branch: allOf, anyOf or oneOf
	Index      int    // Branch: the branch's index
}

// String renders the path ("" for the zero Path).
func (p Path) String() string { return string(p) }

// IsZero reports whether p is the zero Path.
func (p Path) IsZero() bool { return p == "" }

// Child is the path of property name under p.
func (p Path) Child(name string) Path {
	if needsQuote(name) {
		return p + Path("["+strconv.Quote(name)+"]")
	}
	return p + "." + Path(name)
}

// Items is the path of the items of the array at p.
func (p Path) Items() Path { return p + "[*]" }

// Values is the path of the values of the map at p.
func (p Path) Values() Path { return p + "{*}" }

// Branch is the path of branch i of combinator comb (allOf, anyOf, oneOf) at p.
func (p Path) Branch(comb string, i int) Path {
	return p + Path("."+comb+"["+strconv.Itoa(i)+"]")
}

// Not is the path of the schema inside not at p.
func (p Path) Not() Path { return p + "." + Not }

func needsQuote(name string) bool {
	switch name {
	case "", AllOf, AnyOf, OneOf, Not:
		return true
	}
	return strings.ContainsAny(name, ".[]{}\"^")
}

// Steps parses p into its steps below the root. It fails on text that no
// constructor of this package builds.
func (p Path) Steps() ([]Step, error) {
	s := string(p)
	rest, ok := strings.CutPrefix(s, string(Root))
	if !ok {
		return nil, fmt.Errorf("schema path %q: does not start with %q", s, Root)
	}
	var steps []Step
	for rest != "" {
		step, n, err := next(rest)
		if err != nil {
			return nil, fmt.Errorf("schema path %q at %q: %w", s, rest, err)
		}
		steps = append(steps, step)
		rest = rest[n:]
	}
	return steps, nil
}

// next parses the step at the start of s and returns it with its length.
func next(s string) (Step, int, error) {
	switch {
	case strings.HasPrefix(s, "[*]"):
		return Step{Kind: Items}, 3, nil
	case strings.HasPrefix(s, "{*}"):
		return Step{Kind: Values}, 3, nil
	case strings.HasPrefix(s, `["`):
		name, err := strconv.QuotedPrefix(s[1:])
		if err != nil || !strings.HasPrefix(s[1+len(name):], "]") {
			return Step{}, 0, fmt.Errorf("unterminated quoted property name")
		}
		unq, _ := strconv.Unquote(name)
		return Step{Kind: Property, Name: unq}, len(name) + 2, nil
	case strings.HasPrefix(s, "."):
		end := strings.IndexAny(s[1:], ".[{")
		if end < 0 {
			end = len(s) - 1
		}
		name := s[1 : 1+end]
		switch name {
		case Not:
			return Step{Kind: NotStep}, 1 + end, nil
		case AllOf, AnyOf, OneOf:
			rest := s[1+end:]
			if num, _, ok := strings.Cut(strings.TrimPrefix(rest, "["), "]"); ok && strings.HasPrefix(rest, "[") {
				if i, err := strconv.Atoi(num); err == nil && i >= 0 {
					return Step{Kind: Branch, Combinator: name, Index: i}, 1 + end + len(num) + 2, nil
				}
			}
			return Step{}, 0, fmt.Errorf("combinator %s without a branch index", name)
		case "":
			return Step{}, 0, fmt.Errorf("empty property name")
		}
		return Step{Kind: Property, Name: name}, 1 + end, nil
	}
	return Step{}, 0, fmt.Errorf("expected .name, [\"name\"], [*], {*}, .allOf[i], .anyOf[i], .oneOf[i] or .not")
}

// Parent is the path above p: the root's parent and the zero Path's are
// the zero Path.
func (p Path) Parent() Path {
	steps, err := p.Steps()
	if err != nil || len(steps) == 0 {
		return ""
	}
	return Join(steps[:len(steps)-1])
}

// Join builds the path of steps below the root.
func Join(steps []Step) Path {
	p := Root
	for _, s := range steps {
		p = p.Append(s)
	}
	return p
}

// Append is the path of step s below p.
func (p Path) Append(s Step) Path {
	switch s.Kind {
	case Property:
		return p.Child(s.Name)
	case Items:
		return p.Items()
	case Values:
		return p.Values()
	case Branch:
		return p.Branch(s.Combinator, s.Index)
	case NotStep:
		return p.Not()
	}
	return p
}

// SplitCombinators returns the part of p before its first combinator step
// (a Branch or Not), and p with every combinator step removed: the schema
// path a value's field is at, whatever branches constrain it.
func (p Path) SplitCombinators() (base, stripped Path) {
	steps, err := p.Steps()
	if err != nil {
		return p, p
	}
	base, stripped = Root, Root
	seen := false
	for _, s := range steps {
		if s.Kind == Branch || s.Kind == NotStep {
			seen = true
			continue
		}
		if !seen {
			base = base.Append(s)
		}
		stripped = stripped.Append(s)
	}
	return base, stripped
}
