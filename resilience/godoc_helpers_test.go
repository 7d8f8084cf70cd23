package resilience

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// packageDoc reads the documentation of package resilience from its
// source, test files left out, for the tests that hold its godoc to what
// the code does. Each call parses afresh: doc.New takes the syntax trees
// it is given for its own.
func packageDoc(t *testing.T) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	return doc.New(pkgs["resilience"], "github.com/cloudg/cloudg/resilience", 0)
}
