// Package relang decides whether every string one regular expression
// accepts is accepted by another, the way the apiserver evaluates a CRD
// schema's `pattern`: with Go's regexp (k8s.io/kube-openapi's validator
// calls regexp.Compile and MatchString), so a pattern accepts a string when
// it matches anywhere in it, unless ^, $, \A or \z anchor it.
//
// Both patterns are compiled by regexp/syntax exactly as regexp.Compile
// compiles them (Perl flags, simplified) into Thompson NFAs. Inclusion
// L(old) ⊆ L(new) is decided by a breadth-first search of the product of
// the old NFA with the complement of the new one, determinized on the fly
// (subset construction on the new side), for a string the old pattern
// accepts and the new one rejects. The alphabet is the valid Unicode scalar
// values (JSON strings are UTF-8; surrogates cannot occur), represented by
// classes of runes that no instruction and no empty-width assertion tells
// apart, not rune by rune. Empty-width assertions (^ $ \A \z \b \B, with
// (?m)) depend on the runes before and after a position, so each product
// state carries the class of the last rune read.
//
// The search is bounded: when it visits more product states than allowed,
// the answer is Unknown.
package relang

import (
	"fmt"
	"regexp/syntax"
)

// Lang is the language of one pattern: the strings in which
// regexp.MustCompile(pattern).MatchString finds a match.
type Lang struct {
	pattern string
	prog    *syntax.Prog
}

// Compile parses a pattern as regexp.Compile does. The empty pattern
// accepts every string, like an absent `pattern` keyword.
func Compile(pattern string) (*Lang, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("parsing pattern %q: %w", pattern, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("compiling pattern %q: %w", pattern, err)
	}
	return &Lang{pattern: pattern, prog: prog}, nil
}

// String returns the pattern.
func (l *Lang) String() string { return l.pattern }

// Verdict is the answer of Includes.
type Verdict int

const (
	// Included: every string the old pattern accepts, the new one accepts.
	Included Verdict = iota
	// NotIncluded: Result.Witness is accepted by the old pattern and
	// rejected by the new one.
	NotIncluded
	// Unknown: the search reached its state bound before deciding.
	Unknown
)

func (v Verdict) String() string {
	switch v {
	case Included:
		return "included"
	case NotIncluded:
		return "not included"
	default:
		return "unknown"
	}
}

// Result of Includes.
type Result struct {
	Verdict Verdict
	// Witness is, for NotIncluded, a shortest string (in runes) that the
	// old pattern accepts and the new one rejects.
	Witness string
	// States is the number of product states visited.
	States int
}

// DefaultMaxStates bounds the search of Includes when maxStates is 0. It
// keeps a comparison within milliseconds for the patterns real CRDs use
// (character classes with counted repetitions of a few hundred).
const DefaultMaxStates = 20000

// Includes decides whether L(old) ⊆ L(new), visiting at most maxStates
// product states (0 means DefaultMaxStates).
func Includes(old, new *Lang, maxStates int) Result {
	if maxStates <= 0 {
		maxStates = DefaultMaxStates
	}
	if old.pattern == new.pattern {
		return Result{Verdict: Included}
	}
	s := newSearch(old.prog, new.prog, maxStates)
	return s.run()
}
