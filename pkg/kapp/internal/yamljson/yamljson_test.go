package yamljson

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"sigs.k8s.io/yaml"
)

// cases are YAML documents in the styles CRD files are written in, and
// the corners of YAML 1.1 that ToJSON must either convert exactly or leave
// to YAMLToJSON. fast says the streaming conversion must handle it (so the
// fast path is proven, not only the fallback).
var cases = []struct {
	name string
	doc  string
	fast bool
}{
	{"empty", "\n", true},
	{"comments only", "# a\n  # b\n\n", true},
	{"mapping", "b: 1\na: x\nc:\n", true},
	{"nested", "a:\n  b:\n    c: d\n  e: f\ng: h\n", true},
	{"sorted output, duplicate keys: the last wins", "b: 1\na: 2\nb: 3\na: 4\n", true},
	{"indentless sequence", "a:\n- x\n- y\nb: z\n", true},
	{"indented sequence", "a:\n  - x\n  -   y\nb: z\n", true},
	{"compact mappings in a sequence", "- a: 1\n  b: 2\n- c: 3\n-\n  d: 4\n-\n- - x\n  - y\n", true},
	{"top-level sequence and scalar", "- a\n- b\n", true},
	{"top-level plain scalar", "hello world\n", true},
	{"plain multi-line", "a: this is\n  a long\n\n  description\n   with blanks\nb: x\n", true},
	{"plain with colons and hashes", "a: http://x:80/y#z\nb: a:b c#d\nc: x # comment\n", true},
	{"plain continuation with a dash", "- a\n  - b\n", true},
	{"resolved scalars", "k0: 1\nk1: -2\nk2: 0x1F\nk3: 0777\nk4: 1_000\nk5: 1.5\nk6: .5\nk7: 1e3\nk8: true\nk9: yes\nk10: off\nk11: ~\nk12: null\nk13: 2001-12-14\nk14: 2001-12-14 21:59:43.10\nk15: +1\nk16: 9223372036854775808\nk17: -0b101\nk18: Y\nk19: NO\nk20: 12e\nk21: 1.0\nk23: -.5x\nk24: +x\nk25: 0b2\nk27: -9223372036854775809\nk28: ya\nk29: nulls\nk30: ~x\n", true},
	{"strings that look special", "a: 'true'\nb: \"1\"\nc: <tag> & \"q\"\nd: x\\y\ne: caf\u00e9 \u2019s\n", true},
	{"single-quoted", "a: 'it''s'\nb: 'multi\n  line\n\n  text '\nc: ''\n", true},
	{"double-quoted escapes", "a: \"tab\\tnl\\nq\\\"bs\\\\ \\x41\\u00e9\\U0001F600 \\0 \\e \\N \\_ \\L \\P\"\nb: \"folded\n  line \\\n  joined\"\nc: \"a  \\\n\n  b\"\n", true},
	{"quoted keys", "\"a b\": 1\n'c': 2\n\"\": 3\n", true},
	{"literal block scalars", "a: |\n  line 1\n    indented\n\n  line 3\nb: |-\n  strip\n\n\nc: |+\n  keep\n\n\nd: |2\n   two\ne: |\n\nf: x\n", true},
	{"literal with leading blank lines", "a: |-\n\n  x\n  y\n", true},
	{"literal in sequences", "- |\n  a\n- |-\n  b\n- k: |\n    c\n", true},
	{"literal at the end", "a: |\n  x\n", true},
	{"flow collections", "a: {}\nb: []\nc: [x, 'y', \"z\", 1, true]\nd: {k: v, j: [1, 2], \"q\": {}}\ne: [a, b, ]\n", true},
	{"flow over lines", "a: [x,\n  y]\nb: {k: v,\n  j: w}\n", true},
	{"flow in a sequence", "- {name: v1, served: true}\n- [a]\n", true},
	{"flow mapping null value", "a: {k: , j: 1}\n", true},
	{"json document", "{\"a\": 1, \"b\": [true, null]}\n", true},
	{"html characters", "a: <b>\nb: x&y\nc: \"\\u2028\"\n", true},
	{"unicode key", "caf\u00e9: 1\n", true},

	// Left to YAMLToJSON (fast false): the result must still be the same.
	{"anchors and aliases", "a: &x 1\nb: *x\n", false},
	{"merge key", "a: &x {k: 1}\nb:\n  <<: *x\n", false},
	{"tags", "a: !!str 1\n", false},
	{"folded scalar", "a: >\n  one\n  two\n", false},
	{"numeric keys", "1: a\ntrue: b\n", false},
	{"null key", "~: a\n", false},
	{"complex key", "? a\n: b\n", false},
	{"tabs", "a:\tb\n", false},
	{"carriage returns", "a: b\r\n", false},
	{"no final newline", "a: b", false},
	{"invalid: value with a colon", "a: b: c\n", false},
	{"invalid: bad indentation", "a:\n  b: c\n d: e\n", false},
	{"invalid: unclosed quote", "a: 'b\n", false},
	{"invalid: unclosed flow", "a: [b\n", false},
	{"invalid escape", "a: \"\\q\"\n", false},
	{"document end marker", "a: b\n...\n", false},
	{"directive", "%YAML 1.1\n---\na: b\n", false},
	{"nan", "a: .nan\n", false},
	{"float overflow", "a: 1e400\n", false},
	{"lone dash", "a: -\n", false},
	{"unknown escape", "a: \"\\/\"\n", false},
	{"boolean key", "on: a\n", false},
	{"flow pair in a sequence", "a: [b: c]\n", false},
	{"multi-line plain in flow", "a: [b\n  c]\n", false},
	{"literal with deeper leading blank line", "a: |\n     \n  x\n", false},
}

