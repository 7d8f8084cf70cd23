package resilience

import (
	"go/ast"
	"strings"
	"testing"
)

// Every exported type of the package whose values a caller makes or
// keeps (a struct, or a named number) says in its godoc what its zero
// value is or does, and every exported struct type says whether its
// values may be used from several goroutines at once, so that neither
// has to be found out from the source.
func TestEveryTypeSaysItsZeroValueAndItsConcurrency(t *testing.T) {
	for _, typ := range packageDoc(t).Types {
		spec := typ.Decl.Specs[0].(*ast.TypeSpec)
		if spec.Assign.IsValid() {
			continue // an alias: its own package's godoc says
		}
		text := typ.Doc
		for _, c := range typ.Consts {
			text += c.Doc
		}
		switch st := spec.Type.(type) {
		case *ast.StructType:
			if !strings.Contains(text, "zero") {
				t.Errorf("%s's godoc does not say what its zero value is", typ.Name)
			}
			if !strings.Contains(text, "goroutine") && !strings.Contains(text, "concurrent") {
				t.Errorf("%s's godoc does not say whether it may be used from several goroutines at once", typ.Name)
			}
		case *ast.Ident:
			if st.Name != "string" && !strings.Contains(text, "zero") {
				t.Errorf("%s's godoc does not say what its zero value is", typ.Name)
			}
		}
	}
}
