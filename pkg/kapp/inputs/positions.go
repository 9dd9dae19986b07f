package inputs

import (
	"bytes"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	yaml "go.yaml.in/yaml/v3"
)

// This file holds where findings are: the file and line of a field in the
// inputs (Locator, Position), and where each document was read from. Loading
// keeps for each CRD only where its document is (the file, its index among
// the file's documents); positions are resolved lazily, for the CRDs that
// have findings, by reading that document again and parsing it into YAML
// nodes, which carry line numbers. Decoding the inputs, which must be
// fast, never builds nodes.

// inputFile is a file (or standard input, or a URL, or a file at a git
// revision) that documents were read from.
type inputFile struct {
	// path names it in findings: relative to the current directory when
	// it is below it (slash-separated), else as given; a URL; "" for
	// standard input.
	path string
	rev  string // the git revision it was read at; "" for the file on disk
	// read returns its bytes again: a local file is read anew (its bytes
	// are not kept for the whole run), the others return what was read.
	read func() ([]byte, error)
}

// docSource is one document of an input file: the doc-th (0-based) of the
// documents kapp's YAML splitting yields.
type docSource struct {
	file *inputFile
	doc  int
}

// pathSource is an input source that knows its path: fileSources returns
// these for local files and URLs, gitRepo.sources for files at a revision.
type pathSource struct {
	ctlres.FileSource
	path string // as given; for git, relative to the current directory
	rev  string
	// staged: the content read is the file as staged in git's index
	// (--git-staged), which may differ from the file on disk.
	staged bool
}

// newInputFile describes the source that data was read from.
func newInputFile(src ctlres.FileSource, data []byte) *inputFile {
	kept := func() ([]byte, error) { return data, nil }
	ps, ok := src.(pathSource)
	switch {
	case !ok: // standard input
		return &inputFile{read: kept}
	case ps.rev != "" || ps.staged || strings.Contains(ps.path, "://"):
		return &inputFile{path: displayPath(ps.path), rev: ps.rev, read: kept}
	default:
		path := ps.path
		return &inputFile{path: displayPath(path), read: func() ([]byte, error) { return os.ReadFile(path) }}
	}
}

// displayPath is a path as findings name it: relative to the current
// directory when it is below it, slash-separated; URLs unchanged.
func displayPath(p string) string {
	if strings.Contains(p, "://") {
		return p
	}
	if filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				p = rel
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(p))
}

// docStartLines returns the first line (1-based) in data of each document
// that kapp's YAML splitting (k8s.io/apimachinery's YAMLReader) yields. It
// mirrors that reader: a separator line (one starting with "---") ends
// the document being read and belongs to none; at the start of a
// document it belongs to it (so "---" first in a file is line 1 of the
// first document). Runs without any line yield no document.
func docStartLines(data []byte) []int {
	var starts []int
	inDoc := false
	for line := 1; len(data) > 0; line++ {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		switch {
		case inDoc && bytes.HasPrefix(l, []byte("---")):
			inDoc = false
		case !inDoc:
			starts = append(starts, line)
			inDoc = true
		}
	}
	return starts
}

// Position is where something is in the inputs: a file (as findings name
// it: relative to the current directory when below it, slash-separated; a
// URL; "" for standard input), a line (1-based; 0 when unknown) and the git
// revision the file was read at ("" for the file on disk).
type Position struct {
	File string
	Line int
	Rev  string
}

// Target is what a finding is about, as the engine names it: a CRD, a
// version ("" for the CRD itself; with PairVersion, a pair of served
// versions), a field (a schema path "^.spec.a[*]", or CRDField, a field
// path of the CRD "spec.versions[0].name"; neither for the version, or the
// CRD, itself) and the check (which selects the keyword's line, e.g.
// "maximum: 5").
type Target struct {
	CRD, Version, PairVersion string
	Field                     schemapath.Path
	CRDField                  string
	Check                     string
}

// Locator finds the file and line of findings in the documents of the new
// and old CRDs. Each file is read and split once, each document parsed
// once, and only when a finding needs it.
type Locator struct {
	newDocs, oldDocs map[string]docSource // by CRD name
	files            map[*inputFile]*splitFile
	nodes            map[docSource]*yaml.Node // the document's root node; nil: unparsable
}

type splitFile struct {
	docs   [][]byte
	starts []int // first line of each doc; nil when it could not be told
}

// NewLocator locates findings in the documents that newCRDs and oldCRDs
// (from Load, LoadPair or LoadGitRef) were read from.
func NewLocator(newCRDs, oldCRDs []CRD) *Locator {
	l := &Locator{newDocs: map[string]docSource{}, oldDocs: map[string]docSource{},
		files: map[*inputFile]*splitFile{}, nodes: map[docSource]*yaml.Node{}}
	for _, c := range newCRDs {
		l.newDocs[c.CRD.Name] = c.src
	}
	for _, c := range oldCRDs {
		l.oldDocs[c.CRD.Name] = c.src
	}
	return l
}

