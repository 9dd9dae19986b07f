package relang

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
)

// Old-side thread states besides a program counter.
const (
	oldMatched int32 = -2 // the old pattern has matched: it accepts any continuation
	oldBefore  int32 = -1 // no match attempt started yet (the unanchored search's prefix)
)

// newAccepted is the new side's DFA state once the new pattern has
// matched: the product state is dead, no continuation can be a witness.
const newAccepted int32 = -1

// state is one product state: one thread of the old NFA (a pending
// program counter, before its epsilon closure), one state of the new
// program's DFA (an interned set of pending program counters), and the kind
// of the last rune read.
type state struct {
	old int32
	new int32
	ctx ctxKind
}

type visit struct {
	st     state
	parent int32 // index of the previous visit, -1 for the start
	class  int32 // the class read to get here
}

type search struct {
	old, new       *prog
	alpha          alphabet
	maxStates      int
	newSets        [][]uint32
	newIDs         map[string]int32
	newStep        map[[3]int32]int32 // (set, ctx, class) -> set or newAccepted
	newEnd         map[[2]int32]bool  // (set, ctx) -> accepts at the end of the text
	oldStep        map[[3]int32][]int32
	oldEnd         map[[2]int32]bool
	scratch, outs  []uint32
	scratchPending []uint32
	key            []byte
}

// matchedOnly is the successor list of a matched old thread (read only).
var matchedOnly = []int32{oldMatched}

// prog is a compiled program with the rune set of each instruction and a
// reusable epsilon-closure walker.
type prog struct {
	*syntax.Prog
	list  []int32 // pc -> index into alphabet.lists, -1 for non-rune instructions
	mark  []uint32
	gen   uint32
	stack []uint32
}

func newSearch(oldProg, newProg *syntax.Prog, maxStates int) *search {
	s := &search{
		old:       &prog{Prog: oldProg, mark: make([]uint32, len(oldProg.Inst))},
		new:       &prog{Prog: newProg, mark: make([]uint32, len(newProg.Inst))},
		maxStates: maxStates,
		newIDs:    map[string]int32{},
		newStep:   map[[3]int32]int32{},
		newEnd:    map[[2]int32]bool{},
		oldStep:   map[[3]int32][]int32{},
		oldEnd:    map[[2]int32]bool{},
	}
	byKey, bySlice := map[string]int32{}, map[instRunes]int32{}
	s.old.list = s.alpha.listIDs(oldProg, byKey, bySlice)
	s.new.list = s.alpha.listIDs(newProg, byKey, bySlice)
	s.alpha.buildClasses()
	return s
}

// closure follows the empty transitions of p from pending under the
// empty-width assertions in flags. It appends the rune instructions
// reached to runes and reports whether a Match instruction was reached.
func (p *prog) closure(pending []uint32, flags syntax.EmptyOp, runes []uint32) ([]uint32, bool) {
	p.gen++
	if p.gen == 0 { // wrapped: reset the marks
		clear(p.mark)
		p.gen = 1
	}
	matched := false
	stack := append(p.stack[:0], pending...)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p.mark[pc] == p.gen {
			continue
		}
		p.mark[pc] = p.gen
		i := &p.Inst[pc]
		switch i.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, i.Arg, i.Out)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, i.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(i.Arg)&^flags == 0 {
				stack = append(stack, i.Out)
			}
		case syntax.InstMatch:
			matched = true
		case syntax.InstFail:
		default: // a rune instruction
			runes = append(runes, pc)
		}
	}
	p.stack = stack
	return runes, matched
}

// newState interns a set of pending program counters of the new program.
func (s *search) newState(set []uint32) int32 {
	slices.Sort(set)
	set = slices.Compact(set)
	s.key = s.key[:0]
	for _, pc := range set {
		s.key = binary.LittleEndian.AppendUint32(s.key, pc)
	}
	if id, ok := s.newIDs[string(s.key)]; ok {
		return id
	}
	id := int32(len(s.newSets))
	s.newSets = append(s.newSets, slices.Clone(set))
	s.newIDs[string(s.key)] = id
	return id
}

// withStart returns the pending set of a new-side DFA state plus the start
// of the program: the unanchored search starts a new attempt at every
// position.
func (s *search) withStart(id int32) []uint32 {
	s.scratchPending = append(append(s.scratchPending[:0], s.newSets[id]...), uint32(s.new.Start))
	return s.scratchPending
}

