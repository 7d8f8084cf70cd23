package doctest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// externalLink is a Markdown link or autolink to another site:
// [text](https://...) or <https://...>.
var externalLink = regexp.MustCompile(`\]\(\s*[a-zA-Z][a-zA-Z0-9+.-]*://[^)]*\)|<[a-zA-Z][a-zA-Z0-9+.-]*://[^>]*>`)

// The repository's documents cite nothing outside it: no README or docs
// page links to another site, where a page moves or goes and a reader of
// a copy of the repository may not reach it. What a page has from outside
// (a provider's documented limit, say) it states, and names where it
// comes from in words. URLs a reader types or sees in an example (in code
// spans and blocks) are not links.
func TestTheDocumentsLinkNothingOutsideTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".md") {
			return nil
		}
		found++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := externalLink.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d links outside the repository: %s", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 10 {
		t.Fatalf("read %d Markdown files, want the repository's (at least 10)", found)
	}
}
