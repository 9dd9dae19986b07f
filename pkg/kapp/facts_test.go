package kapp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// textOnlyAt is where a finding's words may be read: the edge that
// composes every output's text from the finding's facts.
const textOnlyAt = "pkg/kapp/report/"

// sortOnlyAt is the one other file that reads them: SortFindings, as the
// last tie-break of the one output order (findings of one check at one
// field), which decides nothing but the order lines print in.
const sortOnlyAt = "pkg/kapp/crdupgradesafety/finding/findings.go"

// pinnedParsers are the only functions that may read a library's words:
// each reads words that a library gives in no other form, and each has a
// test that builds the words through the library's own constructor and
// checks the parser agrees (so an upgrade that rewords them fails the
// test, not the verdict). Their bodies are not checked and their results
// count as facts. Keyed by package path relative to the module and name
// (Type.Method for a method).
var pinnedParsers = map[string]string{
	// kube-openapi's combinator and range errors name their field only
	// in their words (TestErrorFieldPinnedToKubeOpenAPI).
	"pkg/kapp/crdupgradesafety/objects.ErrorField": "kube-openapi names some errors' fields only in words",
	// The apiserver says that a webhook cannot be called on a dry run
	// only in words (TestDryRunUnsupportedIsTheAPIServersWords).
	"pkg/kapp/evaluation.dryRunUnsupportedBy": "the apiserver's refusal of a webhook on a dry run",
	// The storage version migrator names the migration it runs only in
	// its condition's message (guard-evidence pins the words to the
	// controller's source).
	"pkg/kapp/internal/storedversions.NamedMigration": "the migrator's running condition",
}

// TestNoDecisionReadsText enforces that findings travel as facts and that
// nothing is decided by reading words: outside pkg/kapp/report, no
// production code reads a finding's text (its ChangeText) but where it is
// made; and no production code (report included) decides by the text of
// an error (Error(), ErrorBody(), fmt of an error) or of a message field
// (.Message, .Detail, .ChangeText), held in a variable, a field, a
// parameter or a result or not: compared (==, !=, <, switch), used as a
// map key, searched or split (strings.*, bytes.*, regexp, slices.Contains),
// or made into an error to compare with. Errors are matched with
// errors.Is and errors.As, fields of typed errors (field.Error's Type,
// Field, BadValue) and typed causes; where a library speaks only words,
// the words are read in one of pinnedParsers.
//
// The check runs the type checker over the module's packages (their
// imports from the build's export data), so that it sees what a value is
// (an error, a message field) and follows it through assignments, struct
// fields, parameters and results.
func TestNoDecisionReadsText(t *testing.T) {
	pkgs := loadModule(t)
	if len(pkgs) < 15 {
		t.Fatalf("only %d packages loaded", len(pkgs))
	}
	a := newTextAnalysis(pinnedParsers)
	files := 0
	for _, p := range pkgs {
		for _, f := range p.files {
			rel := p.rel + "/" + filepath.Base(p.fset.Position(f.Pos()).Filename)
			a.add(p.rel, p.fset, f, p.info, !strings.HasPrefix(rel, textOnlyAt) && rel != sortOnlyAt)
			files++
		}
	}
	if files < 50 {
		t.Fatalf("only %d files checked", files)
	}
	for _, v := range a.run() {
		t.Errorf("%s", v)
	}
}

