// Package yamljson converts YAML documents to JSON with the result of
// sigs.k8s.io/yaml.YAMLToJSON, byte for byte, at a fraction of its cost.
//
// YAMLToJSON decodes the whole document into interface{} maps (through
// go.yaml.in/yaml/v2, which first builds its own node tree), converts them
// and marshals them with encoding/json: about 20 times the document's size
// in short-lived memory, most of the time of reading a large CRD. ToJSON
// instead streams the document into JSON bytes in one pass, for the YAML
// that CRD files are written in: block mappings and sequences, plain,
// quoted and literal block scalars, flow collections, comments. Anything
// else (anchors, aliases, tags, folded block scalars, complex keys,
// directives, tabs, non-string keys, ...), and any document it cannot read,
// goes to YAMLToJSON itself, which then also produces the error. The output
// is YAMLToJSON's: keys sorted (the last of duplicate keys wins), strings
// escaped as encoding/json escapes them, plain scalars resolved as YAML 1.1
// (yaml.v2) resolves them.
package yamljson

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// ToJSON converts one YAML document to JSON: the same bytes, or the same
// error, as sigs.k8s.io/yaml.YAMLToJSON(doc).
func ToJSON(doc []byte) ([]byte, error) {
	if js, ok := Convert(doc); ok {
		return js, nil
	}
	return yaml.YAMLToJSON(doc)
}

// Convert is the streaming conversion alone: ok is false when the
// document holds something it leaves to YAMLToJSON (see the package doc).
// When ok, js equals YAMLToJSON's output.
func Convert(doc []byte) (js []byte, ok bool) {
	if !supportedText(doc) {
		return nil, false
	}
	c := &converter{s: doc, n: len(doc), out: make([]byte, 0, len(doc)/2+16)}
	defer func() {
		// A bail-out unwinds the recursion; any other panic is a bug and
		// leaves the document to YAMLToJSON too.
		if r := recover(); r != nil {
			js, ok = nil, false
		}
	}()
	c.document()
	return c.out, true
}

