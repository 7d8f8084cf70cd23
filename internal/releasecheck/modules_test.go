package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (slash-separated names) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// repoTree is a repository shaped like cloudg's: a core, an integration
// with a test module beside it, an example, a module of benchmarks only
// and a tool.
func repoTree(t *testing.T) map[string]string {
	return map[string]string{
		"go.work":               "go 1.26.0\n\nuse (\n\t.\n\t./lib\n\t./lib/test\n\t./examples/x\n\t./bench\n\t./internal/tool\n)\n",
		"LICENSE":               "licence\n",
		"go.mod":                "module example.com/r\n\ngo 1.24.0\n",
		"core/core.go":          "package core\n",
		"core/core_test.go":     "package core\n",
		"internal/priv/priv.go": "package priv\n",
		"cmd/r/main.go":         "package main\n\nfunc main() {}\n",
		"lib/go.mod":            "module example.com/r/lib\n\ngo 1.24.0\n\nrequire example.com/r v0.1.0\n\nreplace example.com/r => ../\n",
		"lib/LICENSE":           "licence\n",
		"lib/lib.go":            "package lib\n",
		"lib/test/go.mod":       "module example.com/r/lib/test\n\ngo 1.26.0\n\nrequire example.com/r/lib v0.1.0\n\nreplace example.com/r/lib => ../\n",
		"lib/test/doc.go":       "package test\n",
		"examples/x/go.mod":     "module example.com/r/examples/x\n\ngo 1.26.0\n",
		"examples/x/main.go":    "package main\n\nfunc main() {}\n",
		"bench/go.mod":          "module example.com/r/bench\n\ngo 1.26.0\n",
		"bench/b_test.go":       "package bench\n",
		"internal/tool/go.mod":  "module example.com/r/internal/tool\n\ngo 1.26.0\n",
		"internal/tool/main.go": "package main\n\nfunc main() {}\n",
	}
}

func TestDiscoverClassifiesLibraryAndDevelopmentModules(t *testing.T) {
	mods, err := discover(writeTree(t, repoTree(t)))
	if err != nil {
		t.Fatal(err)
	}
	var lib, dev []string
	for _, m := range mods {
		if m.Library {
			lib = append(lib, m.Dir)
		} else {
			dev = append(dev, m.Dir)
		}
	}
	if want := []string{".", "lib"}; !slices.Equal(lib, want) {
		t.Errorf("library modules %v, want %v", lib, want)
	}
	if want := []string{"lib/test", "examples/x", "bench", "internal/tool"}; !slices.Equal(dev, want) {
		t.Errorf("development modules %v, want %v", dev, want)
	}
	core := moduleOf(mods, "example.com/r")
	// Internal packages, tests and the other modules' directories are not
	// a consumer's to import.
	if want := []string{"example.com/r/core"}; !slices.Equal(core.Packages, want) {
		t.Errorf("packages of the core %v, want %v", core.Packages, want)
	}
	if want := []string{"example.com/r/cmd/r"}; !slices.Equal(core.Commands, want) {
		t.Errorf("commands of the core %v, want %v", core.Commands, want)
	}
}

func TestDiscoverRefusesAModuleOutsideGoWork(t *testing.T) {
	files := repoTree(t)
	files["extra/go.mod"] = "module example.com/r/extra\n\ngo 1.24.0\n"
	files["extra/x.go"] = "package extra\n"
	files["more/go.mod"] = "module example.com/r/more\n\ngo 1.24.0\n"
	_, err := discover(writeTree(t, files))
	if err == nil {
		t.Fatal("no error for modules missing from go.work")
	}
	for _, want := range []string{"extra/go.mod: the module is not in go.work", "more/go.mod: the module is not in go.work"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestCheckWiringAcceptsAReleaseReadyTree(t *testing.T) {
	root := writeTree(t, repoTree(t))
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWiring(root, mods, "v0.1.0"); err != nil {
		t.Fatalf("a release-ready tree: %v", err)
	}
}

func TestCheckWiringReportsEveryMistakeAtOnce(t *testing.T) {
	files := repoTree(t)
	// The old wiring: v0.0.0 and a replace, which consumers ignore.
	files["lib/go.mod"] = "module example.com/r/lib\n\ngo 1.24.0\n\nrequire (\n\texample.com/r v0.0.0\n\texample.com/r/lib/test v0.1.0\n\texample.com/other v1.0.0\n)\n\n" +
		"replace example.com/r => ../\n\nreplace example.com/other => ../../other\n"
	files["lib/test/go.mod"] = "module example.com/r/lib/test\n\ngo 1.26.0\n\nrequire example.com/r/lib v0.1.0\n"
	delete(files, "lib/LICENSE")
	root := writeTree(t, files)
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	err = checkWiring(root, mods, "v0.1.0")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"lib/go.mod: requires example.com/r v0.0.0, not the release version v0.1.0",
		"lib/go.mod: the library requires example.com/r/lib/test, a development module that is never released",
		"lib/go.mod: requires example.com/r/lib/test without replace example.com/r/lib/test => ./test for development",
		"lib/go.mod: replace example.com/other: a replace is ignored in a dependency",
		"lib/test/go.mod: requires example.com/r/lib without replace example.com/r/lib => .. for development",
		"lib/LICENSE: the library module has no LICENSE",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestCheckWiringWantsTheSameLicenseInEveryLibrary(t *testing.T) {
	files := repoTree(t)
	files["lib/LICENSE"] = "another licence\n"
	root := writeTree(t, files)
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	err = checkWiring(root, mods, "v0.1.0")
	if err == nil || !strings.Contains(err.Error(), "lib/LICENSE: differs from the repository's LICENSE") {
		t.Fatalf("error %v, want the differing licence", err)
	}
}

// gitInit makes root a git repository with everything but what
// .gitignore ignores added.
func gitInit(t *testing.T, root string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func TestTagOrderPutsDependenciesFirst(t *testing.T) {
	files := repoTree(t)
	files["go.work"] = "go 1.26.0\n\nuse (\n\t./app\n\t./lib\n\t.\n)\n"
	files["app/go.mod"] = "module example.com/r/app\n\ngo 1.24.0\n\nrequire (\n\texample.com/r v0.1.0\n\texample.com/r/lib v0.1.0\n)\n"
	files["app/app.go"] = "package app\n"
	for name := range files {
		if strings.HasPrefix(name, "lib/test/") || strings.HasPrefix(name, "examples/") || strings.HasPrefix(name, "bench/") || strings.HasPrefix(name, "internal/tool/") {
			delete(files, name)
		}
	}
	mods, err := discover(writeTree(t, files))
	if err != nil {
		t.Fatal(err)
	}
	tags, err := tagOrder(mods, "v0.2.0")
	if want := []string{"v0.2.0", "lib/v0.2.0", "app/v0.2.0"}; err != nil || !slices.Equal(tags, want) {
		t.Fatalf("tags %v, %v; want %v", tags, err, want)
	}
}