// TestNoDecisionReadsTextCanFail: the check finds each form of a decision
// by text it forbids (testdata/textdecisions/caught, one form a file, the
// count of violations in its first line: "// want N"), and none in the
// forms that decide by facts (testdata/textdecisions/benign). The forms
// are Go files named .go.txt, so that no search of the tree for decisions
// by text mistakes these specimens for code.
func TestNoDecisionReadsTextCanFail(t *testing.T) {
	lookup := exportLookup(t, "errors", "fmt", "strings", "bytes", "regexp", "sort", "slices", "strconv",
		"k8s.io/apimachinery/pkg/util/validation/field", "io/fs", "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1")
	check := func(path string) ([]string, int) {
		fset := token.NewFileSet()
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		info := newInfo()
		conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
		if _, err := conf.Check("x", fset, []*ast.File{f}, info); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want := -1
		if first, _, ok := bytes.Cut(src, []byte("\n")); ok {
			fmt.Sscanf(string(first), "// want %d", &want)
		}
		a := newTextAnalysis(map[string]string{"x.pinned": "a pinned parser"})
		a.add("x", fset, f, info, true)
		return a.run(), want
	}
	caught, _ := filepath.Glob("testdata/textdecisions/caught/*.go.txt")
	benign, _ := filepath.Glob("testdata/textdecisions/benign/*.go.txt")
	if len(caught) < 13 || len(benign) < 3 {
		t.Fatalf("want 13 forms caught and some benign ones, got %d and %d", len(caught), len(benign))
	}
	for _, path := range caught {
		got, want := check(path)
		if want < 1 {
			t.Errorf("%s: no \"// want N\" on its first line", path)
		}
		if len(got) != want {
			t.Errorf("%s: want %d violations, got %d: %q", path, want, len(got), got)
		}
	}
	for _, path := range benign {
		if got, _ := check(path); len(got) != 0 {
			t.Errorf("%s: want no violation, got %q", path, got)
		}
	}
}

// loadedPackage is one package of the module, type-checked.
type loadedPackage struct {
	rel   string // path relative to the module: pkg/kapp/webhook
	fset  *token.FileSet
	files []*ast.File
	info  *types.Info
}

func newInfo() *types.Info {
	return &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
}

// listed is what `go list -export -deps -json` says of a package.
type listed struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Standard   bool
	Module     *struct{ Path string }
}

