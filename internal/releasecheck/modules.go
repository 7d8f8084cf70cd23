package main

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// A repoModule is one module of the repository, as go.work lists it.
type repoModule struct {
	Dir  string // slash-separated, relative to the repository root: ".", "cloudgaws", "cloudgaws/test"
	Path string // github.com/cloudg/cloudg/cloudgaws
	File *modfile.File

	// Library reports whether the module is released: see classify.
	Library bool
	// Packages are the import paths a consumer can import: packages with
	// non-test Go files, neither main nor internal.
	Packages []string
	// Commands are the import paths of the module's main packages.
	Commands []string
	// Internal are the import paths of the module's internal packages
	// (non-main, with non-test Go files): another module of the
	// repository may import them, which makes them an API across module
	// versions (see apiPackages).
	Internal []string
}

// devElements are the directory names that make a module a development
// module (never tagged, never required by a library): tests, example
// programs and repository tooling.
var devElements = []string{"test", "examples", "internal"}

// classify decides whether m is a library module. A module is a library
// when no element of its directory is test, examples or internal and it
// has at least one package a consumer can import; every other module (a
// test module, an example program, a module of benchmarks only, a tool)
// is a development module, built and tested in the workspace but never
// released. The rule reads only the tree, so a module added later is
// classified without editing this program.
func (m *repoModule) classify() {
	for _, e := range strings.Split(m.Dir, "/") {
		if slices.Contains(devElements, e) {
			m.Library = false
			return
		}
	}
	m.Library = len(m.Packages) > 0
}

// discover reads go.work at root and every module it uses, and checks that
// every go.mod of the tree is one of them: a module left out of go.work
// would be neither tested nor released.
func discover(root string) ([]*repoModule, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, err
	}
	wf, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return nil, err
	}
	var mods []*repoModule
	used := map[string]bool{}
	for _, u := range wf.Use {
		dir := path.Clean(filepath.ToSlash(u.Path))
		if path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
			return nil, fmt.Errorf("go.work: use %s: outside the repository", u.Path)
		}
		used[dir] = true
		m, err := readModule(root, dir)
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	var errs []error
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (name == "testdata" || name == "vendor" ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || name != "go.mod" {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		if rel = filepath.ToSlash(rel); !used[rel] {
			errs = append(errs, fmt.Errorf("%s/go.mod: the module is not in go.work", rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	dirs := make([]string, len(mods))
	for i, m := range mods {
		dirs[i] = m.Dir
	}
	for _, m := range mods {
		if err := m.findPackages(root, dirs); err != nil {
			return nil, err
		}
		m.classify()
	}
	return mods, nil
}

func readModule(root, dir string) (*repoModule, error) {
	name := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, err
	}
	if f.Module == nil {
		return nil, fmt.Errorf("%s: no module line", name)
	}
	return &repoModule{Dir: dir, Path: f.Module.Mod.Path, File: f}, nil
}

// findPackages lists the module's importable packages and commands,
// leaving out the directories of the other modules (nested ones).
func (m *repoModule) findPackages(root string, moduleDirs []string) error {
	top := filepath.Join(root, filepath.FromSlash(m.Dir))
	return filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if p != top && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") ||
			strings.HasPrefix(name, "_") || slices.Contains(moduleDirs, rel)) {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(p, 0)
		if err != nil {
			if _, ok := errors.AsType[*build.NoGoError](err); ok {
				return nil
			}
			return fmt.Errorf("%s: %w", rel, err)
		}
		if len(pkg.GoFiles) == 0 && len(pkg.CgoFiles) == 0 {
			return nil // tests only
		}
		sub, _ := filepath.Rel(top, p)
		importPath := path.Join(m.Path, filepath.ToSlash(sub))
		switch {
		case pkg.Name == "main":
			m.Commands = append(m.Commands, importPath)
		case isInternal(importPath):
			m.Internal = append(m.Internal, importPath)
		default:
			m.Packages = append(m.Packages, importPath)
		}
		return nil
	})
}

func isInternal(importPath string) bool {
	return slices.Contains(strings.Split(importPath, "/"), "internal")
}

// moduleOf returns the repository module with the given path, or nil.
func moduleOf(mods []*repoModule, modPath string) *repoModule {
	for _, m := range mods {
		if m.Path == modPath {
			return m
		}
	}
	return nil
}

// tagOrder returns the tags of a release of the library modules at
// version, dependencies first (a module's tag is its directory and the
// version: cloudgaws/v0.1.0; the root module's is the version alone), so
// that every tag pushed finds the versions it requires already tagged.
// Modules that do not depend on each other keep go.work's order.
func tagOrder(mods []*repoModule, version string) ([]string, error) {
	var tags []string
	state := map[*repoModule]int{} // 1: visiting, 2: done
	var visit func(m *repoModule) error
	visit = func(m *repoModule) error {
		switch state[m] {
		case 1:
			return fmt.Errorf("%s: the repository's modules require each other in a cycle", m.Path)
		case 2:
			return nil
		}
		state[m] = 1
		for _, r := range m.File.Require {
			if dep := moduleOf(mods, r.Mod.Path); dep != nil && dep.Library {
				if err := visit(dep); err != nil {
					return err
				}
			}
		}
		state[m] = 2
		tag := version
		if m.Dir != "." {
			tag = m.Dir + "/" + version
		}
		tags = append(tags, tag)
		return nil
	}
	for _, m := range mods {
		if m.Library {
			if err := visit(m); err != nil {
				return nil, err
			}
		}
	}
	return tags, nil
}