// supportedText: valid UTF-8 ending with a line break, without tabs,
// carriage returns, byte order marks, control characters or the Unicode
// characters YAML 1.1 reads as line breaks (NEL, LS, PS); YAMLToJSON takes
// the rest.
func supportedText(doc []byte) bool {
	if len(doc) == 0 || doc[len(doc)-1] != '\n' {
		return false
	}
	for i := 0; i < len(doc); {
		b := doc[i]
		if b < utf8.RuneSelf {
			if (b < 0x20 && b != '\n') || b == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return false
		case r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029, r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
		i += size
	}
	return true
}

// bail abandons the streaming conversion (recovered in Convert).
type bail struct{}

func fail() { panic(bail{}) }

// entry is one key of an open mapping: the key and where its `"key":value`
// starts and ends in the output.
type entry struct {
	key        []byte // in the document (plain) or a copy (quoted)
	start, end int
}

type converter struct {
	s   []byte
	n   int
	out []byte
	// frames are the entries of the open mappings, innermost last.
	frames [][]entry
	// scratch builds folded and quoted scalars.
	scratch []byte
	// resolved caches the JSON of plain scalars that may not be strings.
	resolved map[string][]byte
}

// document converts the whole document: one node, or null when there is
// none.
func (c *converter) document() {
	start := c.skipBlankLines(0)
	if start+3 <= c.n && string(c.s[start:start+3]) == "---" && c.docMarker(start) {
		// The explicit start of the document (kapp's splitter keeps the
		// one opening a file).
		start = c.endOfLine(start + 3)
	}
	p := c.nextContent(start)
	if p == c.n {
		c.out = append(c.out, "null"...)
		return
	}
	next := c.blockNode(p, c.col(p), -1)
	if c.nextContent(next) != c.n {
		fail()
	}
}

// ---------------------------------------------------------------- lines

func (c *converter) col(i int) int {
	j := i
	for j > 0 && c.s[j-1] != '\n' {
		j--
	}
	return i - j
}

func (c *converter) skipSpaces(i int) int {
	for i < c.n && c.s[i] == ' ' {
		i++
	}
	return i
}

// lineEnd returns the index of the line break at or after i.
func (c *converter) lineEnd(i int) int {
	if j := bytes.IndexByte(c.s[i:], '\n'); j >= 0 {
		return i + j
	}
	fail() // documents end with a line break
	return 0
}

// skipBlankLines returns the start of the first line from line start i
// that is neither blank nor a comment.
func (c *converter) skipBlankLines(i int) int {
	for i < c.n {
		j := c.skipSpaces(i)
		switch c.s[j] {
		case '\n':
			i = j + 1
		case '#':
			i = c.lineEnd(j) + 1
		default:
			return i
		}
	}
	return c.n
}

// nextContent returns the first character of the next line, from line
// start i, that is neither blank nor a comment; c.n at the end.
func (c *converter) nextContent(i int) int {
	for i < c.n {
		j := c.skipSpaces(i)
		switch {
		case c.s[j] == '\n':
			i = j + 1
		case c.s[j] == '#':
			i = c.lineEnd(j) + 1
		default:
			if j == i && c.docMarker(j) {
				fail()
			}
			return j
		}
	}
	return c.n
}

// docMarker: "---" or "..." at a line start, followed by a blank.
func (c *converter) docMarker(i int) bool {
	if i+3 > c.n {
		return false
	}
	m := c.s[i : i+3]
	if !bytes.Equal(m, []byte("---")) && !bytes.Equal(m, []byte("...")) {
		return false
	}
	return i+3 == c.n || c.s[i+3] == ' ' || c.s[i+3] == '\n'
}

// endOfLine expects nothing but spaces and a comment after a value ending
// at i, and returns the start of the next line.
func (c *converter) endOfLine(i int) int {
	j := c.skipSpaces(i)
	switch {
	case c.s[j] == '\n':
		return j + 1
	case c.s[j] == '#' && j > i:
		return c.lineEnd(j) + 1
	}
	fail()
	return 0
}

func (c *converter) isSeqEntry(i int) bool {
	return c.s[i] == '-' && i+1 < c.n && (c.s[i+1] == ' ' || c.s[i+1] == '\n')
}

// ---------------------------------------------------------------- block nodes

// blockNode converts the node whose first character is at p (column col),
// inside a block collection indented by bi (-1 at the top), and returns the
// start of the line after it.
func (c *converter) blockNode(p, col, bi int) int {
	if c.isSeqEntry(p) {
		return c.blockSequence(p, col, false)
	}
	if _, _, ok := c.mapKey(p, false); ok {
		return c.blockMapping(p, col)
	}
	return c.inlineValue(p, bi)
}

// blockMapping converts the block mapping whose first key is at p, in
// column col.
func (c *converter) blockMapping(p, col int) int {
	c.openMapping()
	next := p
	for {
		key, q, ok := c.mapKey(p, true)
		if !ok {
			fail()
		}
		start := c.beginEntry()
		c.appendKey(key)
		next = c.mapValue(q, col)
		c.endEntry(key, start)

		var more bool
		if p, more = c.nextEntry(next, col); !more {
			break
		}
		if c.isSeqEntry(p) {
			fail()
		}
	}
	c.closeMapping()
	return next
}

// nextEntry finds, from next (the line after an entry of a block
// collection in column col), where the collection's next entry starts: the
// next content in column col, and true; false at the end of the input or
// at content less indented, which ends the collection. Content indented
// deeper is an error.
func (c *converter) nextEntry(next, col int) (int, bool) {
	p := c.nextContent(next)
	if p == c.n || c.col(p) < col {
		return p, false
	}
	if c.col(p) > col {
		fail()
	}
	return p, true
}

// mapValue converts the value of a key of a block mapping in column col,
// from q (just after the colon).
func (c *converter) mapValue(q, col int) int {
	i := c.skipSpaces(q)
	if c.s[i] != '\n' && c.s[i] != '#' {
		return c.inlineValue(i, col)
	}
	after := c.lineEnd(i) + 1
	next := c.nextContent(after)
	if next < c.n {
		nc := c.col(next)
		if nc > col {
			return c.blockNode(next, nc, col)
		}
		if nc == col && c.isSeqEntry(next) {
			return c.blockSequence(next, col, true)
		}
	}
	c.out = append(c.out, "null"...)
	return after
}

// blockSequence converts the block sequence whose first entry is at p, in
// column col. An indentless sequence (the value of a key in the same
// column) ends at the next key.
func (c *converter) blockSequence(p, col int, indentless bool) int {
	c.out = append(c.out, '[')
	next := p
	for first := true; ; first = false {
		if !first {
			c.out = append(c.out, ',')
		}
		v := c.skipSpaces(p + 1)
		switch {
		case c.s[v] == '\n' || c.s[v] == '#':
			after := c.lineEnd(v) + 1
			item := c.nextContent(after)
			if item < c.n && c.col(item) > col {
				next = c.blockNode(item, c.col(item), col)
			} else {
				c.out = append(c.out, "null"...)
				next = after
			}
		case c.isSeqEntry(v):
			next = c.blockSequence(v, c.col(v), false)
		default:
			if _, _, ok := c.mapKey(v, false); ok {
				next = c.blockMapping(v, c.col(v))
			} else {
				next = c.inlineValue(v, col)
			}
		}

		var more bool
		if p, more = c.nextEntry(next, col); !more {
			break
		}
		if !c.isSeqEntry(p) {
			if indentless {
				break
			}
			fail()
		}
	}
	c.out = append(c.out, ']')
	return next
}

// mapKey reads the key of a block mapping entry at p: a quoted key or a
// plain one that is certainly a string, followed by a colon and a blank.
// It returns the key and the position after the colon; ok false when p
// does not start a mapping entry. With must, a key this converter does not
// handle (one YAML would not read as a string) bails out.
func (c *converter) mapKey(p int, must bool) (key []byte, q int, ok bool) {
	s := c.s
	var end int // after the key's text
	switch s[p] {
	case '"', '\'':
		// A quoted key on one line.
		e := c.lineEnd(p)
		var mark int
		key, mark = c.quotedOnLine(p, e)
		if mark < 0 {
			if must {
				fail()
			}
			return nil, 0, false
		}
		end = mark
		j := c.skipSpaces(end)
		if s[j] != ':' || (s[j+1] != ' ' && s[j+1] != '\n') {
			if must {
				fail()
			}
			return nil, 0, false
		}
		q = j + 1
	case '[', '{':
		return nil, 0, false // a flow collection (a complex key is left to YAMLToJSON)
	default:
		j := p
		for ; s[j] != '\n'; j++ {
			if s[j] == ':' && (s[j+1] == ' ' || s[j+1] == '\n') {
				break
			}
			if s[j] == '#' && j > p && s[j-1] == ' ' {
				return nil, 0, false // a comment: a scalar, not a key
			}
		}
		if s[j] != ':' {
			return nil, 0, false
		}
		end = j
		for end > p && s[end-1] == ' ' {
			end--
		}
		key, q = s[p:end], j+1
		if !plainKey(key) {
			fail() // a key YAML may not read as a string, an indicator, or too long
		}
	}
	if end-p > 1000 {
		fail() // YAML's implicit keys are at most 1024 characters
	}
	return key, q, true
}

// plainKey: a plain scalar key that YAML 1.1 reads as a string (not a
// number, boolean, null nor the merge key) and that starts no other token.
func plainKey(key []byte) bool {
	return len(key) > 0 && !indicator(key[0]) && plainString(key) && !bytes.Equal(key, []byte("<<"))
}

// indicator: b cannot start a plain scalar in block context (or only
// followed by a non-blank: '-', '?', ':').
func indicator(b byte) bool {
	switch b {
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ', '\n':
		return true
	}
	return false
}

// plainString: YAML 1.1 reads the plain scalar v as a string, as
// go.yaml.in/yaml/v2's resolve decides from its first character: letters
// that may start a boolean or null are strings unless v is one of those
// words; signs, digits and dots may start numbers (resolved elsewhere).
func plainString(v []byte) bool {
	switch b := v[0]; {
	case b == '+' || b == '-' || b == '.' || (b >= '0' && b <= '9'):
		return false
	case strings.IndexByte("yYnNtTfFoO~", b) >= 0:
		return !boolOrNull[string(v)]
	}
	return true
}

// boolOrNull are the plain scalars of go.yaml.in/yaml/v2's resolve table
// that start with a letter or '~'.
var boolOrNull = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"true": true, "True": true, "TRUE": true,
	"on": true, "On": true, "ON": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"false": true, "False": true, "FALSE": true,
	"off": true, "Off": true, "OFF": true,
	"~": true, "null": true, "Null": true, "NULL": true,
}