// Locate returns where a finding's target is in the new inputs and, when
// the new CRD lacks it (a removed field, version, or the whole CRD), where
// it was in the old inputs (zero Positions when unknown). Without a
// position of the field itself, the new one is the closest part of the new
// CRD there is.
func (l *Locator) Locate(t Target) (newPos, oldPos Position) {
	// A pair of served versions (v1beta1 -> v1) is about the later one,
	// compared with the earlier one: both are in the new CRD.
	newVersions := []string{t.Version}
	if t.PairVersion != "" {
		newVersions = []string{t.PairVersion, t.Version}
	}
	exact := false
	if src, ok := l.newDocs[t.CRD]; ok {
		best := docPosition{}
		for _, v := range newVersions {
			if p := l.find(src, t.CRD, v, t, t.Check); p.better(best) {
				best = p
			}
		}
		newPos, exact = l.position(src, best), best.exact
	}
	if exact || len(newVersions) > 1 {
		return newPos, Position{}
	}
	if src, ok := l.oldDocs[t.CRD]; ok {
		if p := l.find(src, t.CRD, t.Version, t, t.Check); p.exact {
			oldPos = l.position(src, p)
		}
	}
	return newPos, oldPos
}

func (l *Locator) position(src docSource, p docPosition) Position {
	loc := Position{File: src.file.path, Rev: src.file.rev}
	sf := l.split(src.file)
	if p.line > 0 && src.doc < len(sf.starts) {
		loc.Line = sf.starts[src.doc] + p.line - 1
	}
	return loc
}

func (l *Locator) split(f *inputFile) *splitFile {
	if sf, ok := l.files[f]; ok {
		return sf
	}
	sf := &splitFile{}
	if data, err := f.read(); err == nil {
		if docs, err := ctlres.NewYAMLFile(ctlres.NewBytesSource(data)).Docs(); err == nil {
			sf.docs = docs
			if starts := docStartLines(data); len(starts) == len(docs) {
				sf.starts = starts
			}
		}
	}
	l.files[f] = sf
	return sf
}

// find returns the position of a finding in the CRD named crdName of a
// document (a zero position when the document cannot be read again).
func (l *Locator) find(src docSource, crdName, version string, t Target, check string) docPosition {
	root, ok := l.nodes[src]
	if !ok {
		if sf := l.split(src.file); src.doc < len(sf.docs) {
			var doc yaml.Node
			if yaml.Unmarshal(sf.docs[src.doc], &doc) == nil && len(doc.Content) > 0 {
				root = doc.Content[0]
			}
		}
		l.nodes[src] = root
	}
	crd := crdNode(root, crdName)
	if crd == nil {
		return docPosition{}
	}
	return fieldPosition(crd, version, t.Field, t.CRDField, check)
}

// docPosition is a line in a document (1-based; 0: none) and how much of
// the path to the field was found: exact when all of it.
type docPosition struct {
	line  int
	rest  int // length of the path not found
	exact bool
}

func (p docPosition) better(q docPosition) bool {
	switch {
	case q.line == 0:
		return p.line > 0
	case p.exact != q.exact:
		return p.exact
	default:
		return p.line > 0 && p.rest < q.rest
	}
}

// crdNode is the CustomResourceDefinition named name in a document: the
// document itself, or an item of a List in it.
func crdNode(n *yaml.Node, name string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	_, kind := mapValue(n, "kind")
	_, meta := mapValue(n, "metadata")
	_, metaName := mapValue(meta, "name")
	if kind != nil && kind.Value == "CustomResourceDefinition" && metaName != nil && metaName.Value == name {
		return n
	}
	if _, items := mapValue(n, "items"); items != nil && items.Kind == yaml.SequenceNode {
		for _, item := range items.Content {
			if c := crdNode(item, name); c != nil {
				return c
			}
		}
	}
	return nil
}

// crdLevelFields are the fields that CRD-level findings of a check are
// about, as field paths of the CRD.
var crdLevelFields = map[string]string{
	"scope": "spec.scope",
}

