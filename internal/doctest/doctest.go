// Package doctest holds what the tests of the project's documentation
// share: a check of the godoc of a package's exported types against the
// project's rules, for the tests of each package that keeps them (a
// reader learns from a type's godoc what its zero value is and whether it
// may be used from several goroutines at once, not from its source);
// readers of a Markdown file's blocks, code spans and quoted messages,
// for the tests that hold the docs to what the code does; and the
// documents those docs quote.
package doctest

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TypesSayZeroAndConcurrency fails t for each exported type of the
// package in dir (its files other than tests) whose godoc, with the
// godoc of the constants of its type, does not say what it must:
//
//   - a struct, what its zero value is or does (the word "zero") and
//     whether its values may be used from several goroutines at once
//     ("goroutine" or "concurrent");
//   - an interface, whether its methods may be called from several
//     goroutines at once;
//   - a named type of another (a number, a bool), but string, what its
//     zero value is.
//
// An alias is skipped: its own package's godoc says. Each failure names
// the type and what its godoc leaves out.
func TypesSayZeroAndConcurrency(t testing.TB, dir string) {
	t.Helper()
	for _, typ := range exportedTypes(t, dir) {
		spec := typ.Decl.Specs[0].(*ast.TypeSpec)
		if spec.Assign.IsValid() {
			continue
		}
		text := typ.Doc
		for _, c := range typ.Consts {
			text += c.Doc
		}
		concurrency := strings.Contains(text, "goroutine") || strings.Contains(text, "concurrent")
		switch st := spec.Type.(type) {
		case *ast.StructType:
			if !strings.Contains(text, "zero") {
				t.Errorf("%s's godoc does not say what its zero value is", typ.Name)
			}
			if !concurrency {
				t.Errorf("%s's godoc does not say whether it may be used from several goroutines at once", typ.Name)
			}
		case *ast.InterfaceType:
			if !concurrency {
				t.Errorf("%s's godoc does not say whether its methods may be called from several goroutines at once", typ.Name)
			}
		case *ast.Ident:
			if st.Name != "string" && !strings.Contains(text, "zero") {
				t.Errorf("%s's godoc does not say what its zero value is", typ.Name)
			}
		}
	}
}

// exportedTypes returns the exported types of the package in dir, read
// from its files other than tests.
func exportedTypes(t testing.TB, dir string) []*doc.Type {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("%s holds %d packages besides tests, want 1", dir, len(pkgs))
	}
	for name, p := range pkgs {
		return doc.New(p, name, 0).Types
	}
	return nil
}
