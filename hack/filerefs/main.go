// Command filerefs measures how the files of Go packages refer to each other
// (the closing note of issue 38 measured the engine with it):
//
//	go run ./hack/filerefs [-v] pkg/kapp/crdupgradesafety pkg/kapp/crdupgradesafety/finding ...
//
// It prints the production files, the file-to-file references, the layers
// of the graph (its longest path once cycles are merged) and the largest
// cycle; -v lists each reference with the names it uses. It reads names
// only (go/ast, no type checking), so a method named like another file's
// declaration counts as a reference: an estimate to compare before and
// after, not an exact graph. TESTS=1 counts test files too.
// File A refers to file B when A uses a package-level name (func, type,
// var, const, or a method name) declared in B, of its own package or of
// another package given.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	verbose := len(os.Args) > 1 && os.Args[1] == "-v"
	dirs := os.Args[1:]
	if verbose {
		dirs = dirs[1:]
	}
	fset := token.NewFileSet()
	type file struct {
		name string
		pkg  string
		f    *ast.File
	}
	var files []file
	for _, d := range dirs {
		ms, _ := filepath.Glob(filepath.Join(d, "*.go"))
		for _, m := range ms {
			if strings.HasSuffix(m, "_test.go") && os.Getenv("TESTS") == "" {
				continue
			}
			f, err := parser.ParseFile(fset, m, nil, 0)
			if err != nil {
				panic(err)
			}
			files = append(files, file{m, f.Name.Name + "@" + d, f})
		}
	}
	// decl: pkgdir -> name -> file
	decl := map[string]map[string]string{}
	add := func(pkg, name, fn string) {
		if name == "_" || name == "init" {
			return
		}
		if decl[pkg] == nil {
			decl[pkg] = map[string]string{}
		}
		decl[pkg][name] = fn
	}
	pkgName := map[string]string{} // dir -> import name
	for _, f := range files {
		d := filepath.Dir(f.name)
		pkgName[d] = f.f.Name.Name
		for _, dl := range f.f.Decls {
			switch x := dl.(type) {
			case *ast.FuncDecl:
				add(d, x.Name.Name, f.name)
			case *ast.GenDecl:
				for _, s := range x.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(d, s.Name.Name, f.name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(d, n.Name, f.name)
						}
					}
				}
			}
		}
	}
	edges := map[[2]string]int{}
	syms := map[[2]string]map[string]bool{}
	note := func(k [2]string, n string) {
		if syms[k] == nil {
			syms[k] = map[string]bool{}
		}
		syms[k][n] = true
	}
	for _, f := range files {
		d := filepath.Dir(f.name)
		// imported sibling dirs by package name
		imp := map[string]string{}
		for _, is := range f.f.Imports {
			p := strings.Trim(is.Path.Value, `"`)
			for dd, n := range pkgName {
				if strings.HasSuffix(p, "/"+filepath.Base(dd)) && dd != d {
					name := n
					if is.Name != nil {
						name = is.Name.Name
					}
					imp[name] = dd
				}
			}
		}
		ast.Inspect(f.f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					if dd, ok := imp[id.Name]; ok {
						if to, ok := decl[dd][x.Sel.Name]; ok {
							edges[[2]string{f.name, to}]++
						}
						return false
					}
				}
				if to, ok := decl[d][x.Sel.Name]; ok && to != f.name {
					edges[[2]string{f.name, to}]++
					note([2]string{f.name, to}, "."+x.Sel.Name)
				}
			case *ast.Ident:
				if to, ok := decl[d][x.Name]; ok && to != f.name {
					edges[[2]string{f.name, to}]++
					note([2]string{f.name, to}, x.Name)
				}
			}
			return true
		})
	}
	var keys [][2]string
	for k := range edges {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	if verbose {
		for _, k := range keys {
			var ns []string
			for n := range syms[k] {
				ns = append(ns, n)
			}
			sort.Strings(ns)
			fmt.Println(k[0], "->", k[1], ns)
		}
	}
	// layers: longest path over SCC condensation
	adj := map[string][]string{}
	nodes := map[string]bool{}
	for _, f := range files {
		nodes[f.name] = true
	}
	for _, k := range keys {
		adj[k[0]] = append(adj[k[0]], k[1])
	}
	// Tarjan
	index, low, on := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	comp := map[string]int{}
	i, nc := 0, 0
	var strong func(v string)
	strong = func(v string) {
		index[v], low[v] = i, i
		i++
		stack = append(stack, v)
		on[v] = true
		for _, w := range adj[v] {
			if _, ok := index[w]; !ok {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp[w] = nc
				if w == v {
					break
				}
			}
			nc++
		}
	}
	var names []string
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := index[n]; !ok {
			strong(n)
		}
	}
	cadj := map[int]map[int]bool{}
	for _, k := range keys {
		a, b := comp[k[0]], comp[k[1]]
		if a != b {
			if cadj[a] == nil {
				cadj[a] = map[int]bool{}
			}
			cadj[a][b] = true
		}
	}
	depth := map[int]int{}
	var dep func(c int) int
	dep = func(c int) int {
		if v, ok := depth[c]; ok {
			return v
		}
		m := 0
		for b := range cadj[c] {
			m = max(m, dep(b))
		}
		depth[c] = m + 1
		return m + 1
	}
	maxd := 0
	for c := 0; c < nc; c++ {
		maxd = max(maxd, dep(c))
	}
	sizes := map[int]int{}
	for _, c := range comp {
		sizes[c]++
	}
	big := 0
	for _, s := range sizes {
		big = max(big, s)
	}
	fmt.Printf("files %d, file-to-file references %d, layers %d, largest cycle %d files\n", len(files), len(keys), maxd, big)
}