// inlineValue converts a value starting at i in the middle of a line,
// inside a block collection indented by bi, and returns the start of the
// line after it.
func (c *converter) inlineValue(i, bi int) int {
	switch c.s[i] {
	case '|':
		return c.literal(i, bi)
	case '[', '{':
		return c.endOfLine(c.flowNode(i, bi))
	case '"', '\'':
		end := c.quoted(i, bi)
		c.appendString(c.scratch)
		return c.endOfLine(end)
	case '>', '&', '*', '!', '%', '@', '`', ',', ']', '}', '#':
		fail()
	case '-', '?', ':':
		if c.s[i+1] == ' ' || c.s[i+1] == '\n' {
			fail()
		}
	}
	return c.plain(i, bi)
}

// plain converts a plain scalar in block context starting at i, with its
// continuation lines (indented deeper than bi), and returns the start of
// the line after it.
func (c *converter) plain(i, bi int) int {
	s := c.s
	seg, comment, e := c.plainLine(i)
	c.scratch = append(c.scratch[:0], seg...)
	multi := false
	next := e + 1
	for !comment {
		// Continuation lines: blank lines fold into line breaks, the
		// others into one space.
		breaks := 0
		k := next
		var m int
		for {
			m = c.skipSpaces(k)
			if m == c.n || s[m] != '\n' {
				break
			}
			breaks++
			k = m + 1
		}
		if m == c.n || m-k <= bi || s[m] == '#' {
			break
		}
		if m == k && c.docMarker(m) {
			fail()
		}
		seg, comment, e = c.plainLine(m)
		if breaks == 0 {
			c.scratch = append(c.scratch, ' ')
		}
		for ; breaks > 0; breaks-- {
			c.scratch = append(c.scratch, '\n')
		}
		c.scratch = append(c.scratch, seg...)
		multi = true
		next = e + 1
	}
	c.appendPlain(c.scratch, multi)
	return next
}

