package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteProxyServesEachLibraryAsATagWould(t *testing.T) {
	files := repoTree(t)
	files[".gitignore"] = "*.test\n"
	files["core/core.test"] = "a build artifact\n"
	root := writeTree(t, files)
	gitInit(t, root)
	// A new file git does not ignore is published, as it would be once
	// committed.
	if err := os.WriteFile(filepath.Join(root, "core", "new.go"), []byte("package core\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mods, err := discover(root)
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	if err := writeProxy(proxy, root, mods, "v0.1.0"); err != nil {
		t.Fatal(err)
	}

	zipNames := func(file string) []string {
		t.Helper()
		zr, err := zip.OpenReader(file)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		slices.Sort(names)
		return names
	}
	core := zipNames(filepath.Join(proxy, "example.com", "r", "@v", "v0.1.0.zip"))
	want := []string{".gitignore", "LICENSE", "cmd/r/main.go", "core/core.go", "core/core_test.go", "core/new.go", "go.mod", "go.work", "internal/priv/priv.go"}
	for i := range want {
		want[i] = "example.com/r@v0.1.0/" + want[i]
	}
	if !slices.Equal(core, want) {
		t.Errorf("the core's zip holds\n%v\nwant (no other module's files, nothing ignored)\n%v", core, want)
	}
	lib := zipNames(filepath.Join(proxy, "example.com", "r", "lib", "@v", "v0.1.0.zip"))
	if want := []string{"example.com/r/lib@v0.1.0/LICENSE", "example.com/r/lib@v0.1.0/go.mod", "example.com/r/lib@v0.1.0/lib.go"}; !slices.Equal(lib, want) {
		t.Errorf("the library's zip holds %v, want %v (not its test module)", lib, want)
	}

	mod, err := os.ReadFile(filepath.Join(proxy, "example.com", "r", "lib", "@v", "v0.1.0.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := files["lib/go.mod"]; string(mod) != want {
		t.Errorf(".mod is\n%s\nwant the module's go.mod\n%s", mod, want)
	}
	list, err := os.ReadFile(filepath.Join(proxy, "example.com", "r", "lib", "@v", "list"))
	if err != nil || strings.TrimSpace(string(list)) != "v0.1.0" {
		t.Errorf("list %q, %v; want v0.1.0", list, err)
	}
	for _, dev := range []string{"lib/test", "examples/x", "bench", "internal/tool"} {
		if _, err := os.Stat(filepath.Join(proxy, "example.com", "r", filepath.FromSlash(dev))); !os.IsNotExist(err) {
			t.Errorf("the development module %s is in the proxy (%v)", dev, err)
		}
	}
}
