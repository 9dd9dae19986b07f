package relang

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"unicode"
)

// rng is an inclusive range of runes.
type rng struct{ lo, hi rune }

const (
	surrogateMin = 0xD800
	surrogateEnd = 0xE000 // first rune after the surrogates
)

// ctxKind is what an empty-width assertion can see of the rune on one side
// of a position (syntax.EmptyOpContext): a word character, a newline,
// another rune, or the edge of the text.
type ctxKind uint8

const (
	ctxText ctxKind = iota // no rune: the beginning or the end of the text
	ctxWord
	ctxNewline
	ctxOther
	numCtx
)

// ctxRune is a rune of each kind, for syntax.EmptyOpContext.
var ctxRune = [numCtx]rune{ctxText: -1, ctxWord: 'a', ctxNewline: '\n', ctxOther: ' '}

func kindOf(r rune) ctxKind {
	switch {
	case syntax.IsWordChar(r):
		return ctxWord
	case r == '\n':
		return ctxNewline
	default:
		return ctxOther
	}
}

// emptyFlags are the empty-width assertions that hold between a rune of
// kind before and one of kind after.
func emptyFlags(before, after ctxKind) syntax.EmptyOp {
	return syntax.EmptyOpContext(ctxRune[before], ctxRune[after])
}

// class is a set of runes that every rune instruction of both programs and
// every empty-width assertion treat alike: one letter of the search's
// alphabet.
type class struct {
	ctx ctxKind
	rep rune     // the rune a witness uses for the class
	has []uint64 // bitset over alphabet.lists: the range lists containing the class
}

// alphabet partitions the valid runes into classes for the rune
// instructions of some programs.
type alphabet struct {
	lists   [][]rng // distinct rune sets of the programs' rune instructions
	classes []class // in the order the search tries them: nicest witness rune first
}

// listIDs maps each instruction of prog to the index of its rune set in
// a.lists (-1 for instructions that read no rune), adding new sets.
// Repetitions compile to many instructions sharing one rune slice: those
// are recognised by the slice before their content is compared.
func (a *alphabet) listIDs(prog *syntax.Prog, byKey map[string]int32, bySlice map[instRunes]int32) []int32 {
	ids := make([]int32, len(prog.Inst))
	for pc := range prog.Inst {
		i := &prog.Inst[pc]
		ir := instRunes{op: i.Op, arg: i.Arg, n: len(i.Rune)}
		if len(i.Rune) > 0 {
			ir.first = &i.Rune[0]
		}
		if id, ok := bySlice[ir]; ok {
			ids[pc] = id
			continue
		}
		rs := instRanges(i)
		id := int32(-1)
		if rs != nil {
			key := rangesKey(rs)
			var ok bool
			if id, ok = byKey[key]; !ok {
				id = int32(len(a.lists))
				a.lists = append(a.lists, rs)
				byKey[key] = id
			}
		}
		bySlice[ir] = id
		ids[pc] = id
	}
	return ids
}

// instRunes identifies what a rune instruction reads by its rune slice.
type instRunes struct {
	op    syntax.InstOp
	arg   uint32
	first *rune
	n     int
}

// instRanges returns the sorted, merged runes an instruction reads, nil
// when it reads none. It follows syntax.Inst.MatchRune.
func instRanges(i *syntax.Inst) []rng {
	switch i.Op {
	case syntax.InstRune1:
		return []rng{{i.Rune[0], i.Rune[0]}}
	case syntax.InstRuneAny:
		return []rng{{0, unicode.MaxRune}}
	case syntax.InstRuneAnyNotNL:
		return []rng{{0, '\n' - 1}, {'\n' + 1, unicode.MaxRune}}
	case syntax.InstRune:
		var rs []rng
		switch {
		case len(i.Rune) == 1:
			r0 := i.Rune[0]
			rs = append(rs, rng{r0, r0})
			if syntax.Flags(i.Arg)&syntax.FoldCase != 0 {
				for r1 := unicode.SimpleFold(r0); r1 != r0; r1 = unicode.SimpleFold(r1) {
					rs = append(rs, rng{r1, r1})
				}
			}
		default:
			for j := 0; j+1 < len(i.Rune); j += 2 {
				rs = append(rs, rng{i.Rune[j], i.Rune[j+1]})
			}
		}
		return mergeRanges(rs)
	}
	return nil
}

