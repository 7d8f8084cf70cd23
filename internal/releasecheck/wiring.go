package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// checkWiring reports every way the modules' go.mod files would break for
// a consumer of a release at version, all at once:
//
//   - a module that requires another module of the repository at any
//     other version (a consumer would look for that version, which no tag
//     provides), or without a replace to that module's directory (the
//     workspace would then build against the released version, not the
//     tree);
//   - a library module that requires a development module (never
//     released), or replaces a module from outside the repository (a
//     replace is ignored in a dependency, so a consumer would build
//     against something else than the tests did);
//   - a library module without the repository's LICENSE (its module zip
//     would carry none).
func checkWiring(root string, mods []*repoModule, version string) error {
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return fmt.Errorf("LICENSE: %w", err)
	}
	var errs []error
	for _, m := range mods {
		name := path.Join(m.Dir, "go.mod")
		replaced := map[string]string{}
		for _, r := range m.File.Replace {
			if r.New.Version == "" {
				replaced[r.Old.Path] = path.Clean(path.Join(m.Dir, filepath.ToSlash(r.New.Path)))
			}
			if m.Library && moduleOf(mods, r.Old.Path) == nil {
				errs = append(errs, fmt.Errorf("%s: replace %s: a replace is ignored in a dependency, so consumers would not build what the tests built", name, r.Old.Path))
			}
		}
		for _, r := range m.File.Require {
			dep := moduleOf(mods, r.Mod.Path)
			if dep == nil {
				continue
			}
			if r.Mod.Version != version {
				errs = append(errs, fmt.Errorf("%s: requires %s %s, not the release version %s", name, r.Mod.Path, r.Mod.Version, version))
			}
			if replaced[r.Mod.Path] != dep.Dir {
				errs = append(errs, fmt.Errorf("%s: requires %s without replace %s => %s for development", name, r.Mod.Path, r.Mod.Path, relDir(m.Dir, dep.Dir)))
			}
			if m.Library && !dep.Library {
				errs = append(errs, fmt.Errorf("%s: the library requires %s, a development module that is never released", name, r.Mod.Path))
			}
		}
		if m.Library {
			got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Dir), "LICENSE"))
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: the library module has no LICENSE (copy the repository's)", path.Join(m.Dir, "LICENSE")))
			case !bytes.Equal(got, license):
				errs = append(errs, fmt.Errorf("%s: differs from the repository's LICENSE", path.Join(m.Dir, "LICENSE")))
			}
		}
	}
	return errors.Join(errs...)
}

// relDir is the path of dir relative to from, both relative to the root,
// as a replace directive spells it.
func relDir(from, dir string) string {
	rel, err := filepath.Rel(filepath.FromSlash(from), filepath.FromSlash(dir))
	if err != nil {
		return dir
	}
	rel = filepath.ToSlash(rel)
	if rel == "." || rel == ".." || len(rel) > 2 && rel[:3] == "../" {
		return rel
	}
	return "./" + rel
}