// stepNew is the new DFA's transition from set id, after a rune of kind
// ctx, on class c.
func (s *search) stepNew(id int32, ctx ctxKind, c int32) int32 {
	key := [3]int32{id, int32(ctx), c}
	if next, ok := s.newStep[key]; ok {
		return next
	}
	cl := &s.alpha.classes[c]
	runes, matched := s.new.closure(s.withStart(id), emptyFlags(ctx, cl.ctx), s.scratch[:0])
	s.scratch = runes
	next := newAccepted
	if !matched {
		s.outs = s.outs[:0]
		for _, pc := range runes {
			if cl.contains(s.new.list[pc]) {
				s.outs = append(s.outs, s.new.Inst[pc].Out)
			}
		}
		next = s.newState(s.outs)
	}
	s.newStep[key] = next
	return next
}

func (s *search) newAcceptsAtEnd(id int32, ctx ctxKind) bool {
	key := [2]int32{id, int32(ctx)}
	if v, ok := s.newEnd[key]; ok {
		return v
	}
	runes, matched := s.new.closure(s.withStart(id), emptyFlags(ctx, ctxText), s.scratch[:0])
	s.scratch = runes
	s.newEnd[key] = matched
	return matched
}

// stepOld returns the old thread states that follow thread t, after a
// rune of kind ctx, on class c. A thread that reaches Match becomes
// oldMatched, which accepts every continuation and so stands for all its
// other successors.
func (s *search) stepOld(t int32, ctx ctxKind, c int32) []int32 {
	if t == oldMatched {
		return matchedOnly
	}
	key := [3]int32{t, int32(ctx), c}
	if next, ok := s.oldStep[key]; ok {
		return next
	}
	var next []int32
	pc := t
	if t == oldBefore {
		next = append(next, oldBefore) // the match may start later
		pc = int32(s.old.Start)
	}
	cl := &s.alpha.classes[c]
	runes, matched := s.old.closure([]uint32{uint32(pc)}, emptyFlags(ctx, cl.ctx), s.scratch[:0])
	s.scratch = runes
	if matched {
		next = matchedOnly
	} else {
		for _, r := range runes {
			if cl.contains(s.old.list[r]) {
				next = append(next, int32(s.old.Inst[r].Out))
			}
		}
		slices.Sort(next)
		next = slices.Compact(next)
	}
	s.oldStep[key] = next
	return next
}

func (s *search) oldAcceptsAtEnd(t int32, ctx ctxKind) bool {
	if t == oldMatched {
		return true
	}
	key := [2]int32{t, int32(ctx)}
	if v, ok := s.oldEnd[key]; ok {
		return v
	}
	pc := t
	if t == oldBefore {
		pc = int32(s.old.Start)
	}
	runes, matched := s.old.closure([]uint32{uint32(pc)}, emptyFlags(ctx, ctxText), s.scratch[:0])
	s.scratch = runes
	s.oldEnd[key] = matched
	return matched
}

// run searches breadth first, so the first witness found is a shortest
// one; classes are tried nicest first.
func (s *search) run() Result {
	start := state{old: oldBefore, new: s.newState(nil), ctx: ctxText}
	visits := []visit{{st: start, parent: -1, class: -1}}
	seen := map[state]struct{}{start: {}}
	for i := 0; i < len(visits); i++ {
		v := visits[i]
		if s.oldAcceptsAtEnd(v.st.old, v.st.ctx) && !s.newAcceptsAtEnd(v.st.new, v.st.ctx) {
			return Result{Verdict: NotIncluded, Witness: s.witness(visits, int32(i)), States: len(visits)}
		}
		for c := range s.alpha.classes {
			nn := s.stepNew(v.st.new, v.st.ctx, int32(c))
			if nn == newAccepted {
				continue
			}
			ctx := s.alpha.classes[c].ctx
			for _, no := range s.stepOld(v.st.old, v.st.ctx, int32(c)) {
				st := state{old: no, new: nn, ctx: ctx}
				if _, ok := seen[st]; ok {
					continue
				}
				if len(visits) >= s.maxStates {
					return Result{Verdict: Unknown, States: len(visits)}
				}
				seen[st] = struct{}{}
				visits = append(visits, visit{st: st, parent: int32(i), class: int32(c)})
			}
		}
	}
	return Result{Verdict: Included, States: len(visits)}
}

func (s *search) witness(visits []visit, i int32) string {
	var runes []rune
	for ; visits[i].parent >= 0; i = visits[i].parent {
		runes = append(runes, s.alpha.classes[visits[i].class].rep)
	}
	slices.Reverse(runes)
	return string(runes)
}
