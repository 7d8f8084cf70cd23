package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// The API files live in the directory api of the repository:
//
//   - v0.1.0.txt, one per release: the complete API listing of that
//     release, made by -freeze and never edited afterwards;
//   - next.txt: the lines the tree's listing has and the newest release's
//     lacks (what the next release adds), written by -record;
//   - incompatible.txt: the lines of the newest release's listing that
//     the tree lacks (incompatible changes), each accepted deliberately
//     under a comment saying why;
//   - incompatible-v0.2.0.txt: the incompatible.txt of the changes a
//     release made, kept by -freeze.
//
// checkAPI fails when the tree's API has an incompatible change that
// incompatible.txt does not record, and when next.txt or incompatible.txt
// say something the tree does not (run -record).
const apiDir = "api"

const (
	nextFile         = "next.txt"
	incompatibleFile = "incompatible.txt"
	todoReason       = "TODO"
)

// releaseListings returns the versions of the release listings in dir,
// oldest first.
func releaseListings(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var versions []string
	for _, e := range entries {
		v, ok := strings.CutSuffix(e.Name(), ".txt")
		if ok && semver.IsValid(v) && semver.Canonical(v) == v && semver.Prerelease(v) == "" {
			versions = append(versions, v)
		}
	}
	semver.Sort(versions)
	return versions, nil
}

// readListing reads a listing file: feature lines, comments (#) and blank
// lines.
func readListing(file string) ([]feature, error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var fs []feature
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f, ok := parseFeature(line)
		if !ok {
			return nil, fmt.Errorf("%s:%d: not a line of an API listing: %s", file, i+1, line)
		}
		fs = append(fs, f)
	}
	return sortFeatures(fs), nil
}

// writeListing writes a listing file: the comment header, then the
// features, a blank line between packages.
func writeListing(file, header string, fs []feature) error {
	var b bytes.Buffer
	b.WriteString(header)
	last := ""
	for _, f := range fs {
		if f.Pkg != last {
			b.WriteString("\n")
			last = f.Pkg
		}
		b.WriteString(f.String())
		b.WriteString("\n")
	}
	return writeFile(file, b.Bytes())
}

