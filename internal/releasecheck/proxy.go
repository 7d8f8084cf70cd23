package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// writeProxy lays out a module proxy in dir (the layout GOPROXY=file://dir
// reads: <escaped path>/@v/list, <version>.info, .mod and .zip) holding
// every library module of the working tree at version. A module's files
// are the ones a tag of the current tree would publish: those git tracks,
// plus new files it does not ignore, with their contents in the working
// tree, the directories of other modules left out.
func writeProxy(dir, root string, mods []*repoModule, version string) error {
	files, err := gitFiles(root)
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for _, m := range mods {
		if !m.Library {
			continue
		}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		escVer, err := module.EscapeVersion(version)
		if err != nil {
			return err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		var zbuf bytes.Buffer
		mv := module.Version{Path: m.Path, Version: version}
		if err := zip.Create(&zbuf, mv, moduleFiles(root, m, mods, files)); err != nil {
			return fmt.Errorf("%s: module zip: %w", m.Dir, err)
		}
		gomod, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Dir), "go.mod"))
		if err != nil {
			return err
		}
		for name, data := range map[string][]byte{
			"list": []byte(version + "\n"), escVer + ".info": info,
			escVer + ".mod": gomod, escVer + ".zip": zbuf.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// gitFiles lists the files of the working tree that a commit of it would
// hold, relative to root and slash-separated.
func gitFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
			files = append(files, f) // a tracked file deleted in the tree is not published
		}
	}
	return files, nil
}

// moduleFiles picks the files of m out of the tree's: those under its
// directory and not under another module's.
func moduleFiles(root string, m *repoModule, mods []*repoModule, files []string) []zip.File {
	var out []zip.File
	for _, f := range files {
		rel, ok := within(m.Dir, f)
		if !ok {
			continue
		}
		nested := false
		for _, o := range mods {
			if o != m && o.Dir != "." && (m.Dir == "." || strings.HasPrefix(o.Dir, m.Dir+"/")) {
				if _, in := within(o.Dir, f); in {
					nested = true
					break
				}
			}
		}
		if !nested {
			out = append(out, treeFile{rel: rel, name: filepath.Join(root, filepath.FromSlash(f))})
		}
	}
	return out
}

// within reports whether file is under dir, and its path relative to dir.
func within(dir, file string) (string, bool) {
	if dir == "." {
		return file, true
	}
	rel, ok := strings.CutPrefix(file, dir+"/")
	return rel, ok && rel != ""
}

// treeFile is a file of the working tree as zip.Create reads it.
type treeFile struct{ rel, name string }

func (f treeFile) Path() string                 { return path.Clean(f.rel) }
func (f treeFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.name) }
func (f treeFile) Open() (io.ReadCloser, error) { return os.Open(f.name) }
