package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// apiTree is a repository with a core (a package, and an internal
// package whose F another library module uses and whose G none does) and
// that library module.
func apiTree() map[string]string {
	return map[string]string{
		"go.work":   "go 1.26.0\n\nuse (\n\t.\n\t./lib\n)\n",
		"go.mod":    "module example.com/r\n\ngo 1.24.0\n",
		"core/a.go": "package core\n\nfunc Old() {}\n\nfunc Changed(int) {}\n\ntype Counters struct{ RateRPS float64 }\n",
		"internal/x/x.go": "package x\n\n// F is used by example.com/r/lib.\nfunc F() int { return 1 }\n\n" +
			"// G is used only here.\nfunc G() int { return 2 }\n",
		"lib/go.mod": "module example.com/r/lib\n\ngo 1.24.0\n\nrequire example.com/r v0.1.0\n\nreplace example.com/r => ../\n",
		"lib/lib.go": "package lib\n\nimport \"example.com/r/internal/x\"\n\nvar N = x.F()\n",
	}
}

func write(t *testing.T, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func git(t *testing.T, root string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// checkTree runs checkAPI on root and returns its error's text, "" if
// none.
func checkTree(t *testing.T, root string) string {
	t.Helper()
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkAPI(io.Discard, root, mods); err != nil {
		return err.Error()
	}
	return ""
}

func wantFailure(t *testing.T, got string, wants ...string) {
	t.Helper()
	if got == "" {
		t.Fatalf("the check passed; want a failure with %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("the check's error lacks %q:\n%s", w, got)
		}
	}
}

func record(t *testing.T, root string) {
	t.Helper()
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := recordAPI(io.Discard, root, mods); err != nil {
		t.Fatal(err)
	}
}

// TestAPICheckFailsOnAnUnrecordedIncompatibleChange walks the life of the
// API files: a release's listing made from its commit, a change that
// breaks it refused until recorded with a reason, additions kept in
// next.txt, an accepted change that is undone, and the next release's
// listing made from the tree.
func TestAPICheckFailsOnAnUnrecordedIncompatibleChange(t *testing.T) {
	root := writeTree(t, apiTree())
	git(t, root, "init", "-q")
	git(t, root, "add", "-A")
	git(t, root, "commit", "-q", "-m", "v0.1.0")

	// The tree breaks v0.1.0 before any listing exists.
	write(t, root, "core/a.go", "package core\n\nfunc Changed(string) {}\n\ntype Counters struct{ Rate float64 }\n")
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := freezeAPI(io.Discard, root, mods, "v0.1.0", "HEAD"); err != nil {
		t.Fatal(err)
	}
	listing := read(t, root, "api/v0.1.0.txt")
	for _, want := range []string{
		"pkg example.com/r/core, func Old()\n",
		"pkg example.com/r/internal/x, func F() int\n",
		"# internal/x (imported by lib)\n",
	} {
		if !strings.Contains(listing, want) {
			t.Errorf("api/v0.1.0.txt lacks %q:\n%s", want, listing)
		}
	}
	if strings.Contains(listing, "func G()") {
		t.Errorf("api/v0.1.0.txt lists internal/x.G, which no other module uses:\n%s", listing)
	}
	if err := freezeAPI(io.Discard, root, mods, "v0.1.0", "HEAD"); err == nil {
		t.Error("a release's listing was made again")
	}

	wantFailure(t, checkTree(t, root),
		"incompatible with v0.1.0 (api/v0.1.0.txt) and not recorded in api/incompatible.txt",
		"  - pkg example.com/r/core, func Old()\n",
		"  - pkg example.com/r/core, func Changed(int)\n    now: pkg example.com/r/core, func Changed(string)\n",
		"  - pkg example.com/r/core, type Counters struct, RateRPS float64\n",
		"api/next.txt differs from what the tree adds to v0.1.0",
		"  + pkg example.com/r/core, type Counters struct, Rate float64")

	// -record writes next.txt and puts the changes under a TODO, which
	// the check refuses until it says why.
	record(t, root)
	if next := read(t, root, "api/next.txt"); !strings.Contains(next, "pkg example.com/r/core, func Changed(string)\npkg example.com/r/core, type Counters struct, Rate float64\n") {
		t.Errorf("api/next.txt:\n%s", next)
	}
	inc := read(t, root, "api/incompatible.txt")
	wantFailure(t, checkTree(t, root), "api/incompatible.txt:7: say why these 3 lines changed")
	write(t, root, "api/incompatible.txt", strings.Replace(inc, "# TODO: say why these changed, or restore them.", "# Deliberate: a test.", 1))
	if got := checkTree(t, root); got != "" {
		t.Fatalf("the check failed with every change recorded:\n%s", got)
	}

	// Changes to what no other module uses of an internal package are
	// not incompatible; to what one uses, they are.
	write(t, root, "internal/x/x.go", "package x\n\nfunc F() int { return 1 }\n")
	if got := checkTree(t, root); got != "" {
		t.Errorf("removing internal/x.G, which no other module uses, failed the check:\n%s", got)
	}
	write(t, root, "internal/x/x.go", "package x\n\nfunc F() int64 { return 1 }\n")
	write(t, root, "lib/lib.go", "package lib\n\nimport \"example.com/r/internal/x\"\n\nvar N = x.F()\n")
	wantFailure(t, checkTree(t, root), "  - pkg example.com/r/internal/x, func F() int\n")
	write(t, root, "internal/x/x.go", "package x\n\nfunc F() int { return 1 }\n")

	// lib stops importing internal/x: x.F stays an API, since a user's
	// build may pair lib v0.1.0, which calls it, with this core.
	write(t, root, "lib/lib.go", "package lib\n\nvar N = 1\n")
	if got := checkTree(t, root); got != "" {
		t.Errorf("with internal/x imported by v0.1.0's lib only:\n%s", got)
	}
	write(t, root, "internal/x/x.go", "package x\n")
	wantFailure(t, checkTree(t, root), "  - pkg example.com/r/internal/x, func F() int\n")
	write(t, root, "internal/x/x.go", "package x\n\nfunc F() int { return 1 }\n")
	write(t, root, "lib/lib.go", "package lib\n\nimport \"example.com/r/internal/x\"\n\nvar N = x.F()\n")

	// An accepted change undone: the record is stale, and -record drops
	// it.
	write(t, root, "core/a.go", "package core\n\nfunc Old() {}\n\nfunc Changed(string) {}\n\ntype Counters struct{ Rate float64 }\n")
	wantFailure(t, checkTree(t, root), "api/incompatible.txt accepts changes the tree does not make", "  pkg example.com/r/core, func Old()")
	record(t, root)
	if got := checkTree(t, root); got != "" {
		t.Fatalf("after -record:\n%s", got)
	}
	if inc := read(t, root, "api/incompatible.txt"); strings.Contains(inc, "func Old()") || !strings.Contains(inc, "# Deliberate: a test.\npkg example.com/r/core, func Changed(int)\n") {
		t.Errorf("api/incompatible.txt after -record:\n%s", inc)
	}

	// The next release's listing is the tree's; what it broke is kept.
	if err := freezeAPI(io.Discard, root, mods, "v0.2.0", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "api", "next.txt")); !os.IsNotExist(err) {
		t.Errorf("api/next.txt after the release's listing: %v", err)
	}
	if inc := read(t, root, "api/incompatible-v0.2.0.txt"); !strings.Contains(inc, "func Changed(int)") {
		t.Errorf("api/incompatible-v0.2.0.txt:\n%s", inc)
	}
	if got := checkTree(t, root); got != "" {
		t.Fatalf("against v0.2.0:\n%s", got)
	}
	write(t, root, "core/a.go", "package core\n\nfunc Changed(string) {}\n\ntype Counters struct{ Rate float64 }\n")
	wantFailure(t, checkTree(t, root), "incompatible with v0.2.0 (api/v0.2.0.txt)", "  - pkg example.com/r/core, func Old()\n")
}

func TestFreezeFromTheTreeWantsTheCheckToPass(t *testing.T) {
	root := writeTree(t, apiTree())
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := freezeAPI(io.Discard, root, mods, "v0.1.0", ""); err != nil {
		t.Fatal(err)
	}
	write(t, root, "core/a.go", "package core\n")
	err = freezeAPI(io.Discard, root, mods, "v0.2.0", "")
	if err == nil || !strings.Contains(err.Error(), "the tree's API must pass the check first") {
		t.Fatalf("freezing a tree with unrecorded changes: %v", err)
	}
	for _, v := range []string{"v0.2", "v0.2.0-rc.1", "0.2.0"} {
		if err := freezeAPI(io.Discard, root, mods, v, ""); err == nil {
			t.Errorf("-freeze %s: no error", v)
		}
	}
}