func TestToJSONMatchesYAMLToJSON(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireSame(t, []byte(tc.doc))
			_, ok := Convert([]byte(tc.doc))
			if tc.fast && !ok {
				t.Errorf("the streaming conversion left %q to YAMLToJSON", tc.doc)
			}
		})
	}
}

// requireSame: ToJSON gives YAMLToJSON's bytes or its error.
func requireSame(t *testing.T, doc []byte) {
	t.Helper()
	want, wantErr := yaml.YAMLToJSON(doc)
	got, err := ToJSON(doc)
	if (err != nil) != (wantErr != nil) || (err != nil && errText(err) != errText(wantErr)) {
		t.Fatalf("error: got %v, want %v", err, wantErr)
	}
	if string(got) != string(want) {
		t.Fatalf("doc %q:\n got %s\nwant %s", doc, got, want)
	}
}

// TestRealCRDs converts every document of the real CRDs (hack/fetch-crds.sh)
// and of the repository's CRD test data: the streaming conversion must
// handle each and give YAMLToJSON's bytes.
func TestRealCRDs(t *testing.T) {
	var files []string
	for _, root := range []string{"../../../../.cache/crds", "../../../../pkg", "../../../../examples", "../../../../test"} {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				files = append(files, path)
			}
			return nil
		})
	}
	real := 0
	for _, f := range files {
		if strings.Contains(f, ".cache") {
			real++
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := ctlres.NewYAMLFile(ctlres.NewBytesSource(data)).Docs()
		if err != nil {
			continue // not YAML on purpose (test data of errors)
		}
		for i, doc := range docs {
			want, wantErr := yaml.YAMLToJSON(doc)
			got, ok := Convert(doc)
			switch {
			case !ok && wantErr == nil && strings.Contains(f, ".cache"):
				t.Errorf("%s doc %d: a real CRD left to YAMLToJSON", f, i+1)
			case ok && wantErr != nil:
				t.Errorf("%s doc %d: converted a document YAMLToJSON refuses (%v)", f, i+1, wantErr)
			case ok && string(got) != string(want):
				t.Errorf("%s doc %d: output differs from YAMLToJSON at byte %d", f, i+1, firstDiff(got, want))
			}
		}
	}
	if real == 0 {
		t.Log("no real CRDs in .cache/crds (run hack/fetch-crds.sh): only the repository's YAML was converted")
	}
}

// errText drops what YAMLToJSON's own errors about a non-string key
// quote of the map: which entry it names depends on map iteration order.
func errText(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ", key: "); i >= 0 && strings.Contains(msg, "unsupported map key") {
		return msg[:i]
	}
	return msg
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// FuzzToJSON: whatever the input, ToJSON gives YAMLToJSON's result, and a
// streaming conversion only succeeds where YAMLToJSON does.
func FuzzToJSON(f *testing.F) {
	for _, tc := range cases {
		f.Add([]byte(tc.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := Convert(doc)
		if !ok {
			return
		}
		want, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("doc %q: converted to %s, YAMLToJSON refuses it: %v", doc, got, err)
		}
		if string(got) != string(want) {
			t.Fatalf("doc %q:\n got %s\nwant %s", doc, got, want)
		}
	})
}

