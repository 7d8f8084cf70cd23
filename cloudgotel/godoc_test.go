package cloudgotel

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// Every exported type of the package says in its godoc what its zero
// value is or does (a struct, or a named number), and whether its values
// may be used from several goroutines at once (a struct, or an
// interface, an Option too), so that its user need not find out from the
// source.
func TestEveryTypeSaysItsZeroValueAndItsConcurrency(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range doc.New(pkgs["cloudgotel"], "github.com/cloudg/cloudg/cloudgotel", 0).Types {
		spec := typ.Decl.Specs[0].(*ast.TypeSpec)
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