// goList lists patterns and their dependencies with their export data.
func goList(t *testing.T, dir string, patterns ...string) []listed {
	cmd := exec.Command("go", append([]string{"list", "-e", "-export", "-deps",
		"-json=ImportPath,Dir,Export,GoFiles,Standard,Module"}, patterns...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// exportLookup is the importer lookup of the export data of patterns and
// their dependencies.
func exportLookup(t *testing.T, patterns ...string) func(string) (io.ReadCloser, error) {
	exports := map[string]string{}
	for _, p := range goList(t, ".", patterns...) {
		exports[p.ImportPath] = p.Export
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data of %s", path)
		}
		return os.Open(file)
	}
}

// loadModule type-checks the module's packages (not their tests) from
// source, their imports from export data.
func loadModule(t *testing.T) []*loadedPackage {
	root := "../.."
	listedPkgs := goList(t, root, "./...")
	exports := map[string]string{}
	var own []listed
	for _, p := range listedPkgs {
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path+"/" == module && len(p.GoFiles) > 0 && !p.Standard {
			own = append(own, p)
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data of %s", path)
		}
		return os.Open(file)
	}
	out := make([]*loadedPackage, len(own))
	var wg sync.WaitGroup
	errs := make([]error, len(own))
	sem := make(chan struct{}, 2)
	for i, p := range own {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fset := token.NewFileSet()
			lp := &loadedPackage{rel: strings.TrimPrefix(p.ImportPath, module), fset: fset, info: newInfo()}
			for _, name := range p.GoFiles {
				f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
				if err != nil {
					errs[i] = err
					return
				}
				lp.files = append(lp.files, f)
			}
			conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
			if _, err := conf.Check(p.ImportPath, fset, lp.files, lp.info); err != nil {
				errs[i] = fmt.Errorf("type-checking %s: %w", p.ImportPath, err)
				return
			}
			out[i] = lp
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// textAnalysis finds decisions by text: a taint analysis of the values
// that hold the words of an error or a message, over the functions of one
// or more packages, then the decisions they reach. Taint flows through
// variables, struct fields, slices and maps, parameters and results, to a
// fixed point; a function's result holds the words of an argument only at
// the calls that pass words (a parameter's taint is a label resolved at
// each call), so a helper such as a bound on length does not taint every
// result of it.
type textAnalysis struct {
	pinned map[string]string
	units  []unit
	// labels are where the text an object holds may come from: textLabel
	// (the words of an error or a message) or parameters of functions.
	labels map[types.Object]labelSet
	// resultsObj are where the results of a function may come from.
	resultsObj map[types.Object]labelSet
	// incoming are where the arguments passed to a parameter may come
	// from, at every call.
	incoming map[types.Object]labelSet
	changed  bool
}

// labelSet is a set of origins: textLabel, or parameters.
type labelSet map[types.Object]bool

// textLabel is the origin of the words of an error or a message.
var textLabel = types.NewVar(token.NoPos, nil, "<words>", types.Typ[types.String])

type unit struct {
	rel             string
	fset            *token.FileSet
	file            *ast.File
	info            *types.Info
	changeForbidden bool
}

func newTextAnalysis(pinned map[string]string) *textAnalysis {
	return &textAnalysis{pinned: pinned, labels: map[types.Object]labelSet{}, resultsObj: map[types.Object]labelSet{},
		incoming: map[types.Object]labelSet{}}
}

func (a *textAnalysis) add(rel string, fset *token.FileSet, f *ast.File, info *types.Info, changeForbidden bool) {
	a.units = append(a.units, unit{rel, fset, f, info, changeForbidden})
}

// messageFields are the fields that hold words: an error's, a condition's
// or a status's message, a field error's detail, a finding's text.
var messageFields = map[string]bool{"Message": true, "Detail": true, "ChangeText": true, "message": true, "detail": true}

// schemaTexts are the structs whose message fields are content that a
// comparison of schemas judges (a CEL rule's message), not words about
// something.
var schemaTexts = map[string]bool{
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.ValidationRule": true,
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions.ValidationRule":    true,
}

// decisionFuncs are the functions of strings and bytes that search,
// compare or split text (the others transform it: their results hold the
// text still).
var decisionFuncs = map[string]bool{
	"Contains": true, "ContainsAny": true, "ContainsRune": true, "ContainsFunc": true,
	"HasPrefix": true, "HasSuffix": true, "Index": true, "IndexAny": true, "IndexByte": true,
	"IndexRune": true, "IndexFunc": true, "LastIndex": true, "LastIndexAny": true, "LastIndexByte": true,
	"LastIndexFunc": true, "EqualFold": true, "Equal": true, "Count": true,
	"Cut": true, "CutPrefix": true, "CutSuffix": true, "Split": true, "SplitN": true,
	"SplitAfter": true, "SplitAfterN": true, "Fields": true, "FieldsFunc": true, "SplitSeq": true,
	"FieldsSeq": true, "Lines": true,
}

// run propagates taint to a fixed point and returns the violations,
// sorted.
func (a *textAnalysis) run() []string {
	for range 50 {
		a.changed = false
		a.propagate()
		if !a.changed {
			break
		}
	}
	var out []string
	for _, u := range a.units {
		out = append(out, a.violations(u)...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// isPinned tells whether fn is one of the pinned parsers.
func (a *textAnalysis) isPinned(fn *types.Func) bool {
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	pkgRel := strings.TrimPrefix(fn.Pkg().Path(), module)
	name := fn.Name()
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		rt := sig.Recv().Type()
		if p, ok := rt.(*types.Pointer); ok {
			rt = p.Elem()
		}
		if n, ok := rt.(*types.Named); ok {
			name = n.Obj().Name() + "." + name
		}
	}
	_, ok := a.pinned[pkgRel+"."+name]
	return ok
}

// funcs calls fn with each function body of the units (declarations and
// literals), with the function object of a declaration.
func (a *textAnalysis) funcs(fn func(u unit, decl *types.Func, body ast.Node)) {
	for _, u := range a.units {
		a.funcsOf(u, fn)
	}
}

// funcsOf is funcs of one unit; package-level variables' initializers
// come as a body of their own.
func (a *textAnalysis) funcsOf(u unit, fn func(u unit, decl *types.Func, body ast.Node)) {
	for _, d := range u.file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue
			}
			obj, _ := u.info.Defs[d.Name].(*types.Func)
			if a.isPinned(obj) {
				continue
			}
			fn(u, obj, d.Body)
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				fn(u, nil, d)
			}
		}
	}
}

// addTo adds from to the set of obj in m; it notes a change.
func (a *textAnalysis) addTo(m map[types.Object]labelSet, obj types.Object, from labelSet) {
	if obj == nil || len(from) == 0 {
		return
	}
	if _, isFunc := obj.(*types.Func); !isFunc && !textual(obj.Type()) {
		return
	}
	set := m[obj]
	if set == nil {
		set = labelSet{}
		m[obj] = set
	}
	for l := range from {
		if !set[l] {
			set[l] = true
			a.changed = true
		}
	}
}

// propagate runs one pass of taint over every function.
func (a *textAnalysis) propagate() {
	a.funcs(func(u unit, decl *types.Func, body ast.Node) {
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					var rhs ast.Expr
					switch {
					case len(n.Rhs) == len(n.Lhs):
						rhs = n.Rhs[i]
					case len(n.Rhs) == 1:
						rhs = n.Rhs[0]
					}
					if rhs != nil {
						a.addTo(a.labels, a.target(u, lhs), a.exprLabels(u, rhs))
					}
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					var rhs ast.Expr
					switch {
					case len(n.Values) == len(n.Names):
						rhs = n.Values[i]
					case len(n.Values) == 1:
						rhs = n.Values[0]
					}
					if rhs != nil {
						a.addTo(a.labels, u.info.Defs[name], a.exprLabels(u, rhs))
					}
				}
			case *ast.RangeStmt:
				if n.Value != nil {
					a.addTo(a.labels, a.target(u, n.Value), a.exprLabels(u, n.X))
				}
			case *ast.CompositeLit:
				for _, elt := range n.Elts {
					kv, ok := elt.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if id, ok := kv.Key.(*ast.Ident); ok {
						if f, ok := u.info.Uses[id].(*types.Var); ok && f.IsField() {
							a.addTo(a.labels, f, a.exprLabels(u, kv.Value))
						}
					}
				}
			case *ast.CallExpr:
				fn := calledFunc(u.info, n)
				if fn == nil || a.isPinned(fn) {
					return true
				}
				sig, ok := fn.Type().(*types.Signature)
				if !ok || sig.Params().Len() == 0 {
					return true
				}
				for i, arg := range n.Args {
					a.addTo(a.incoming, sig.Params().At(min(i, sig.Params().Len()-1)), a.exprLabels(u, arg))
				}
			case *ast.ReturnStmt:
				if decl != nil {
					for _, r := range n.Results {
						a.addTo(a.resultsObj, decl, a.exprLabels(u, r))
					}
				}
			}
			return true
		})
	})
}