// TestMutatedWindows cuts random windows of lines out of real CRD files
// and the repository's YAML, mutates them (indentation shifted, lines
// dropped or repeated, characters YAML reads specially inserted) and
// requires ToJSON to give YAMLToJSON's result on each: most windows are
// not valid YAML, which the streaming conversion must leave to YAMLToJSON.
func TestMutatedWindows(t *testing.T) {
	windows := 3000
	if n, err := strconv.Atoi(os.Getenv("YAMLJSON_WINDOWS")); err == nil {
		windows = n // more for a longer hunt
	}
	var sources [][]string
	for _, root := range []string{"../../../../.cache/crds", "../../../../pkg/kapp/cmd/tools/testdata", "../../../../pkg/kapp/inputs/testdata", "../../../../pkg/kapp/crdupgradesafety/testdata"} {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
				if data, err := os.ReadFile(path); err == nil {
					sources = append(sources, strings.SplitAfter(string(data), "\n"))
				}
			}
			return nil
		})
	}
	if len(sources) == 0 {
		t.Skip("no YAML sources")
	}
	seed, _ := strconv.ParseUint(os.Getenv("YAMLJSON_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(1, 2+seed))
	inserts := []string{": ", " #", "- ", "'", "\"", "{", "}", "[", "]", ",", "|", "|-", "|+", "? ", "&a ", "*a", "!", "\\", "~", "0", "-1", "yes", "  ", "\\x41", "'\n'"}
	fast := 0
	for i := 0; i < windows; i++ {
		lines := sources[rng.IntN(len(sources))]
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		start := rng.IntN(len(lines))
		end := min(len(lines), start+1+rng.IntN(30))
		window := append([]string(nil), lines[start:end]...)
		// Dedent by the first line's indentation, as a nested block.
		ind := len(window[0]) - len(strings.TrimLeft(window[0], " "))
		for j, l := range window {
			if len(l)-len(strings.TrimLeft(l, " ")) >= ind {
				window[j] = l[ind:]
			}
		}
		for m := rng.IntN(3); m > 0; m-- {
			j := rng.IntN(len(window))
			switch rng.IntN(4) {
			case 0:
				window[j] = " " + window[j]
			case 1:
				window = append(window[:j], window[j+1:]...)
			case 2:
				window = append(window[:j+1], window[j:]...)
			default:
				l := window[j]
				at := rng.IntN(len(l) + 1)
				window[j] = l[:at] + inserts[rng.IntN(len(inserts))] + l[at:]
			}
			if len(window) == 0 {
				break
			}
		}
		doc := []byte(strings.Join(window, ""))
		if len(doc) == 0 || doc[len(doc)-1] != '\n' {
			doc = append(doc, '\n')
		}
		if _, ok := Convert(doc); ok {
			fast++
		}
		t.Run(fmt.Sprintf("window-%d", i), func(t *testing.T) { requireSame(t, doc) })
	}
	t.Logf("%d of %d windows converted by the streaming path", fast, windows)
}

// TestGeneratedDocuments writes random documents in every style the
// streaming conversion handles (block and flow collections, plain,
// quoted and literal scalars with any chomping, indentation indicators,
// scalars YAML 1.1 resolves, comments, odd indentation), mutates some of
// them, and requires ToJSON to give YAMLToJSON's result on each.
func TestGeneratedDocuments(t *testing.T) {
	n := 3000
	if v, err := strconv.Atoi(os.Getenv("YAMLJSON_WINDOWS")); err == nil {
		n = v
	}
	seed, _ := strconv.ParseUint(os.Getenv("YAMLJSON_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(3, 4+seed))
	words := []string{"a", "b", "name", "type", "on", "yes", "No", "null", "~", "1", "-1", "0x1F", "1.5", ".5", "1e3", "0777", "2001-12-14",
		"true", "x y", "a:b", "a#b", "<b>", "&amp", "caf\u00e9", "-x", "+x", "x:", "...", "---", "'", "\"", "\\", "a  b", "", " ", "#", "[a]", "{a}", "a,b", "?x", "%x"}
	var gen func(b *strings.Builder, indent int, depth int, inline bool)
	scalar := func(b *strings.Builder, indent int) {
		w := words[rng.IntN(len(words))]
		switch rng.IntN(6) {
		case 0:
			b.WriteString("'" + strings.ReplaceAll(w, "'", "''") + "'")
		case 1:
			b.WriteString(strconv.Quote(w))
		case 2:
			b.WriteString([]string{"|", "|-", "|+", "|2", "|-1", "|+3"}[rng.IntN(6)])
			if rng.IntN(4) == 0 {
				b.WriteString(" # c")
			}
			b.WriteString("\n")
			for l := rng.IntN(4); l >= 0; l-- {
				b.WriteString(strings.Repeat(" ", indent+rng.IntN(3)) + words[rng.IntN(len(words))] + "\n")
				if rng.IntN(3) == 0 {
					b.WriteString("\n")
				}
			}
			return
		default:
			b.WriteString(w)
			if rng.IntN(5) == 0 {
				b.WriteString("\n" + strings.Repeat(" ", indent+rng.IntN(2)) + words[rng.IntN(len(words))])
			}
		}
		if rng.IntN(5) == 0 {
			b.WriteString(" # comment")
		}
		b.WriteString("\n")
	}
	var flow func(b *strings.Builder, depth int)
	flow = func(b *strings.Builder, depth int) {
		switch {
		case depth > 2 || rng.IntN(3) == 0:
			w := words[rng.IntN(len(words))]
			switch rng.IntN(3) {
			case 0:
				b.WriteString(strconv.Quote(w))
			case 1:
				b.WriteString("'" + strings.ReplaceAll(w, "'", "''") + "'")
			default:
				b.WriteString(w)
			}
		case rng.IntN(2) == 0:
			b.WriteString("[")
			for i := rng.IntN(3); i > 0; i-- {
				flow(b, depth+1)
				b.WriteString([]string{", ", ",", " ,\n   "}[rng.IntN(3)])
			}
			b.WriteString("]")
		default:
			b.WriteString("{")
			for i := rng.IntN(3); i > 0; i-- {
				b.WriteString(words[rng.IntN(len(words))] + ": ")
				flow(b, depth+1)
				b.WriteString([]string{", ", ","}[rng.IntN(2)])
			}
			b.WriteString("}")
		}
	}
	gen = func(b *strings.Builder, indent, depth int, inline bool) {
		pad := strings.Repeat(" ", indent)
		switch k := rng.IntN(4); {
		case depth > 3 || k == 0:
			if !inline {
				b.WriteString(pad)
			}
			scalar(b, indent)
		case k == 1:
			if !inline {
				b.WriteString(pad)
			}
			flow(b, 0)
			b.WriteString("\n")
		case k == 2:
			for i := 1 + rng.IntN(3); i > 0; i-- {
				if !inline {
					b.WriteString(pad)
				}
				inline = false
				b.WriteString(words[rng.IntN(len(words))] + ":")
				if rng.IntN(2) == 0 {
					b.WriteString(" ")
					gen(b, indent+2, depth+1, true)
				} else {
					b.WriteString("\n")
					gen(b, indent+[]int{0, 2, 3}[rng.IntN(3)], depth+1, false)
				}
			}
		default:
			for i := 1 + rng.IntN(3); i > 0; i-- {
				if !inline {
					b.WriteString(pad)
				}
				inline = false
				b.WriteString("- ")
				gen(b, indent+2, depth+1, true)
			}
		}
	}
	fast := 0
	for i := 0; i < n; i++ {
		var b strings.Builder
		if rng.IntN(5) == 0 {
			b.WriteString("---\n")
		}
		gen(&b, 0, 0, false)
		doc := []byte(b.String())
		if rng.IntN(3) == 0 {
			at := rng.IntN(len(doc))
			doc = append(doc[:at:at], append([]byte(" "), doc[at:]...)...)
		}
		if _, ok := Convert(doc); ok {
			fast++
		}
		t.Run(fmt.Sprintf("doc-%d", i), func(t *testing.T) { requireSame(t, doc) })
	}
	t.Logf("%d of %d documents converted by the streaming path", fast, n)
}

// TestAppendString: strings are escaped as json.Marshal escapes them, for
// every character up to U+FFFF and a few beyond, alone and among others,
// and for invalid UTF-8.
func TestAppendString(t *testing.T) {
	check := func(v string) {
		t.Helper()
		c := &converter{}
		c.appendString([]byte(v))
		want, _ := json.Marshal(v)
		if string(c.out) != string(want) {
			t.Fatalf("%q: got %s, want %s", v, c.out, want)
		}
	}
	for r := rune(0); r <= 0xffff; r++ {
		check(string(r))
		check("a" + string(r) + "b<\n")
	}
	for _, v := range []string{"", "\xff", "a\xc3", "\xed\xa0\x80", "😀", "\U0010ffff", "plain text", `"quoted" \ back`} {
		check(v)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a<b>&\"\\\n\u2028\xff")
	f.Fuzz(func(t *testing.T, v string) {
		c := &converter{}
		c.appendString([]byte(v))
		want, _ := json.Marshal(v)
		if string(c.out) != string(want) {
			t.Fatalf("%q: got %s, want %s", v, c.out, want)
		}
	})
}
