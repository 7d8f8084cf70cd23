package childtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// markerDir names the directory in which a test run in a child process
// leaves a file, so that the parent knows it ran.
const markerDir = "CLOUDG_CHILDTEST_MARKERS"

// A test whose name holds regular expression syntax runs in the child,
// itself and nothing else: each part of its name is matched literally.
func TestANameWithRegexpSyntaxRunsInTheChild(t *testing.T) {
	dir := os.Getenv(markerDir)
	if dir == "" {
		dir = t.TempDir()
		t.Setenv(markerDir, dir) // the child inherits it
	}
	names := []string{"a+b", "x(1)", "[y]", "dot.star*", "plain"}
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			if !InChild(t, time.Minute) {
				if _, err := os.Stat(filepath.Join(dir, fmt.Sprint(i))); err != nil {
					t.Fatalf("the test did not run in the child process: %v", err)
				}
				return
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// fakeT records what inChild makes of a child's run.
type fakeT struct {
	name            string
	failed, skipped string
}

func (f *fakeT) Helper()      {}
func (f *fakeT) Name() string { return f.name }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}
func (f *fakeT) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
}

// A child that runs no test (a name no test of the binary has) exits 0,
// saying "no tests to run": the parent fails all the same, for its test
// did not pass in the child.
func TestAChildThatRunsNoTestFails(t *testing.T) {
	f := &fakeT{name: "TestThereIsNoSuchTest"}
	if inChild(f, time.Minute) {
		t.Fatal("inChild reports the parent as the child")
	}
	if f.failed == "" || !strings.Contains(f.failed, "did not run") {
		t.Fatalf("a child that ran no test: failed %q, skipped %q", f.failed, f.skipped)
	}
}

// A test the child skips is skipped in the parent.
func TestASkipInTheChildSkips(t *testing.T) {
	if os.Getenv(env) == t.Name() {
		t.Skip("skipped in the child")
	}
	f := &fakeT{name: t.Name()}
	if inChild(f, time.Minute) {
		t.Fatal("inChild reports the parent as the child")
	}
	if f.failed != "" || !strings.Contains(f.skipped, "skipped in the child") {
		t.Fatalf("a test the child skipped: failed %q, skipped %q", f.failed, f.skipped)
	}
}

// A test that fails in the child fails in the parent.
func TestAFailureInTheChildFails(t *testing.T) {
	if os.Getenv(env) == t.Name() {
		t.Fatal("failed in the child")
	}
	f := &fakeT{name: t.Name()}
	if inChild(f, time.Minute) {
		t.Fatal("inChild reports the parent as the child")
	}
	if !strings.Contains(f.failed, "failed in the child") {
		t.Fatalf("a test the child failed: failed %q, skipped %q", f.failed, f.skipped)
	}
}

func TestPattern(t *testing.T) {
	for name, want := range map[string]string{
		"TestX":            "^TestX$",
		"TestX/a+b":        `^TestX$/^a\+b$`,
		"TestX/x(1)/[y].*": `^TestX$/^x\(1\)$/^\[y\]\.\*$`,
	} {
		if got := pattern(name); got != want {
			t.Errorf("pattern(%q) = %q, want %q", name, got, want)
		}
	}
}
