package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// TestEveryCheckIDIsListed: every Check* constant of types.go is in
// AllCheckIDs (so the decoder knows it and an exemption may name it): a
// check ID added as a constant but left out of its list fails here.
func TestEveryCheckIDIsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	all := config.AllCheckIDs()
	constants := 0
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Check") || name.Name == "CheckName" || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				id, _ := strconv.Unquote(lit.Value)
				constants++
				if !slices.Contains(all, id) {
					t.Errorf("%s = %q is missing from CRDCheckIDs or PropertyCheckIDs", name.Name, id)
				}
			}
		}
	}
	if constants != len(all) {
		t.Errorf("%d Check* constants, %d IDs in AllCheckIDs", constants, len(all))
	}
}