// plainLine reads the part of a plain scalar on one line, from i: up to a
// comment or the line break, trailing spaces dropped. A colon followed by a
// blank (a mapping where none may be) bails out.
func (c *converter) plainLine(i int) (seg []byte, comment bool, lineEnd int) {
	s := c.s
	j := i
	for ; s[j] != '\n'; j++ {
		if s[j] == ':' && (s[j+1] == ' ' || s[j+1] == '\n') {
			fail()
		}
		if s[j] == '#' && j > i && s[j-1] == ' ' {
			comment = true
			break
		}
	}
	end := j
	for end > i && s[end-1] == ' ' {
		end--
	}
	if comment {
		j = c.lineEnd(j)
	}
	return s[i:end], comment, j
}

// appendPlain appends the JSON of a plain scalar's value. Only scalars
// whose first character may make them something else than a string are
// resolved, by YAMLToJSON itself (cached).
func (c *converter) appendPlain(v []byte, multi bool) {
	if plainString(v) || bytes.IndexByte(v, ' ') >= 0 {
		// A space rules out numbers, booleans and null; a timestamp with
		// a space decodes to its text too.
		c.appendString(v)
		return
	}
	if multi || bytes.HasPrefix(v, []byte("---")) || bytes.HasPrefix(v, []byte("...")) {
		fail() // would not read the same standing alone
	}
	if c.resolved == nil {
		c.resolved = map[string][]byte{}
	}
	js, ok := c.resolved[string(v)]
	if !ok {
		var err error
		js, err = yaml.YAMLToJSON(v)
		if err != nil || len(js) == 0 || js[0] == '{' || js[0] == '[' {
			fail()
		}
		c.resolved[string(v)] = js
	}
	c.out = append(c.out, js...)
}