// target is the object an assignment's left-hand side names: a variable
// or a struct field (a slice or map element taints the slice or map).
func (a *textAnalysis) target(u unit, lhs ast.Expr) types.Object {
	switch l := ast.Unparen(lhs).(type) {
	case *ast.Ident:
		if obj := u.info.Defs[l]; obj != nil {
			return obj
		}
		return u.info.Uses[l]
	case *ast.SelectorExpr:
		if sel := u.info.Selections[l]; sel != nil && sel.Kind() == types.FieldVal {
			return sel.Obj()
		}
	case *ast.IndexExpr:
		return a.target(u, l.X)
	case *ast.StarExpr:
		return a.target(u, l.X)
	}
	return nil
}

// calledFunc is the function or method a call calls, nil for a
// conversion or a function value; a builtin is a *types.Func of no
// package only for append (see pkgFunc).
func calledFunc(info *types.Info, call *ast.CallExpr) *types.Func {
	if fn := calledFunc1(info, call); fn != nil {
		return fn.Origin() // a generic function's declaration, its parameters
	}
	return nil
}

func calledFunc1(info *types.Info, call *ast.CallExpr) *types.Func {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		if b, ok := info.Uses[f].(*types.Builtin); ok && b.Name() == "append" {
			return appendFunc
		}
		fn, _ := info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		if sel := info.Selections[f]; sel != nil {
			fn, _ := sel.Obj().(*types.Func)
			return fn
		}
		fn, _ := info.Uses[f.Sel].(*types.Func)
		return fn
	case *ast.IndexExpr: // a generic function instantiated
		return calledFunc1(info, &ast.CallExpr{Fun: f.X})
	case *ast.IndexListExpr:
		return calledFunc1(info, &ast.CallExpr{Fun: f.X})
	}
	return nil
}

