package resilience

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// The loop Guard's godoc shows an integration is one that works when
// copied: the error End is given, and the caller gets, is the one the
// last step produced (send's answer, or Enter's or Retry's refusal), not
// an err the loop shadowed (Begin's, nil, for a call that failed); and
// no path leaves the loop without End, which gives back a slot held
// across the attempts.
func TestGuardsLoopEndsWithTheCallsError(t *testing.T) {
	var text string
	for _, typ := range packageDoc(t).Types {
		if typ.Name == "Guard" {
			text = typ.Doc
		}
	}
	var code []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "\t") {
			code = append(code, line)
		} else if len(code) > 0 {
			break
		}
	}
	if len(code) == 0 {
		t.Fatalf("no code block in Guard's godoc:\n%s", text)
	}
	src := "package p\nfunc sketch() error {\n" + strings.Join(code, "\n") + "\n}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sketch.go", src, 0)
	if err != nil {
		t.Fatalf("Guard's loop does not parse: %v\n%s", err, src)
	}
	body := f.Decls[0].(*ast.FuncDecl).Body
	var errs []*ast.Object // the errs declared
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == "err" && id.Obj != nil && id.Obj.Decl == n {
						errs = append(errs, id.Obj)
					}
				}
			}
		case *ast.ForStmt:
			ast.Inspect(n.Body, func(m ast.Node) bool {
				if _, ok := m.(*ast.ReturnStmt); ok {
					t.Errorf("Guard's loop returns from inside the loop, without End: %s", src[fset.Position(m.Pos()).Offset:][:40])
				}
				return true
			})
		}
		return true
	})
	if len(errs) != 1 {
		t.Errorf("Guard's loop declares err %d times, want once (Begin's): a shadowed err is not the one End is given\n%s", len(errs), src)
	}
}