func mergeRanges(rs []rng) []rng {
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func rangesKey(rs []rng) string {
	b := make([]byte, 0, 8*len(rs))
	for _, r := range rs {
		b = binary.LittleEndian.AppendUint32(b, uint32(r.lo))
		b = binary.LittleEndian.AppendUint32(b, uint32(r.hi))
	}
	return string(b)
}

func contains(rs []rng, r rune) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].hi >= r })
	return i < len(rs) && rs[i].lo <= r
}

// buildClasses partitions the valid runes (0..MaxRune without surrogates)
// into elementary intervals at every boundary of a rune set or of a context
// kind, and groups the intervals that lie in the same sets and have the
// same kind into classes.
func (a *alphabet) buildClasses() {
	bounds := []rune{0, unicode.MaxRune + 1, surrogateMin, surrogateEnd,
		'\n', '\n' + 1, '0', '9' + 1, 'A', 'Z' + 1, '_', '_' + 1, 'a', 'z' + 1}
	for _, l := range a.lists {
		for _, r := range l {
			bounds = append(bounds, r.lo, r.hi+1)
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)

	words := (len(a.lists) + 63) / 64
	byKey := map[string]int{}
	var best []int // preference score of each class's representative
	key := make([]byte, 0, 1+8*words)
	for k := 0; k+1 < len(bounds); k++ {
		lo, hi := bounds[k], bounds[k+1]-1
		if lo >= surrogateMin && lo < surrogateEnd {
			continue
		}
		has := make([]uint64, words)
		for id, l := range a.lists {
			if contains(l, lo) {
				has[id/64] |= 1 << (id % 64)
			}
		}
		ctx := kindOf(lo)
		key = append(key[:0], byte(ctx))
		for _, w := range has {
			key = strconv.AppendUint(key, w, 36)
			key = append(key, ',')
		}
		rep, score := niceRune(lo, hi)
		ci, ok := byKey[string(key)]
		if !ok {
			byKey[string(key)] = len(a.classes)
			a.classes = append(a.classes, class{ctx: ctx, rep: rep, has: has})
			best = append(best, score)
			continue
		}
		if score < best[ci] || score == best[ci] && rep < a.classes[ci].rep {
			a.classes[ci].rep, best[ci] = rep, score
		}
	}
	// Try the classes of the nicest runes first, so that among the shortest
	// witnesses the search returns a readable one.
	order := make([]int, len(a.classes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		ci, cj := order[i], order[j]
		if best[ci] != best[cj] {
			return best[ci] < best[cj]
		}
		return a.classes[ci].rep < a.classes[cj].rep
	})
	sorted := make([]class, len(order))
	for i, ci := range order {
		sorted[i] = a.classes[ci]
	}
	a.classes = sorted
}

// preferred are rune ranges in the order witnesses should use them.
var preferred = []rng{{'a', 'z'}, {'0', '9'}, {'A', 'Z'}, {'-', '-'}, {'_', '_'}, {'.', '.'}, {'!', '~'}, {' ', ' '}}

// niceRune returns the most readable rune of [lo, hi] and its score (lower
// is nicer): lowercase letters, digits, uppercase letters, then other
// printable ASCII, a space, printable non-ASCII, a newline, anything.
func niceRune(lo, hi rune) (rune, int) {
	for i, p := range preferred {
		if lo <= p.hi && hi >= p.lo {
			return max(lo, p.lo), i
		}
	}
	start := max(lo, 0x80)
	for r := start; r <= hi && r < start+256; r++ {
		if unicode.IsPrint(r) {
			return r, len(preferred)
		}
	}
	if lo <= '\n' && hi >= '\n' {
		return '\n', len(preferred) + 1
	}
	return lo, len(preferred) + 2
}

func (c *class) contains(list int32) bool {
	return list >= 0 && c.has[list/64]&(1<<(list%64)) != 0
}
