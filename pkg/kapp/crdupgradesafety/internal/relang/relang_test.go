package relang

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func mustCompile(t testing.TB, pattern string) *Lang {
	t.Helper()
	l, err := Compile(pattern)
	if err != nil {
		t.Fatalf("Compile(%q): %v", pattern, err)
	}
	return l
}

// checkResult checks what every answer must satisfy, against Go's regexp
// itself: a witness is a valid string the old pattern accepts and the new
// one rejects.
func checkResult(t testing.TB, old, new string, res Result) {
	t.Helper()
	if res.Verdict != NotIncluded {
		if res.Witness != "" {
			t.Errorf("%q ⊆ %q: %v with a witness %q", old, new, res.Verdict, res.Witness)
		}
		return
	}
	w := res.Witness
	if !utf8.ValidString(w) {
		t.Errorf("%q ⊆ %q: witness %q is not valid UTF-8", old, new, w)
	}
	if !regexp.MustCompile(old).MatchString(w) {
		t.Errorf("%q ⊆ %q: witness %q is not accepted by the old pattern", old, new, w)
	}
	if regexp.MustCompile(new).MatchString(w) {
		t.Errorf("%q ⊆ %q: witness %q is accepted by the new pattern", old, new, w)
	}
}

func TestIncludes(t *testing.T) {
	const any = "\x00any" // the witness is checked, not its text
	cases := []struct {
		name, old, new string
		want           Verdict
		witness        string // exact witness, or any (then wantLen runes)
		wantLen        int
	}{
		{name: "identical", old: `^[a-z]+$`, new: `^[a-z]+$`, want: Included},
		{name: "class widened", old: `^[a-z]+$`, new: `^[a-z0-9]+$`, want: Included},
		{name: "class narrowed", old: `^[a-z0-9]+$`, new: `^[a-z]+$`, want: NotIncluded, witness: "0"},
		{name: "length bounded", old: `^[a-z]+$`, new: `^[a-z]{1,8}$`, want: NotIncluded, witness: "aaaaaaaaa"},
		{name: "length unbounded", old: `^[a-z]{1,8}$`, new: `^[a-z]+$`, want: Included},
		{name: "counted repetition widened", old: `^a{2,3}$`, new: `^a{2,4}$`, want: Included},
		{name: "counted repetition narrowed", old: `^a{2,4}$`, new: `^a{2,3}$`, want: NotIncluded, witness: "aaaa"},
		{name: "dns label max 63", old: `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, new: `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`,
			want: NotIncluded, witness: strings.Repeat("a", 64)},
		{name: "pattern added: empty string rejected", old: ``, new: `^[a-z]+$`, want: NotIncluded, witness: ""},
		{name: "pattern added that accepts everything", old: ``, new: `.*`, want: Included},
		{name: "pattern added unanchored: a string without it", old: ``, new: `x`, want: NotIncluded, witness: ""},
		{name: "pattern removed", old: `^[a-z]+$`, new: ``, want: Included},
		{name: "unanchored: longer literal implies its part", old: `abc`, new: `b`, want: Included},
		{name: "unanchored: part does not imply longer", old: `b`, new: `abc`, want: NotIncluded, witness: "b"},
		{name: "anchor added", old: `abc`, new: `^abc`, want: NotIncluded, witness: any, wantLen: 4},
		{name: "anchor dropped", old: `^abc$`, new: `abc`, want: Included},
		{name: "\\A and ^ agree without (?m)", old: `\Aab`, new: `^ab`, want: Included},
		{name: "\\z and $ agree without (?m)", old: `ab$`, new: `ab\z`, want: Included},
		{name: "$ is not before a final newline in Go", old: `^a$`, new: `^a\n?$`, want: Included},
		{name: "multi-line is looser", old: `^a$`, new: `(?m)^a$`, want: Included},
		{name: "multi-line removed", old: `(?m)^a$`, new: `^a$`, want: NotIncluded, witness: "a\n"},
		{name: "case folding added", old: `^abc$`, new: `(?i)^abc$`, want: Included},
		{name: "case folding removed", old: `(?i)^abc$`, new: `^abc$`, want: NotIncluded, witness: any, wantLen: 3},
		{name: "case folding reaches the Kelvin sign", old: `(?i)^k$`, new: `^[kK]$`, want: NotIncluded, witness: "\u212a"},
		{name: "dot excludes newline", old: `^.$`, new: `^[^\n]$`, want: Included},
		{name: "(?s) dot includes newline", old: `(?s)^.$`, new: `^.$`, want: NotIncluded, witness: "\n"},
		{name: "negated class includes newline", old: `^[^a]$`, new: `^.$`, want: NotIncluded, witness: "\n"},
		{name: "surrogates are not strings", old: `^[\x{0}-\x{10FFFF}]$`, new: `^[^\x{D800}-\x{DFFF}]$`, want: Included},
		{name: "\\d is ASCII", old: `^\d+$`, new: `^[0-9]+$`, want: Included},
		{name: "\\w is ASCII", old: `^\w+$`, new: `^[a-zA-Z0-9_]+$`, want: Included},
		{name: "Unicode letters are more than ASCII", old: `^\pL+$`, new: `^[a-zA-Z]+$`, want: NotIncluded, witness: any, wantLen: 1},
		{name: "word boundary only narrows", old: `\bfoo\b`, new: `foo`, want: Included},
		{name: "word boundary added", old: `foo`, new: `\bfoo\b`, want: NotIncluded, witness: any, wantLen: 4},
		{name: "non-boundary", old: `a\Bb`, new: `ab`, want: Included},
		{name: "empty language is in everything", old: `a^b`, new: `x`, want: Included},
		{name: "end of text matches every string", old: ``, new: `\z`, want: Included},
		{name: "alternation reordered", old: `^(foo|bar)$`, new: `^(bar|foo)$`, want: Included},
		{name: "alternation branch dropped", old: `^(foo|bar)$`, new: `^foo$`, want: NotIncluded, witness: "bar"},
		{name: "star of union", old: `^(a|b)*$`, new: `^(a*b*)*$`, want: Included},
		{name: "same language written differently", old: `^[0-9]{2}-[0-9]{2}$`, new: `^\d\d-\d\d$`, want: Included},
		{name: "literal vs escape", old: `^é$`, new: `^\x{e9}$`, want: Included},
		{name: "uuid4 within uuid", old: `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`,
			new: `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`, want: Included},
		{name: "uuid not within uuid4", old: `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`,
			new: `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$`, want: NotIncluded,
			witness: strings.Repeat("a", 32)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Includes(mustCompile(t, tc.old), mustCompile(t, tc.new), 0)
			checkResult(t, tc.old, tc.new, res)
			if res.Verdict != tc.want {
				t.Fatalf("Includes(%q, %q) = %v (witness %q), want %v", tc.old, tc.new, res.Verdict, res.Witness, tc.want)
			}
			switch {
			case tc.want != NotIncluded:
			case tc.witness == any:
				if n := utf8.RuneCountInString(res.Witness); n != tc.wantLen {
					t.Errorf("witness %q has %d runes, want a shortest one of %d", res.Witness, n, tc.wantLen)
				}
			case res.Witness != tc.witness:
				t.Errorf("witness %q, want %q", res.Witness, tc.witness)
			}
		})
	}
}

// TestIncludesBound: a new pattern whose DFA has exponentially many states
// exhausts a small bound, and the answer is Unknown, never a guess.
func TestIncludesBound(t *testing.T) {
	old := mustCompile(t, `^[ab]*a[ab]{20}$`)
	new := mustCompile(t, `^[ab]*a[ab]{20}$|^[ab]*b[ab]{20}$`)
	res := Includes(old, new, 1000)
	if res.Verdict != Unknown || res.States != 1000 {
		t.Fatalf("got %v after %d states, want unknown after 1000", res.Verdict, res.States)
	}
	// With a small suffix the same shape is decided.
	if res := Includes(mustCompile(t, `^[ab]*a[ab]{3}$`), mustCompile(t, `^[ab]*a[ab]{3}$|^[ab]*b[ab]{3}$`), 1000); res.Verdict != Included {
		t.Fatalf("small instance: got %v, want included", res.Verdict)
	}
}

func TestCompileError(t *testing.T) {
	if _, err := Compile(`a(`); err == nil || !strings.Contains(err.Error(), `"a("`) {
		t.Fatalf("want an error naming the pattern, got %v", err)
	}
}

// bruteAlphabet has a rune of every kind the random patterns tell apart:
// letters in both cases, a Kelvin sign (folds to k), a digit, a word and a
// non-word character, a newline, a non-ASCII letter.
var bruteAlphabet = []rune{'a', 'b', 'A', 'k', '\u212a', '1', '_', ' ', '\n', 'é'}

// bruteStrings are all strings over bruteAlphabet of up to n runes,
// shortest first.
func bruteStrings(n int) []string {
	out := []string{""}
	level := []string{""}
	for range n {
		var next []string
		for _, s := range level {
			for _, r := range bruteAlphabet {
				next = append(next, s+string(r))
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

// randomPattern builds a random pattern from the constructs whose
// semantics matter: classes, folding, anchors in both line modes, word
// boundaries, repetition and alternation.
func randomPattern(r *rand.Rand, depth int) string {
	atoms := []string{"a", "b", "k", "A", "[ab]", "[^a]", ".", `\w`, `\W`, `\d`, `\s`, `\n`, "é", "(?i:k)", "(?s:.)", "[[:upper:]]", `\pL`}
	anchors := []string{"^", "$", `\A`, `\z`, `\b`, `\B`}
	if depth > 2 {
		return atoms[r.IntN(len(atoms))]
	}
	switch r.IntN(9) {
	case 0, 1:
		return atoms[r.IntN(len(atoms))]
	case 2:
		return anchors[r.IntN(len(anchors))]
	case 3, 4:
		n := 1 + r.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(randomPattern(r, depth+1))
		}
		return b.String()
	case 5:
		return "(?:" + randomPattern(r, depth+1) + "|" + randomPattern(r, depth+1) + ")"
	case 6:
		ops := []string{"*", "+", "?", "{0,2}", "{1,2}", "{2}"}
		return "(?:" + randomPattern(r, depth+1) + ")" + ops[r.IntN(len(ops))]
	case 7:
		flags := []string{"(?m)", "(?i)", "(?s)", "(?ms)"}
		return flags[r.IntN(len(flags))] + randomPattern(r, depth+1)
	default:
		return "(" + randomPattern(r, depth+1) + ")"
	}
}

// TestIncludesAgainstRegexp cross-checks random pattern pairs with Go's
// regexp over every string of up to 3 runes of bruteAlphabet, and over
// strings sampled from the old pattern: when Includes says included, no
// such string is accepted by old and rejected by new; when it gives a
// witness, the witness is valid and no enumerated counterexample is
// shorter.
func TestIncludesAgainstRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	strs := bruteStrings(3)
	verdicts := map[Verdict]int{}
	const pairs = 600
	for range pairs {
		oldP, newP := randomPattern(r, 0), randomPattern(r, 0)
		if r.IntN(3) == 0 { // related pairs are where inclusion is interesting
			newP = "(?:" + oldP + ")|" + randomPattern(r, 1)
		}
		res := Includes(mustCompile(t, oldP), mustCompile(t, newP), 0)
		verdicts[res.Verdict]++
		checkResult(t, oldP, newP, res)
		oldRE, newRE := regexp.MustCompile(oldP), regexp.MustCompile(newP)
		for _, s := range strs {
			if !oldRE.MatchString(s) || newRE.MatchString(s) {
				continue
			}
			switch {
			case res.Verdict == Included:
				t.Fatalf("Includes(%q, %q) = included, but %q is accepted by old and rejected by new", oldP, newP, s)
			case res.Verdict == NotIncluded && utf8.RuneCountInString(res.Witness) > utf8.RuneCountInString(s):
				t.Fatalf("Includes(%q, %q): witness %q is longer than counterexample %q", oldP, newP, res.Witness, s)
			}
			break // strs is shortest first: the first counterexample is the one that matters
		}
		if res.Verdict != Included {
			continue
		}
		sampler, err := NewSampler(oldP)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if s, ok := sampler.Sample(r); ok && !newRE.MatchString(s) {
				t.Fatalf("Includes(%q, %q) = included, but sample %q is accepted by old and rejected by new", oldP, newP, s)
			}
		}
	}
	t.Logf("%d random pairs: %v", pairs, verdicts)
	if verdicts[Included] < pairs/10 || verdicts[NotIncluded] < pairs/10 || verdicts[Unknown] > 0 {
		t.Fatalf("the random pairs do not exercise both answers (or hit the bound): %v", verdicts)
	}
}

// TestSampler: every sample is accepted by its pattern, and samples cover
// more than one string.
func TestSampler(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range []string{`^[a-z]{1,8}$`, `(?i)^k+$`, `\bfoo\b`, `(?m)^ab?c?$`, `^(a|bc)*d?$`, `^\pL\d{2,}$`, `x`} {
		s, err := NewSampler(p)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(p)
		seen := map[string]bool{}
		for range 50 {
			v, ok := s.Sample(r)
			if !ok {
				continue
			}
			if !re.MatchString(v) {
				t.Fatalf("sample %q of %q does not match it", v, p)
			}
			seen[v] = true
		}
		if len(seen) < 3 {
			t.Fatalf("%q: only %d distinct samples: %v", p, len(seen), seen)
		}
	}
	if s, _ := NewSampler(`a^b`); s != nil {
		if v, ok := s.Sample(r); ok {
			t.Fatalf("a pattern that accepts nothing gave %q", v)
		}
	}
}

func BenchmarkIncludes(b *testing.B) {
	hostname := `^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$`
	for _, bc := range []struct{ name, old, new string }{
		{"dns-label", `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`},
		{"hostname-vs-dns-subdomain", `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`, hostname},
		{"duration", `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`, `^(([0-9]+)(h|m|s|ms))+$`},
	} {
		old, new := mustCompile(b, bc.old), mustCompile(b, bc.new)
		b.Run(bc.name, func(b *testing.B) {
			var res Result
			for b.Loop() {
				res = Includes(old, new, 0)
			}
			b.ReportMetric(float64(res.States), "states")
		})
	}
}

// FuzzIncludes checks any pair of patterns against Go's regexp: a witness
// is accepted by old and rejected by new, and when Includes answers
// included no short string over bruteAlphabet contradicts it.
//
//	go test -run '^$' -fuzz FuzzIncludes -fuzztime 5m ./pkg/kapp/crdupgradesafety/internal/relang/
func FuzzIncludes(f *testing.F) {
	for _, p := range [][2]string{{`^[a-z]+$`, `^[a-z]{1,8}$`}, {`(?i)k`, `[kK]`}, {`(?m)^a$`, `\ba`}, {``, `x`}, {`a|b*`, `(a|b)*`}} {
		f.Add(p[0], p[1])
	}
	strs := bruteStrings(2)
	f.Fuzz(func(t *testing.T, oldP, newP string) {
		old, err1 := Compile(oldP)
		new, err2 := Compile(newP)
		if err1 != nil || err2 != nil || len(old.prog.Inst) > 500 || len(new.prog.Inst) > 500 {
			return
		}
		res := Includes(old, new, 5000)
		checkResult(t, oldP, newP, res)
		if res.Verdict != Included {
			return
		}
		oldRE, newRE := regexp.MustCompile(oldP), regexp.MustCompile(newP)
		for _, s := range strs {
			if oldRE.MatchString(s) && !newRE.MatchString(s) {
				t.Fatalf("Includes(%q, %q) = included, but %q is accepted by old and rejected by new", oldP, newP, s)
			}
		}
	})
}