func writeFile(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// comment turns text into comment lines of at most 80 columns.
func comment(text string) string {
	var b strings.Builder
	for _, para := range strings.Split(text, "\n") {
		line := "#"
		for _, w := range strings.Fields(para) {
			if len(line)+1+len(w) > 80 && line != "#" {
				b.WriteString(line + "\n")
				line = "#"
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// An exception is one group of incompatible.txt: lines of the release's
// listing that the tree may lack, and why.
type exception struct {
	Reason   []string // the comment lines, without "# "
	Features []feature
	Line     int // of its first line
}

// readExceptions reads incompatible.txt: groups separated by blank lines,
// each its comment lines (the reason) and the features it accepts. The
// file's first group may be a comment alone (its header).
func readExceptions(file string) (header string, groups []exception, err error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	var cur *exception
	flush := func() {
		if cur != nil {
			if len(cur.Features) == 0 && len(groups) == 0 && header == "" {
				for _, r := range cur.Reason {
					header += strings.TrimRight("# "+r, " ") + "\n"
				}
			} else if len(cur.Features) > 0 || len(cur.Reason) > 0 {
				groups = append(groups, *cur)
			}
		}
		cur = nil
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			flush()
			continue
		}
		if cur == nil {
			cur = &exception{Line: i + 1}
		}
		if c, ok := strings.CutPrefix(line, "#"); ok {
			cur.Reason = append(cur.Reason, strings.TrimPrefix(c, " "))
			continue
		}
		f, ok := parseFeature(line)
		if !ok {
			return "", nil, fmt.Errorf("%s:%d: not a line of an API listing: %s", file, i+1, line)
		}
		cur.Features = append(cur.Features, f)
	}
	flush()
	return header, groups, nil
}

func writeExceptions(file, header string, groups []exception) error {
	var b bytes.Buffer
	b.WriteString(header)
	for _, g := range groups {
		b.WriteString("\n")
		for _, r := range g.Reason {
			b.WriteString(strings.TrimRight("# "+r, " ") + "\n")
		}
		for _, f := range g.Features {
			b.WriteString(f.String() + "\n")
		}
	}
	return writeFile(file, b.Bytes())
}

// apiState is what checkAPI and recordAPI read: the newest release's
// listing, the tree's, the difference, and the files that record it.
type apiState struct {
	Base     string // the newest release with a listing: v0.1.0
	Old      []feature
	Tree     *apiListing
	Diff     apiDiff
	Next     []feature
	Header   string
	Accepted []exception
}

func loadAPI(root string, mods []*repoModule) (*apiState, error) {
	dir := filepath.Join(root, apiDir)
	versions, err := releaseListings(dir)
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("%s: no listing of a release's API (v0.1.0.txt): make one with -freeze", apiDir)
	}
	s := &apiState{Base: versions[len(versions)-1]}
	if s.Old, err = readListing(filepath.Join(dir, s.Base+".txt")); err != nil {
		return nil, err
	}
	if s.Tree, err = listTree(root, mods); err != nil {
		return nil, err
	}
	s.Diff = diffAPI(s.Old, s.Tree)
	if s.Next, err = readListing(filepath.Join(dir, nextFile)); err != nil {
		return nil, err
	}
	if s.Header, s.Accepted, err = readExceptions(filepath.Join(dir, incompatibleFile)); err != nil {
		return nil, err
	}
	return s, nil
}

// checkAPI compares the tree's API with the newest release's listing and
// reports, all at once: every incompatible change incompatible.txt does
// not accept (with what the tree has under that name now), every
// accepted change without a reason, every line of incompatible.txt or
// next.txt the tree contradicts, and every addition next.txt lacks.
func checkAPI(w io.Writer, root string, mods []*repoModule) error {
	s, err := loadAPI(root, mods)
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	var errs []error
	removed := map[feature]bool{}
	for _, f := range s.Diff.Removed {
		removed[f] = true
	}
	accepted := map[feature]bool{}
	var stale []string
	for _, g := range s.Accepted {
		if len(g.Features) > 0 && (len(g.Reason) == 0 || strings.HasPrefix(strings.TrimSpace(strings.Join(g.Reason, " ")), todoReason)) {
			errs = append(errs, fmt.Errorf("%s/%s:%d: say why these %d lines changed in the comment above them (a reason, not %q)",
				apiDir, incompatibleFile, g.Line, len(g.Features), todoReason))
		}
		for _, f := range g.Features {
			accepted[f] = true
			if !removed[f] {
				stale = append(stale, "  "+f.String())
			}
		}
	}
	var unrecorded []string
	for _, f := range s.Diff.Removed {
		if accepted[f] {
			continue
		}
		line := "  - " + f.String()
		for _, now := range s.Diff.Now[f] {
			line += "\n    now: " + now.String()
		}
		unrecorded = append(unrecorded, line)
	}
	if len(unrecorded) > 0 {
		errs = append(errs, fmt.Errorf("incompatible with %s (%s/%s.txt) and not recorded in %s/%s:\n%s\n"+
			"  restore them (a deprecated alias or wrapper keeps a name working), or accept them deliberately:\n"+
			"  ./scripts/release-check -record adds them to %s/%s under a TODO, to replace with the reason",
			s.Base, apiDir, s.Base, apiDir, incompatibleFile, strings.Join(unrecorded, "\n"), apiDir, incompatibleFile))
	}
	if len(stale) > 0 {
		errs = append(errs, fmt.Errorf("%s/%s accepts changes the tree does not make (./scripts/release-check -record removes them):\n%s",
			apiDir, incompatibleFile, strings.Join(stale, "\n")))
	}
	if missing, extra := setDiff(s.Diff.Added, s.Next); len(missing)+len(extra) > 0 {
		var lines []string
		for _, f := range missing {
			lines = append(lines, "  + "+f.String())
		}
		for _, f := range extra {
			lines = append(lines, "  - "+f.String())
		}
		errs = append(errs, fmt.Errorf("%s/%s differs from what the tree adds to %s (./scripts/release-check -record writes it):\n%s",
			apiDir, nextFile, s.Base, strings.Join(lines, "\n")))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	fmt.Fprintf(w, "api: %d packages against %s (%s/%s.txt): %d lines added (%s/%s), %d removed or changed, each accepted in %s/%s\n",
		len(countNames(s.Tree.Features)), s.Base, apiDir, s.Base, len(s.Diff.Added), apiDir, nextFile, len(s.Diff.Removed), apiDir, incompatibleFile)
	return nil
}

// setDiff returns the features of a that b lacks and those of b that a
// lacks.
func setDiff(a, b []feature) (onlyA, onlyB []feature) {
	in := func(fs []feature) map[feature]bool {
		m := map[feature]bool{}
		for _, f := range fs {
			m[f] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	for _, f := range a {
		if !inb[f] {
			onlyA = append(onlyA, f)
		}
	}
	for _, f := range b {
		if !ina[f] {
			onlyB = append(onlyB, f)
		}
	}
	return onlyA, onlyB
}

// recordAPI writes next.txt from the tree, and brings incompatible.txt up
// to date: a line the tree no longer contradicts leaves it (a group left
// empty goes), and every unrecorded incompatible change is added in a new
// group under a TODO comment, which checkAPI refuses until someone writes
// the reason in its place.
func recordAPI(w io.Writer, root string, mods []*repoModule) error {
	s, err := loadAPI(root, mods)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, apiDir)
	header := comment(fmt.Sprintf("The API added since %s: the lines of the tree's API listing that %s.txt lacks. "+
		"Written by ./scripts/release-check -record; scripts/release-check fails while it differs from the tree.", s.Base, s.Base))
	if err := writeListing(filepath.Join(dir, nextFile), header, s.Diff.Added); err != nil {
		return err
	}
	removed := map[feature]bool{}
	for _, f := range s.Diff.Removed {
		removed[f] = true
	}
	accepted := map[feature]bool{}
	var groups []exception
	dropped := 0
	for _, g := range s.Accepted {
		kept := g
		kept.Features = nil
		for _, f := range g.Features {
			if removed[f] && !accepted[f] {
				kept.Features = append(kept.Features, f)
				accepted[f] = true
			} else {
				dropped++
			}
		}
		if len(kept.Features) > 0 {
			groups = append(groups, kept)
		}
	}
	var todo []feature
	for _, f := range s.Diff.Removed {
		if !accepted[f] {
			todo = append(todo, f)
		}
	}
	if len(todo) > 0 {
		groups = append(groups, exception{Reason: []string{todoReason + ": say why these changed, or restore them."}, Features: todo})
	}
	if s.Header == "" {
		s.Header = comment(fmt.Sprintf("Incompatible changes since %s, each accepted deliberately: lines of %s.txt "+
			"that the tree's API listing lacks, in groups under a comment that says why. "+
			"scripts/release-check fails on any other such line, and on a group without a reason; "+
			"./scripts/release-check -record adds new ones under a %s to replace with the reason.", s.Base, s.Base, todoReason))
	}
	if len(groups) > 0 || fileExists(filepath.Join(dir, incompatibleFile)) {
		if err := writeExceptions(filepath.Join(dir, incompatibleFile), s.Header, groups); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "api: %s/%s: %d lines added since %s\n", apiDir, nextFile, len(s.Diff.Added), s.Base)
	fmt.Fprintf(w, "api: %s/%s: %d incompatible changes accepted, %d no longer made and removed, %d new under %s\n",
		apiDir, incompatibleFile, len(s.Diff.Removed)-len(todo), dropped, len(todo), todoReason)
	if len(todo) > 0 {
		fmt.Fprintf(w, "api: write why in %s/%s in place of each %s (or restore the names); scripts/release-check fails until then\n", apiDir, incompatibleFile, todoReason)
	}
	return nil
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// freezeAPI writes the listing of release version: api/<version>.txt. With
// from, a commit, the listing is that commit's API (a release made
// before listings existed); then the tree is left as it is. Without, it is
// the tree's API, which must pass checkAPI first: the tree is that
// release, so next.txt goes (its lines are in the new listing) and
// incompatible.txt is kept as incompatible-<version>.txt, the record of
// what the release broke.
func freezeAPI(w io.Writer, root string, mods []*repoModule, version, from string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Prerelease(version) != "" {
		return fmt.Errorf("-freeze %s: not a release version such as v0.2.0", version)
	}
	dir := filepath.Join(root, apiDir)
	file := filepath.Join(dir, version+".txt")
	if fileExists(file) {
		return fmt.Errorf("%s/%s.txt exists: a release's listing is never remade", apiDir, version)
	}
	source := "the tree"
	var l *apiListing
	if from != "" {
		commit, err := exec.Command("git", "-C", root, "rev-parse", "--verify", from+"^{commit}").Output()
		if err != nil {
			return fmt.Errorf("git rev-parse %s: %w", from, err)
		}
		source = "commit " + strings.TrimSpace(string(commit))
		tmp, err := os.MkdirTemp("", "cloudg-api-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := extract(root, strings.TrimSpace(string(commit)), tmp); err != nil {
			return err
		}
		oldMods, err := discover(tmp)
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		if l, err = listTree(tmp, oldMods); err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
	} else {
		vs, err := releaseListings(dir)
		if err != nil {
			return err
		}
		if len(vs) > 0 {
			if err := checkAPI(io.Discard, root, mods); err != nil {
				return fmt.Errorf("-freeze %s: the tree's API must pass the check first:\n%w", version, err)
			}
		}
		if l, err = listTree(root, mods); err != nil {
			return err
		}
	}
	prefix := ""
	if m := moduleAt(mods, "."); m != nil {
		prefix = m.Path + "/"
	}
	var internal []string
	for p := range l.Scope.Internal {
		var short []string
		for _, m := range l.Scope.importerModules(p) {
			short = append(short, strings.TrimPrefix(m, prefix))
		}
		internal = append(internal, fmt.Sprintf("%s (imported by %s)", strings.TrimPrefix(p, prefix), strings.Join(short, ", ")))
	}
	sort.Strings(internal)
	header := comment(fmt.Sprintf("The API of release %s of cloudg's library modules, listed from %s: "+
		"a line for each exported name, field and method of every package a user can import, and for "+
		"the names of an internal package that the code of another library module uses (a user's build "+
		"may pair that module with another release of the package's). Made by `go run ./internal/releasecheck "+
		"-freeze %s%s` and never edited: scripts/release-check compares the tree's API with the newest of these listings.",
		version, source, version, map[bool]string{true: " -from " + from}[from != ""]))
	if len(internal) > 0 {
		header += comment("The internal packages listed:\n" + strings.Join(internal, "\n"))
	}
	if err := writeListing(file, header, l.Features); err != nil {
		return err
	}
	fmt.Fprintf(w, "api: %s/%s.txt: %d lines, %d packages, from %s\n", apiDir, version, len(l.Features), len(countNames(l.Features)), source)
	if from == "" {
		os.Remove(filepath.Join(dir, nextFile))
		inc := filepath.Join(dir, incompatibleFile)
		if fileExists(inc) {
			if err := os.Rename(inc, filepath.Join(dir, "incompatible-"+version+".txt")); err != nil {
				return err
			}
		}
	}
	return nil
}

// moduleAt returns the module in directory dir, or nil.
func moduleAt(mods []*repoModule, dir string) *repoModule {
	for _, m := range mods {
		if m.Dir == dir {
			return m
		}
	}
	return nil
}

// extract writes the files of commit into dir (git archive).
func extract(root, commit, dir string) error {
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var gitErr, tarErr bytes.Buffer
	archive.Stderr, untar.Stderr = &gitErr, &tarErr
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		untar.Wait()
		return fmt.Errorf("git archive %s: %w\n%s", commit, err, gitErr.String())
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("tar: %w\n%s", err, tarErr.String())
	}
	return nil
}

// A nameCount counts a package's exported names.
type nameCount struct{ Top, Methods, Fields int }

func (c nameCount) all() int { return c.Top + c.Methods + c.Fields }

func countNames(fs []feature) map[string]nameCount {
	counts := map[string]nameCount{}
	for _, f := range fs {
		c := counts[f.Pkg]
		switch _, kind := f.name(); kind {
		case kindTop:
			c.Top++
		case kindMethod:
			c.Methods++
		case kindField:
			c.Fields++
		default:
			continue
		}
		counts[f.Pkg] = c
	}
	return counts
}

// printNames writes a table of the exported names of each package in the
// newest release's listing and in the tree: top-level names, methods
// (promoted ones too), struct fields.
func printNames(w io.Writer, root string, mods []*repoModule) error {
	s, err := loadAPI(root, mods)
	if err != nil {
		return err
	}
	before, after := countNames(s.Old), countNames(s.Tree.Features)
	var pkgs []string
	for p := range before {
		pkgs = append(pkgs, p)
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			pkgs = append(pkgs, p)
		}
	}
	sort.Strings(pkgs)
	tw := bufio.NewWriter(w)
	fmt.Fprintf(tw, "exported names: top-level + methods + fields = all, in %s and in the tree\n", s.Base)
	fmt.Fprintf(tw, "| package | %s | tree |\n| --- | ---: | ---: |\n", s.Base)
	var tb, ta nameCount
	cell := func(c nameCount, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%d + %d + %d = %d", c.Top, c.Methods, c.Fields, c.all())
	}
	for _, p := range pkgs {
		b, okb := before[p]
		a, oka := after[p]
		fmt.Fprintf(tw, "| %s | %s | %s |\n", strings.TrimPrefix(p, "github.com/cloudg/cloudg/"), cell(b, okb), cell(a, oka))
		tb = nameCount{tb.Top + b.Top, tb.Methods + b.Methods, tb.Fields + b.Fields}
		ta = nameCount{ta.Top + a.Top, ta.Methods + a.Methods, ta.Fields + a.Fields}
	}
	fmt.Fprintf(tw, "| all | %s | %s |\n", cell(tb, true), cell(ta, true))
	return tw.Flush()
}