// ---------------------------------------------------------------- quoted scalars

// quotedOnLine reads a quoted scalar that ends on the line ending at e,
// for a key; mark is after the closing quote, -1 when it does not close on
// the line.
func (c *converter) quotedOnLine(p, e int) ([]byte, int) {
	if q := bytes.IndexByte(c.s[p+1:e], c.s[p]); q < 0 {
		return nil, -1
	}
	end := c.quoted(p, c.col(p)) // a line break inside bails (indentation)
	if end > e {
		fail()
	}
	key := append([]byte(nil), c.scratch...)
	return key, end
}

// quoted reads the single- or double-quoted scalar starting at i into
// c.scratch and returns the position after its closing quote. Line breaks
// fold as YAML folds them; continuation lines must be indented deeper than
// bi.
func (c *converter) quoted(i, bi int) int {
	s := c.s
	double := s[i] == '"'
	c.scratch = c.scratch[:0]
	j := i + 1
	spaces := 0 // pending blanks: kept before content, dropped before a break
	for {
		if j >= c.n {
			fail()
		}
		b := s[j]
		switch {
		case b == ' ':
			spaces++
			j++
		case b == '\n':
			// Fold: one break is a space, n breaks are n-1 newlines.
			spaces = 0
			j = c.foldBreaks(j, bi, false)
		case !double && b == '\'':
			c.flushSpaces(&spaces)
			if j+1 < c.n && s[j+1] == '\'' {
				c.scratch = append(c.scratch, '\'')
				j += 2
				continue
			}
			return j + 1
		case double && b == '"':
			c.flushSpaces(&spaces)
			return j + 1
		case double && b == '\\':
			c.flushSpaces(&spaces)
			if s[j+1] == '\n' {
				// An escaped line break: joined without a space.
				j = c.foldBreaks(j+1, bi, true)
				continue
			}
			j = c.escape(j + 1)
		default:
			c.flushSpaces(&spaces)
			c.scratch = append(c.scratch, b)
			j++
		}
	}
}

func (c *converter) flushSpaces(n *int) {
	for ; *n > 0; *n-- {
		c.scratch = append(c.scratch, ' ')
	}
}

// foldBreaks folds the line break at j and the blank lines after it into
// c.scratch and returns the position of the next content. escaped: the
// break was escaped (nothing for it, a newline per blank line).
func (c *converter) foldBreaks(j, bi int, escaped bool) int {
	s := c.s
	breaks := 0
	k := j + 1
	for {
		m := c.skipSpaces(k)
		if m >= c.n {
			fail()
		}
		if s[m] != '\n' {
			if m-k <= bi || (m == k && c.docMarker(m)) {
				fail() // not indented as a continuation (or a document marker)
			}
			switch {
			case escaped:
				for ; breaks > 0; breaks-- {
					c.scratch = append(c.scratch, '\n')
				}
			case breaks == 0:
				c.scratch = append(c.scratch, ' ')
			default:
				for ; breaks > 0; breaks-- {
					c.scratch = append(c.scratch, '\n')
				}
			}
			return m
		}
		breaks++
		k = m + 1
	}
}

