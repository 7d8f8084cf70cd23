package doctest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README says that ./scripts/test ends with a short run of each of
// the core module's fuzz targets: every func FuzzX in a test file of the
// core module (the repository's root module, its nested modules apart)
// is in the script's list, as ./<package dir>/:FuzzX:<budget>, so that a
// new target is fuzzed by CI and not only run on its seeds.
func TestScriptsTestFuzzesEveryFuzzTargetOfTheCore(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test"))
	if err != nil {
		t.Fatal(err)
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
				if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
			n++
			entry := "./" + filepath.ToSlash(rel) + "/:" + string(m[1]) + ":"
			if !strings.Contains(string(script), entry) {
				t.Errorf("%s (%s) is not in scripts/test's fuzzing list (want %s<budget>)", m[1], path, entry)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no fuzz target in the core module")
	}
}