// appendFunc stands for the builtin append.
var appendFunc = types.NewFunc(token.NoPos, nil, "append", types.NewSignatureType(nil, nil, nil, nil, nil, false))

var errorType = types.Universe.Lookup("error").Type().Underlying().(*types.Interface)

func isError(t types.Type) bool {
	return t != nil && types.Implements(t, errorType)
}

// textual: a type that can hold text (a string, bytes, a slice, map or
// pointer of them, a string-based type).
func textual(t types.Type) bool {
	if t == nil {
		return false
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return u.Info()&types.IsString != 0
	case *types.Slice:
		b, isBasic := u.Elem().Underlying().(*types.Basic)
		return textual(u.Elem()) || isBasic && b.Kind() == types.Uint8
	case *types.Array:
		return textual(u.Elem())
	case *types.Map:
		return textual(u.Elem()) || textual(u.Key())
	case *types.Pointer:
		return textual(u.Elem())
	}
	return false
}

// pkgFunc tells whether fn is one of names (any, when none) of package
// pkg ("" for the builtin append).
func pkgFunc(fn *types.Func, pkg string, names ...string) bool {
	if fn == nil {
		return false
	}
	if fn.Pkg() == nil {
		return pkg == "" && (len(names) == 0 || slices.Contains(names, fn.Name()))
	}
	return fn.Pkg().Path() == pkg && (len(names) == 0 || slices.Contains(names, fn.Name()))
}

func union(sets ...labelSet) labelSet {
	var out labelSet
	for _, s := range sets {
		for l := range s {
			if out == nil {
				out = labelSet{}
			}
			out[l] = true
		}
	}
	return out
}

var wordsOnly = labelSet{textLabel: true}

