package relang

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
)

// Sampler draws random strings that a pattern accepts, for property tests:
// it expands the pattern's syntax tree (random branches, repetition counts
// often at their bounds, random runes of each class), adds random text
// around unanchored matches, and keeps only strings that
// regexp.MatchString accepts (empty-width assertions can reject an
// expansion).
type Sampler struct {
	re   *syntax.Regexp
	full *regexp.Regexp
}

// NewSampler parses pattern as regexp.Compile does.
func NewSampler(pattern string) (*Sampler, error) {
	full, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return &Sampler{re: re, full: full}, nil
}

// Sample returns a random string the pattern accepts, and false when none
// was found in a few attempts (a pattern may accept nothing).
func (s *Sampler) Sample(r *rand.Rand) (string, bool) {
	for range 20 {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString(RandomString(r, 3))
		}
		if !expand(r, s.re, &b, 0) {
			continue
		}
		if r.IntN(4) == 0 {
			b.WriteString(RandomString(r, 3))
		}
		if out := b.String(); s.full.MatchString(out) {
			return out, true
		}
	}
	return "", false
}

// expand appends a random expansion of re to b; false when re matches
// nothing.
func expand(r *rand.Rand, re *syntax.Regexp, b *strings.Builder, depth int) bool {
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && r.IntN(2) == 0 {
				c = unicode.SimpleFold(c)
			}
			b.WriteRune(c)
		}
		return true
	case syntax.OpCharClass:
		c, ok := classRune(r, re.Rune)
		if ok {
			b.WriteRune(c)
		}
		return ok
	case syntax.OpAnyCharNotNL:
		c := RandomRune(r)
		for c == '\n' {
			c = RandomRune(r)
		}
		b.WriteRune(c)
		return true
	case syntax.OpAnyChar:
		b.WriteRune(RandomRune(r))
		return true
	case syntax.OpCapture:
		return expand(r, re.Sub[0], b, depth)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		if hi < 0 {
			hi = lo + 3
			if depth < 2 && r.IntN(8) == 0 {
				hi = lo + 40
			}
		}
		n := lo
		switch r.IntN(3) {
		case 0: // at the lower bound
		case 1:
			n = hi
		default:
			n = lo + r.IntN(hi-lo+1)
		}
		for range n {
			if !expand(r, re.Sub[0], b, depth+1) {
				return n == 0
			}
		}
		return true
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !expand(r, sub, b, depth) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return expand(r, re.Sub[r.IntN(len(re.Sub))], b, depth)
	}
	return false
}

// classRune picks a random rune of a character class (pairs of ranges),
// never a surrogate.
func classRune(r *rand.Rand, pairs []rune) (rune, bool) {
	if len(pairs) == 0 {
		return 0, false
	}
	for range 10 {
		i := 2 * r.IntN(len(pairs)/2)
		lo, hi := pairs[i], pairs[i+1]
		c := lo
		switch r.IntN(3) {
		case 0:
		case 1:
			c = hi
		default:
			c = lo + rune(r.Int64N(int64(hi-lo)+1))
		}
		if c < surrogateMin || c >= surrogateEnd {
			return c, true
		}
	}
	return 0, false
}

// interesting runes for random strings: every context kind, case pairs
// with non-ASCII folds, multi-byte runes.
var interesting = []rune("aAzZkK09_-. \n\t/:@#é\u00dfſK\u212aΩ☃\U0001F600\x00\uFFFD")

// RandomRune returns a random valid rune, most often an ASCII or otherwise
// interesting one.
func RandomRune(r *rand.Rand) rune {
	switch r.IntN(4) {
	case 0, 1:
		return interesting[r.IntN(len(interesting))]
	case 2:
		return rune(0x20 + r.IntN(0x5f))
	default:
		for {
			c := rune(r.IntN(unicode.MaxRune + 1))
			if c < surrogateMin || c >= surrogateEnd {
				return c
			}
		}
	}
}

// RandomString returns a random string of up to maxLen runes.
func RandomString(r *rand.Rand, maxLen int) string {
	n := r.IntN(maxLen + 1)
	rs := make([]rune, n)
	for i := range rs {
		rs[i] = RandomRune(r)
	}
	return string(rs)
}
