package doctest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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
	targets := coreFuzzTargets(t, root)
	if len(targets) == 0 {
		t.Fatal("found no fuzz target in the core module")
	}
	for _, p := range fuzzListProblems(string(script), targets) {
		t.Error(p)
	}
}

// coreFuzzTargets returns the fuzz targets of the core module's test
// files under root, each as ./<package dir>/:FuzzX.
func coreFuzzTargets(t *testing.T, root string) []string {
	t.Helper()
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	var targets []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
			targets = append(targets, "./"+filepath.ToSlash(rel)+"/:"+string(m[1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(targets)
	return targets
}

// fuzzListProblems returns what is wrong with script's fuzzing list
// against targets (./<package dir>/:FuzzX each): a script with no list, a
// word of the list that is no ./<package dir>/:FuzzX:<budget> entry (a
// budget is a count of inputs, 1000x, or a duration), a target the list
// names twice or that is not one of targets, and each of targets the list
// does not name.
func fuzzListProblems(script string, targets []string) []string {
	words, err := fuzzList(script)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	listed := map[string]bool{}
	for _, w := range words {
		m := fuzzEntry.FindStringSubmatch(w)
		if m == nil || !validBudget(m[2]) {
			problems = append(problems, fmt.Sprintf("scripts/test's fuzzing list holds %q, not ./<package dir>/:FuzzX:<budget> (a budget is 1000x or a duration)", w))
			continue
		}
		switch target := m[1]; {
		case listed[target]:
			problems = append(problems, target+" is in scripts/test's fuzzing list twice")
		case !slices.Contains(targets, target):
			problems = append(problems, target+" is in scripts/test's fuzzing list but is no fuzz target of the core module")
		}
		listed[m[1]] = true
	}
	for _, target := range targets {
		if !listed[target] {
			problems = append(problems, target+" is not in scripts/test's fuzzing list (want "+target+":<budget>)")
		}
	}
	return problems
}

// fuzzEntry is a word of the fuzzing list: the target, ./<package
// dir>/:FuzzX, and its budget.
var fuzzEntry = regexp.MustCompile(`^(\./(?:[\w.-]+/)+:Fuzz\w+):(.+)$`)

// validBudget reports whether b is a budget go test's -fuzztime takes: a
// count of inputs (1000x) or a positive duration.
func validBudget(b string) bool {
	if n, ok := strings.CutSuffix(b, "x"); ok {
		c, err := strconv.Atoi(n)
		return err == nil && c > 0
	}
	d, err := time.ParseDuration(b)
	return err == nil && d > 0
}

// fuzzList returns the words of script's fuzzing list, the loop at the
// start of a line `for target in <words> ; do`, its lines joined where
// one ends with a backslash. A list that holds a comment, or does not end
// with "; do", is an error, as is a script with no such loop.
func fuzzList(script string) ([]string, error) {
	lines := strings.Split(script, "\n")
	for i, line := range lines {
		rest, ok := strings.CutPrefix(line, "for target in ")
		if !ok {
			continue
		}
		var words []string
		for {
			body, cont := strings.CutSuffix(strings.TrimRight(rest, " \t"), "\\")
			list, after, end := strings.Cut(body, ";")
			for _, w := range strings.Fields(list) {
				if strings.HasPrefix(w, "#") {
					return nil, fmt.Errorf("scripts/test's fuzzing list holds a comment, %q: the shell ends the list there", w)
				}
				words = append(words, w)
			}
			if end {
				if !strings.HasPrefix(strings.TrimSpace(after), "do") {
					return nil, fmt.Errorf("scripts/test's fuzzing list ends with %q, not \"; do\"", after)
				}
				return words, nil
			}
			if !cont || i+1 == len(lines) {
				return nil, errors.New("scripts/test's fuzzing list does not end with \"; do\"")
			}
			i++
			rest = lines[i]
		}
	}
	return nil, errors.New("scripts/test has no fuzzing list (a line \"for target in ./<package dir>/:FuzzX:<budget> ...; do\")")
}

// The check reads the script's list itself, the words of its
// `for target in ... ; do`: a target named only in a comment, or in
// another command, is not in the list, nor is one whose entry has no
// budget; an entry whose target is no fuzz target of the core (a target
// renamed or removed, which go test -fuzz would run as no target at all)
// or that names a target twice is wrong too; the list as the script has
// it passes.
func TestTheFuzzListCheckReadsTheListItself(t *testing.T) {
	targets := []string{"./a/:FuzzA", "./b/:FuzzB"}
	const list = "for target in ./a/:FuzzA:1000x \\\n  ./b/:FuzzB:20000x; do\n  IFS=: read -r pkg name budget <<<\"$target\"\ndone\n"
	if p := fuzzListProblems(list, targets); len(p) != 0 {
		t.Errorf("the list %q: %q; want no problem", list, p)
	}
	for name, script := range map[string]string{
		"only in a comment":       "# ./b/:FuzzB:20000x is run below\nfor target in ./a/:FuzzA:1000x; do\n  :\ndone\n",
		"in another command":      "echo ./b/:FuzzB:20000x\nfor target in ./a/:FuzzA:1000x; do\n  :\ndone\n",
		"in the loop's body":      "for target in ./a/:FuzzA:1000x; do\n  echo ./b/:FuzzB:20000x\ndone\n",
		"without a budget":        "for target in ./a/:FuzzA:1000x ./b/:FuzzB:; do\n  :\ndone\n",
		"no list":                 "echo ./a/:FuzzA:1000x ./b/:FuzzB:20000x\n",
		"a target not the core's": "for target in ./a/:FuzzA:1000x ./b/:FuzzB:20000x ./c/:FuzzC:5x; do\n  :\ndone\n",
		"a target twice":          "for target in ./a/:FuzzA:1000x ./b/:FuzzB:20000x ./a/:FuzzA:10x; do\n  :\ndone\n",
	} {
		if p := fuzzListProblems(script, targets); len(p) == 0 {
			t.Errorf("%s: the check found nothing wrong with %q", name, script)
		}
	}
}