// escape decodes the escape sequence of a double-quoted scalar whose
// character after the backslash is at j, and returns the position after
// it.
func (c *converter) escape(j int) int {
	s := c.s
	var r rune
	width := 0
	switch s[j] {
	case '0':
		r = 0
	case 'a':
		r = '\a'
	case 'b':
		r = '\b'
	case 't':
		r = '\t'
	case 'n':
		r = '\n'
	case 'v':
		r = '\v'
	case 'f':
		r = '\f'
	case 'r':
		r = '\r'
	case 'e':
		r = 0x1b
	case ' ':
		r = ' '
	case '"':
		r = '"'
	case '\'':
		r = '\''
	case '\\':
		r = '\\'
	case 'N':
		r = 0x85
	case '_':
		r = 0xa0
	case 'L':
		r = 0x2028
	case 'P':
		r = 0x2029
	case 'x':
		width = 2
	case 'u':
		width = 4
	case 'U':
		width = 8
	default:
		fail()
	}
	if width > 0 {
		if j+1+width > c.n {
			fail()
		}
		var v uint64
		for _, h := range s[j+1 : j+1+width] {
			var d byte
			switch {
			case h >= '0' && h <= '9':
				d = h - '0'
			case h >= 'a' && h <= 'f':
				d = h - 'a' + 10
			case h >= 'A' && h <= 'F':
				d = h - 'A' + 10
			default:
				fail()
			}
			v = v<<4 | uint64(d)
		}
		if (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff {
			fail()
		}
		r = rune(v)
	}
	c.scratch = utf8.AppendRune(c.scratch, r)
	return j + 1 + width
}

// ---------------------------------------------------------------- block scalars

// literal converts the literal block scalar ("|") whose indicator is at
// i, in a block collection indented by bi, as go.yaml.in/yaml/v2 (libyaml)
// scans it, and returns the start of the line after it.
func (c *converter) literal(i, bi int) int {
	s := c.s
	j := i + 1
	chomp, incr := 0, 0 // chomp: -1 strip, 0 clip, 1 keep
	for k := 0; k < 2; k++ {
		switch b := s[j]; {
		case (b == '+' || b == '-') && chomp == 0:
			chomp = 1
			if b == '-' {
				chomp = -1
			}
			j++
		case b >= '1' && b <= '9' && incr == 0:
			incr = int(b - '0')
			j++
		}
	}
	j = c.endOfLine(j)

	indent := 0
	if incr > 0 {
		indent = incr
		if bi >= 0 {
			indent = bi + incr
		}
	}
	v := c.scratch[:0]
	// Leading blank lines, and the indentation when not given.
	breaks, k, col := c.blockBreaks(j, &indent, bi)
	var leading int // the line break after the last content line (0 or 1)
	for col == indent && k < c.n {
		if leading > 0 {
			v = append(v, '\n')
		}
		for ; breaks > 0; breaks-- {
			v = append(v, '\n')
		}
		e := c.lineEnd(k)
		v = append(v, s[k:e]...)
		leading = 1
		breaks, k, col = c.blockBreaks(e+1, &indent, bi)
	}
	if chomp != -1 && leading > 0 {
		v = append(v, '\n')
	}
	if chomp == 1 {
		for ; breaks > 0; breaks-- {
			v = append(v, '\n')
		}
	}
	c.scratch = v
	c.appendString(v)
	// The next token starts on the line of k.
	return k - col
}

// blockBreaks skips the indentation and blank lines from line start k, as
// libyaml's yaml_parser_scan_block_scalar_breaks: it returns the blank
// lines seen, the position where it stopped (after the indentation of a
// non-blank line, or c.n) and its column. A zero *indent is set from the
// lines seen.
func (c *converter) blockBreaks(k int, indent *int, bi int) (breaks, pos, col int) {
	s := c.s
	maxIndent := 0
	for {
		m := k
		for m < c.n && s[m] == ' ' && (*indent == 0 || m-k < *indent) {
			m++
		}
		if m-k > maxIndent {
			maxIndent = m - k
		}
		if m == c.n || s[m] != '\n' {
			pos, col = m, m-k
			break
		}
		breaks++
		k = m + 1
	}
	if *indent == 0 {
		*indent = maxIndent
		if *indent < bi+1 {
			*indent = bi + 1
		}
		if *indent < 1 {
			*indent = 1
		}
		if pos < c.n && col < *indent && col != maxIndent {
			// Blank lines indented deeper than the first content line:
			// left to yaml.v2.
			fail()
		}
	}
	return breaks, pos, col
}

// ---------------------------------------------------------------- flow collections

// flowNext steps over what follows an entry of a flow collection at j: a
// comma (then the next entry, or the closing byte after a trailing comma) or
// the closing byte. It returns the position of the next entry and false, or
// of the closing byte and true.
func (c *converter) flowNext(j, bi int, closing byte) (int, bool) {
	s := c.s
	if s[j] == ',' {
		j = c.flowSpace(j+1, bi)
		return j, s[j] == closing
	}
	if s[j] != closing {
		fail()
	}
	return j, true
}

// flowNode converts a node in flow context at i (a flow collection, a
// quoted or a plain scalar) and returns the position after it.
func (c *converter) flowNode(i, bi int) int {
	s := c.s
	switch s[i] {
	case '[':
		c.out = append(c.out, '[')
		j := c.flowSpace(i+1, bi)
		if s[j] == ']' {
			c.out = append(c.out, ']')
			return j + 1
		}
		for first := true; ; first = false {
			if !first {
				c.out = append(c.out, ',')
			}
			var done bool
			if j, done = c.flowNext(c.flowSpace(c.flowNode(j, bi), bi), bi, ']'); done {
				break
			}
		}
		c.out = append(c.out, ']')
		return j + 1
	case '{':
		c.openMapping()
		j := c.flowSpace(i+1, bi)
		if s[j] == '}' {
			c.closeMapping()
			return j + 1
		}
		for {
			key, afterKey := c.flowKey(j, bi)
			start := c.beginEntry()
			c.appendKey(key)
			j = c.flowSpace(afterKey, bi)
			if s[j] == ',' || s[j] == '}' {
				c.out = append(c.out, "null"...)
			} else {
				j = c.flowSpace(c.flowNode(j, bi), bi)
			}
			c.endEntry(key, start)
			var done bool
			if j, done = c.flowNext(j, bi, '}'); done {
				break
			}
		}
		c.closeMapping()
		return j + 1
	case '"', '\'':
		end := c.quoted(i, bi)
		c.appendString(c.scratch)
		return end
	}
	// A plain scalar on one line (go.yaml.in/yaml/v2's rules in flow
	// context: it ends at a flow indicator or '?', or at a colon followed
	// by a blank).
	switch s[i] {
	case '-':
		if s[i+1] == ' ' || s[i+1] == '\n' {
			fail()
		}
	case '?', ':', '>', '|', '&', '*', '!', '%', '@', '`', ',', '[', ']', '{', '}', '#', ' ', '\n':
		fail()
	}
	j := c.flowPlainEnd(i)
	end := j
	for end > i && s[end-1] == ' ' {
		end--
	}
	if s[j] == '\n' || s[j] == '#' || end == i {
		fail() // may continue on the next line
	}
	c.appendPlain(s[i:end], false)
	return j
}

// flowPlainEnd returns where a plain scalar in flow context starting at i
// ends: at a flow indicator, '?', a colon followed by a blank, a comment or
// the line break.
func (c *converter) flowPlainEnd(i int) int {
	s := c.s
	j := i
	for ; s[j] != '\n'; j++ {
		switch s[j] {
		case ',', '?', '[', ']', '{', '}':
			return j
		case ':':
			if s[j+1] == ' ' || s[j+1] == '\n' {
				return j
			}
		case '#':
			if s[j-1] == ' ' {
				return j
			}
		}
	}
	return j
}

// flowKey reads the key of a flow mapping entry at j and returns it with
// the position after its colon.
func (c *converter) flowKey(j, bi int) ([]byte, int) {
	s := c.s
	var key []byte
	var end int
	if s[j] == '"' || s[j] == '\'' {
		e := c.lineEnd(j)
		key, end = c.quotedOnLine(j, e)
		if end < 0 {
			fail()
		}
		end = c.skipSpaces(end)
		if s[end] != ':' {
			fail()
		}
		return key, end + 1
	}
	if indicator(s[j]) {
		fail()
	}
	k := c.flowPlainEnd(j)
	if s[k] != ':' {
		fail()
	}
	end = k
	for end > j && s[end-1] == ' ' {
		end--
	}
	key = s[j:end]
	if !plainKey(key) || end-j > 1000 {
		fail()
	}
	return key, k + 1
}

// flowSpace skips blanks, line breaks and comments inside a flow
// collection; continuation lines must be indented deeper than bi.
func (c *converter) flowSpace(j, bi int) int {
	s := c.s
	for {
		j = c.skipSpaces(j)
		if j >= c.n {
			fail()
		}
		switch s[j] {
		case '#':
			if s[j-1] != ' ' && s[j-1] != '\n' {
				fail()
			}
			j = c.lineEnd(j)
			fallthrough
		case '\n':
			k := j + 1
			m := c.skipSpaces(k)
			if m >= c.n {
				fail()
			}
			if s[m] != '\n' && s[m] != '#' && (m-k <= bi || (m == k && c.docMarker(m))) {
				fail()
			}
			j = m
		default:
			return j
		}
	}
}

// ---------------------------------------------------------------- output

func (c *converter) openMapping() {
	c.out = append(c.out, '{')
	// Reuse the entries of a closed mapping at the same depth.
	if d := len(c.frames); d < cap(c.frames) {
		c.frames = c.frames[:d+1]
		c.frames[d] = c.frames[d][:0]
		return
	}
	c.frames = append(c.frames, nil)
}

// beginEntry starts an entry of the innermost mapping and returns where.
func (c *converter) beginEntry() int {
	if len(c.frames[len(c.frames)-1]) > 0 {
		c.out = append(c.out, ',')
	}
	return len(c.out)
}

func (c *converter) appendKey(key []byte) {
	c.appendString(key)
	c.out = append(c.out, ':')
}

func (c *converter) endEntry(key []byte, start int) {
	f := &c.frames[len(c.frames)-1]
	*f = append(*f, entry{key: key, start: start, end: len(c.out)})
}

// closeMapping ends the innermost mapping: its entries are sorted by key
// as encoding/json sorts map keys, the last of equal keys kept (yaml.v2
// overwrites a duplicate key).
func (c *converter) closeMapping() {
	f := c.frames[len(c.frames)-1]
	c.frames = c.frames[:len(c.frames)-1]
	if !sortedUnique(f) {
		c.sortEntries(f)
	}
	c.out = append(c.out, '}')
}

func sortedUnique(f []entry) bool {
	for i := 1; i < len(f); i++ {
		if bytes.Compare(f[i-1].key, f[i].key) >= 0 {
			return false
		}
	}
	return true
}

func (c *converter) sortEntries(f []entry) {
	body := f[0].start
	old := append([]byte(nil), c.out[body:]...)
	order := make([]int, len(f))
	for i := range order {
		order[i] = i
	}
	// Stable by key: equal keys stay in input order, the last one wins.
	sortStable(order, func(a, b int) bool { return bytes.Compare(f[a].key, f[b].key) < 0 })
	c.out = c.out[:body]
	first := true
	for i, idx := range order {
		if i+1 < len(order) && bytes.Equal(f[idx].key, f[order[i+1]].key) {
			continue // a later duplicate follows
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.out = append(c.out, old[f[idx].start-body:f[idx].end-body]...)
	}
}

// sortStable is an insertion-merge sort by less (mappings are small).
func sortStable(a []int, less func(a, b int) bool) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && less(a[j], a[j-1]); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// appendString appends v as a JSON string, escaped as encoding/json
// escapes it: quotes, backslashes and the usual control characters in
// their short form, the HTML characters <, > and & and the line
// separators U+2028 and U+2029 as \u escapes, valid UTF-8 as it is.
// Anything else (other control characters, invalid UTF-8) is left to
// encoding/json itself.
func (c *converter) appendString(v []byte) {
	out := append(c.out, '"')
	start := 0
	for i := 0; i < len(v); {
		b := v[i]
		if b >= 0x20 && b < utf8.RuneSelf && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
			i++
			continue
		}
		var esc string
		size := 1
		switch b {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		case '<':
			esc = `\u003c`
		case '>':
			esc = `\u003e`
		case '&':
			esc = `\u0026`
		default:
			if b < utf8.RuneSelf {
				c.marshalString(v)
				return
			}
			var r rune
			r, size = utf8.DecodeRune(v[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				c.marshalString(v)
				return
			case r == 0x2028:
				esc = `\u2028`
			case r == 0x2029:
				esc = `\u2029`
			default:
				i += size
				continue
			}
		}
		out = append(out, v[start:i]...)
		out = append(out, esc...)
		i += size
		start = i
	}
	out = append(out, v[start:]...)
	c.out = append(out, '"')
}

// marshalString appends json.Marshal(v).
func (c *converter) marshalString(v []byte) {
	js, err := json.Marshal(string(v))
	if err != nil {
		fail()
	}
	c.out = append(c.out, js...)
}