// exprLabels are where the text e holds may come from.
func (a *textAnalysis) exprLabels(u unit, e ast.Expr) labelSet {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		obj := u.info.Uses[e]
		if obj == nil {
			obj = u.info.Defs[e]
		}
		if obj == nil || !textual(obj.Type()) {
			return nil
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && isParam(v) {
			return union(a.labels[obj], labelSet{obj: true})
		}
		return a.labels[obj]
	case *ast.SelectorExpr:
		sel := u.info.Selections[e]
		if sel == nil || sel.Kind() != types.FieldVal {
			return nil
		}
		if messageFields[e.Sel.Name] && textual(sel.Obj().Type()) && !schemaTexts[structName(sel.Recv())] {
			return wordsOnly
		}
		return a.labels[sel.Obj()]
	case *ast.IndexExpr:
		return a.exprLabels(u, e.X)
	case *ast.SliceExpr:
		return a.exprLabels(u, e.X)
	case *ast.StarExpr:
		return a.exprLabels(u, e.X)
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			return a.exprLabels(u, e.X)
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return union(a.exprLabels(u, e.X), a.exprLabels(u, e.Y))
		}
	case *ast.CompositeLit:
		if textual(u.info.TypeOf(e)) {
			var sets []labelSet
			for _, elt := range e.Elts {
				if kv, ok := elt.(*ast.KeyValueExpr); ok {
					sets = append(sets, a.exprLabels(u, kv.Key), a.exprLabels(u, kv.Value))
				} else {
					sets = append(sets, a.exprLabels(u, elt))
				}
			}
			return union(sets...)
		}
	case *ast.CallExpr:
		if tv, ok := u.info.Types[e.Fun]; ok && tv.IsType() { // a conversion
			if len(e.Args) == 1 && textual(tv.Type) {
				return a.exprLabels(u, e.Args[0])
			}
			return nil
		}
		fn := calledFunc(u.info, e)
		if fn == nil || a.isPinned(fn) {
			return nil
		}
		args := func() labelSet {
			var sets []labelSet
			for _, arg := range e.Args {
				sets = append(sets, a.exprLabels(u, arg))
			}
			return union(sets...)
		}
		sig, _ := fn.Type().(*types.Signature)
		switch {
		case fn == appendFunc:
			return args()
		case sig != nil && sig.Recv() != nil && len(e.Args) == 0 && (fn.Name() == "Error" || fn.Name() == "ErrorBody") &&
			sig.Results().Len() == 1 && textual(sig.Results().At(0).Type()):
			return wordsOnly // err.Error(), fieldErr.ErrorBody()
		case pkgFunc(fn, "fmt", "Sprint", "Sprintf", "Sprintln", "Append", "Appendf", "Appendln"):
			for _, arg := range e.Args {
				if isError(u.info.TypeOf(arg)) {
					return wordsOnly
				}
			}
			return args()
		case pkgFunc(fn, "strings") || pkgFunc(fn, "bytes") || pkgFunc(fn, "strconv", "Quote", "Unquote") ||
			pkgFunc(fn, "slices", "Clone", "Compact", "Sorted", "Collect", "Values"):
			if sig.Results().Len() > 0 && textual(sig.Results().At(0).Type()) {
				return args()
			}
			return nil
		}
		res := a.resultsObj[fn]
		var out labelSet
		for l := range res {
			if l == textLabel {
				out = union(out, wordsOnly)
				continue
			}
			// A parameter of fn: the labels of the argument passed to it.
			for i := 0; sig != nil && i < sig.Params().Len(); i++ {
				if sig.Params().At(i) != l {
					continue
				}
				if sig.Variadic() && i == sig.Params().Len()-1 {
					for _, arg := range e.Args[min(i, len(e.Args)):] {
						out = union(out, a.exprLabels(u, arg))
					}
				} else if i < len(e.Args) {
					out = union(out, a.exprLabels(u, e.Args[i]))
				}
			}
		}
		return out
	}
	return nil
}

// isParam: v is a parameter of a function (not a local or a result).
func isParam(v *types.Var) bool {
	return v.Kind() == types.ParamVar || v.Kind() == types.RecvVar
}

// structName is the package path and name of the struct a field
// selection is made on.
func structName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil {
		return n.Obj().Pkg().Path() + "." + n.Obj().Name()
	}
	return ""
}

// hot tells whether labels reach the words of an error or a message:
// textLabel, or a parameter some call passes words to.
func (a *textAnalysis) hot(labels labelSet) bool {
	seen := map[types.Object]bool{}
	var visit func(labelSet) bool
	visit = func(s labelSet) bool {
		for l := range s {
			if l == textLabel {
				return true
			}
			if seen[l] {
				continue
			}
			seen[l] = true
			if visit(a.incoming[l]) {
				return true
			}
		}
		return false
	}
	return visit(labels)
}

func (a *textAnalysis) tainted(u unit, e ast.Expr) bool { return a.hot(a.exprLabels(u, e)) }

