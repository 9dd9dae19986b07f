package kapp_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// textOnlyAt is where a finding's words may be read: the edge that
// composes every output's text from the finding's facts.
const textOnlyAt = "pkg/kapp/report/"

// sortOnlyAt is the one other file that reads them: SortFindings, as the
// last tie-break of the one output order (findings of one check at one
// field), which decides nothing but the order lines print in.
const sortOnlyAt = "pkg/kapp/crdupgradesafety/findings.go"

// TestNoDecisionReadsText enforces that findings travel as facts: outside
// pkg/kapp/report, no production code reads a finding's text (its Change)
// — it may only set it where the finding is made — and no code decides by
// searching an error's text (strings.Contains(err.Error(), ...)): errors
// are matched with errors.Is and errors.As.
func TestNoDecisionReadsText(t *testing.T) {
	root := "../.."
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", ".cache", "hack", "test", "docs", "examples", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		for _, v := range violations(file, !strings.HasPrefix(rel, textOnlyAt) && rel != sortOnlyAt) {
			t.Errorf("%s:%d: %s", rel, fset.Position(v.pos).Line, v.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d files checked", checked)
	}
}

type violation struct {
	pos  token.Pos
	what string
}

// violations lists the reads of a finding's Change (when changeForbidden)
// and the searches of an error's text in file.
func violations(file *ast.File, changeForbidden bool) []violation {
	written := map[ast.Expr]bool{}
	var out []violation
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, lhs := range n.Lhs {
				written[lhs] = true
			}
		case *ast.SelectorExpr:
			if changeForbidden && n.Sel.Name == "ChangeText" && !written[n] {
				out = append(out, violation{n.Pos(), "reads a finding's ChangeText: compose text in pkg/kapp/report, decide by the finding's fields"})
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "strings" {
				return true
			}
			for _, arg := range n.Args {
				if call, ok := arg.(*ast.CallExpr); ok {
					if s, ok := call.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Error" && len(call.Args) == 0 {
						out = append(out, violation{n.Pos(), "searches an error's text: use errors.Is or errors.As"})
					}
				}
			}
		}
		return true
	})
	return out
}

// TestNoDecisionReadsTextCanFail: the check finds what it forbids.
func TestNoDecisionReadsTextCanFail(t *testing.T) {
	src := `package x
import "strings"
func f(fs []Finding, err error) bool {
	fs[0].ChangeText = "set"
	if strings.Contains(fs[0].ChangeText, "pruned") { return true }
	return strings.Contains(err.Error(), "conflict")
}`
	file, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := violations(file, true); len(got) != 2 {
		t.Fatalf("want 2 violations (the read of Change, the search of err.Error()), got %d: %v", len(got), got)
	}
	if got := violations(file, false); len(got) != 1 {
		t.Fatalf("in pkg/kapp/report only the search of an error's text counts, got %d", len(got))
	}
}
