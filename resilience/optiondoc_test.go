package resilience

import (
	"go/ast"
	"strings"
	"testing"
)

// The godoc of GovernorOption and of CallOption names every function that
// makes one, and so does NewGovernor's every governor option, so that a
// reader who starts from the type finds each option there is.
func TestOptionTypesNameEveryOption(t *testing.T) {
	p := packageDoc(t)
	docs := map[string]string{}
	makers := map[string][]string{} // type -> the functions that return one
	for _, f := range p.Funcs {
		docs[f.Name] = f.Doc
	}
	for _, typ := range p.Types {
		docs[typ.Name] = typ.Doc
		for _, f := range typ.Funcs {
			docs[f.Name] = f.Doc
			if r := f.Decl.Type.Results; r != nil && len(r.List) == 1 {
				if id, ok := r.List[0].Type.(*ast.Ident); ok && id.Name == typ.Name {
					makers[typ.Name] = append(makers[typ.Name], f.Name)
				}
			}
		}
	}
	for _, typ := range []string{"GovernorOption", "CallOption"} {
		if len(makers[typ]) < 2 {
			t.Fatalf("%d functions make a %s: %v", len(makers[typ]), typ, makers[typ])
		}
		for _, name := range makers[typ] {
			if !strings.Contains(docs[typ], name) {
				t.Errorf("%s's godoc does not name %s, which makes one", typ, name)
			}
		}
	}
	for _, name := range makers["GovernorOption"] {
		if !strings.Contains(docs["NewGovernor"], name) {
			t.Errorf("NewGovernor's godoc does not name %s", name)
		}
	}
}