// violations lists the decisions by text of one unit, and its reads of a
// finding's ChangeText (when changeForbidden).
func (a *textAnalysis) violations(u unit) []string {
	var out []string
	report := func(pos token.Pos, what string) {
		p := u.fset.Position(pos)
		out = append(out, fmt.Sprintf("%s/%s:%d:%d: %s", u.rel, filepath.Base(p.Filename), p.Line, p.Column, what))
	}
	written := map[ast.Expr]bool{}
	a.funcsOf(u, func(_ unit, _ *types.Func, body ast.Node) {
		ast.Inspect(body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, lhs := range n.Lhs {
					written[lhs] = true
				}
			case *ast.SelectorExpr:
				if u.changeForbidden && n.Sel.Name == "ChangeText" && !written[n] {
					report(n.Pos(), "reads a finding's ChangeText: compose text in pkg/kapp/report, decide by the finding's fields")
				}
			case *ast.BinaryExpr:
				// (An order, <, decides nothing but the order lines print
				// in; an identity by text is an == after it.)
				if n.Op != token.EQL && n.Op != token.NEQ {
					return true
				}
				if !isEmptyString(n.X) && !isEmptyString(n.Y) && (a.tainted(u, n.X) || a.tainted(u, n.Y)) {
					report(n.Pos(), "compares the text of an error or message: decide by typed facts (errors.Is/As, field.Error's Type and Field)")
				}
				if a.madeError(u, n.X) || a.madeError(u, n.Y) {
					report(n.Pos(), "compares with an error made from text: use errors.Is with a sentinel")
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && a.tainted(u, n.Tag) {
					report(n.Pos(), "switches on the text of an error or message")
				}
			case *ast.IndexExpr:
				if _, isMap := u.info.TypeOf(n.X).Underlying().(*types.Map); isMap && a.tainted(u, n.Index) {
					report(n.Pos(), "keys a map by the text of an error or message")
				}
			case *ast.CompositeLit:
				if t := u.info.TypeOf(n); t != nil {
					if _, isMap := t.Underlying().(*types.Map); isMap {
						for _, elt := range n.Elts {
							if kv, ok := elt.(*ast.KeyValueExpr); ok && a.tainted(u, kv.Key) {
								report(kv.Pos(), "keys a map by the text of an error or message")
							}
						}
					}
				}
			case *ast.CallExpr:
				fn := calledFunc(u.info, n)
				if fn == nil || a.isPinned(fn) {
					return true
				}
				anyTainted := slices.ContainsFunc(n.Args, func(arg ast.Expr) bool { return a.tainted(u, arg) })
				switch {
				case (pkgFunc(fn, "strings") || pkgFunc(fn, "bytes")) && decisionFuncs[fn.Name()] && anyTainted:
					report(n.Pos(), fmt.Sprintf("%s.%s of the text of an error or message: decide by typed facts", fn.Pkg().Name(), fn.Name()))
				case pkgFunc(fn, "regexp") && anyTainted:
					report(n.Pos(), "matches the text of an error or message with a regexp")
				case pkgFunc(fn, "slices", "Contains", "Index", "BinarySearch") && anyTainted:
					report(n.Pos(), fmt.Sprintf("%s.%s of the text of an error or message", fn.Pkg().Name(), fn.Name()))
				case pkgFunc(fn, "errors", "Is") && slices.ContainsFunc(n.Args, func(arg ast.Expr) bool { return a.madeError(u, arg) }):
					report(n.Pos(), "compares with an error made from text: use errors.Is with a sentinel")
				}
			}
			return true
		})
	})
	return out
}

// madeError: e is an error made from the text of an error or message
// (errors.New(err.Error()), fmt.Errorf("%s", msg)).
func (a *textAnalysis) madeError(u unit, e ast.Expr) bool {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	fn := calledFunc(u.info, call)
	if !pkgFunc(fn, "errors", "New") && !pkgFunc(fn, "fmt", "Errorf") {
		return false
	}
	return slices.ContainsFunc(call.Args, func(arg ast.Expr) bool { return a.tainted(u, arg) || isError(u.info.TypeOf(arg)) })
}

func isEmptyString(e ast.Expr) bool {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	return ok && lit.Kind == token.STRING && (lit.Value == `""` || lit.Value == "``")
}