// fieldPosition finds a finding in a CRD node. version selects the entry
// of spec.versions ("" for none); field is a schema path of that version
// ("^.spec.a[*].b{*}.anyOf[1]", under schema.openAPIV3Schema) and crdField
// a field path of the CRD as the apiserver names it
// ("spec.versions[0].name"), relative to the version's entry when version
// is set; neither for the version (or the CRD) itself.
func fieldPosition(crd *yaml.Node, version string, field schemapath.Path, crdField, check string) docPosition {
	if version == "" {
		if field == "" && crdField == "" {
			crdField = crdLevelFields[check]
		}
		if crdField == "" {
			return docPosition{line: crd.Line, exact: field == ""}
		}
		line, rest := walkFieldPath(crd, crd.Line, crdField)
		return docPosition{line: line, rest: rest, exact: rest == 0}
	}

	_, spec := mapValue(crd, "spec")
	versionsKey, versions := mapValue(spec, "versions")
	var entry *yaml.Node
	if versions != nil && versions.Kind == yaml.SequenceNode {
		for _, item := range versions.Content {
			if _, name := mapValue(item, "name"); name != nil && name.Value == version {
				entry = deref(item)
				break
			}
		}
	}
	if entry == nil {
		pathLen := len(version) + len(field) + len(crdField) + 1
		if versionsKey != nil {
			return docPosition{line: versionsKey.Line, rest: pathLen}
		}
		return docPosition{line: crd.Line, rest: pathLen + 1}
	}
	if crdField != "" {
		line, rest := walkFieldPath(entry, entry.Line, crdField)
		return docPosition{line: line, rest: rest, exact: rest == 0}
	}
	if field == "" {
		return docPosition{line: entry.Line, exact: true}
	}
	steps, err := field.Steps()
	if err != nil {
		return docPosition{line: entry.Line, rest: len(field)}
	}
	_, schema := mapValue(entry, "schema")
	key, root := mapValue(schema, "openAPIV3Schema")
	if root == nil {
		return docPosition{line: entry.Line, rest: len(steps) + 1}
	}
	line, schema, rest := walkSchema(root, key.Line, steps)
	if rest == 0 {
		if l, ok := keywordLine(schema, check); ok {
			line = l
		}
	}
	return docPosition{line: line, rest: rest, exact: rest == 0}
}

// walkSchema follows the steps of a schema path from schema node s (whose
// line is line): a property, the items of an array, the values of a map
// (additionalProperties), a branch of allOf, anyOf or oneOf, the schema
// inside not. It returns the line of the deepest schema found, that
// schema, and how many steps were left unfound.
func walkSchema(s *yaml.Node, line int, steps []schemapath.Step) (int, *yaml.Node, int) {
	for i, step := range steps {
		s = deref(s)
		if s == nil || s.Kind != yaml.MappingNode {
			return line, s, len(steps) - i
		}
		var k, v *yaml.Node
		switch step.Kind {
		case schemapath.Items:
			k, v = mapValue(s, "items")
		case schemapath.Values:
			k, v = mapValue(s, "additionalProperties")
		case schemapath.NotStep:
			k, v = mapValue(s, "not")
		case schemapath.Property:
			if _, props := mapValue(s, "properties"); props != nil {
				k, v = mapValue(deref(props), step.Name)
			}
		case schemapath.Branch:
			if _, branches := mapValue(s, step.Combinator); branches != nil {
				if branches = deref(branches); branches.Kind == yaml.SequenceNode && step.Index < len(branches.Content) {
					v = branches.Content[step.Index]
					k = v
				}
			}
		}
		if v == nil {
			return line, s, len(steps) - i
		}
		line, s = k.Line, v
	}
	return line, s, 0
}

// keywordOf is the schema keyword a property check is about, when it is
// not the check ID itself: a finding points at the keyword's line when
// the new schema has it ("maximum: 5"), else at the property.
var keywordOf = map[string]string{
	config.CheckPreserveUnknownFields: "x-kubernetes-preserve-unknown-fields",
	config.CheckIntOrString:           "x-kubernetes-int-or-string",
	config.CheckListType:              "x-kubernetes-list-type",
	config.CheckMapType:               "x-kubernetes-map-type",
	config.CheckCELValidation:         "x-kubernetes-validations",
}

func keywordLine(schema *yaml.Node, check string) (int, bool) {
	keyword, ok := keywordOf[check]
	if !ok {
		if !slices.Contains(config.PropertyCheckIDs, check) {
			return 0, false
		}
		keyword = check
	}
	if k, _ := mapValue(schema, keyword); k != nil {
		return k.Line, true
	}
	return 0, false
}

// walkFieldPath follows a field path as the apiserver writes it
// ("spec.versions[0].schema.openAPIV3Schema.properties[spec].type",
// "spec.versions[*].subresources"): ".key" and "[key]" select a map key,
// "[i]" a list item, "[*]" any list item (the first that leads furthest).
// It returns the line of the deepest node found and the length of the path
// left unfound.
func walkFieldPath(n *yaml.Node, line int, path string) (int, int) {
	n = deref(n)
	bestLine, bestRest := line, len(path)
	rest := strings.TrimPrefix(path, ".")
	if rest == "" || n == nil {
		return bestLine, 0
	}
	consider := func(l, r int) {
		if r < bestRest {
			bestLine, bestRest = l, r
		}
	}
	var sel string
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return bestLine, bestRest
		}
		sel, rest = rest[1:end], rest[end+1:]
		if n.Kind == yaml.SequenceNode {
			for i, item := range n.Content {
				if sel == "*" || sel == strconv.Itoa(i) {
					consider(walkFieldPath(item, item.Line, rest))
				}
			}
			return bestLine, bestRest
		}
	} else {
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		sel, rest = rest[:end], rest[end:]
	}
	if k, v := mapValue(n, sel); v != nil {
		consider(walkFieldPath(v, k.Line, rest))
	}
	return bestLine, bestRest
}

// mapValue returns the key and value nodes of key in mapping node n (nil,
// nil when n is not a mapping or lacks the key).
func mapValue(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], deref(n.Content[i+1])
		}
	}
	return nil, nil
}

// deref resolves an alias (*name) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}
