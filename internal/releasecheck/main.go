// Command releasecheck checks the API of the repository's library modules
// against the last release, simulates a release of the modules, and builds
// what a user would build from it. scripts/release-check runs it:
//
//	go run ./internal/releasecheck [-version v0.1.0] [-root dir] [-keep] [-toolchain go1.24.0]
//	go run ./internal/releasecheck -api
//	go run ./internal/releasecheck -record
//	go run ./internal/releasecheck -names
//	go run ./internal/releasecheck -freeze v0.2.0 [-from commit]
//
// It reads the modules from go.work (every go.mod of the tree must be
// there) and classifies them: a library module is released and tagged, a
// development module (a directory element test, examples or internal, or
// no package to import) is not.
//
// It first lists the API of the library modules (every exported name,
// field and method of each package a user can import, and of what another
// library module uses of an internal package) and compares it with the
// listing of the newest release in the directory api: a line of the
// release's listing that the tree lacks is an incompatible change, and
// fails the check unless api/incompatible.txt accepts it under a reason;
// api/next.txt must list what the tree adds. -record writes api/next.txt
// and adds each unaccepted change to api/incompatible.txt under a TODO
// that fails the check until a person replaces it with the reason; -freeze
// writes a release's listing; -names counts the names of each package;
// -api checks the API alone.
//
// It then checks the go.mod wiring a release needs (see checkWiring),
// writes a file-system module proxy holding every library module of the
// working tree at the version (module zips made with golang.org/x/mod/zip,
// as the Go module proxy makes them from a tag), and then, outside the
// tree, with GOWORK=off and no replace, resolves and builds a consumer
// module that imports every package of every library module, and one
// consumer per library module, whose module graph size it prints: what a
// user of that one module downloads. With -toolchain, each consumer whose
// go line allows that Go release is built with it as well, which shows
// that a library module's go line is true of a user's build.
//
// It reports every problem it finds, not only the first, and exits 1 if
// there was any.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/semver"
)

func main() {
	root := flag.String("root", "", "the repository (default: the git top level of the working directory)")
	version := flag.String("version", "v0.1.0", "the version of the simulated release")
	keep := flag.Bool("keep", false, "keep the proxy and the consumers, and print where")
	toolchain := flag.String("toolchain", "", "also build each consumer whose go line allows it with this Go toolchain, such as go1.24.0 (the go command fetches it from the module proxy)")
	record := flag.Bool("record", false, "only bring the API files up to date with the tree: write api/next.txt, and add each unaccepted incompatible change to api/incompatible.txt under a TODO")
	freeze := flag.String("freeze", "", "only write api/`version`.txt, the listing of a release's API, from the tree (or from the commit -from names)")
	from := flag.String("from", "", "with -freeze, the `commit` of the release (default: the tree)")
	apiOnly := flag.Bool("api", false, "only check the API against the newest release's listing")
	names := flag.Bool("names", false, "only print the exported names of each package, in the newest release's listing and in the tree")
	flag.Parse()
	var err error
	switch {
	case *record || *freeze != "" || *names || *apiOnly:
		err = apiCommand(os.Stdout, *root, *record, *freeze, *from, *names)
	default:
		err = run(os.Stdout, *root, *version, *toolchain, *keep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release-check:", err)
		os.Exit(1)
	}
}

// repoRoot returns root, or the git top level of the working directory.
func repoRoot(root string) (string, error) {
	if root != "" {
		return root, nil
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse --show-toplevel: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// apiCommand runs -record, -freeze, -names or -api.
func apiCommand(w io.Writer, root string, record bool, freeze, from string, names bool) error {
	root, err := repoRoot(root)
	if err != nil {
		return err
	}
	mods, err := discover(root)
	if err != nil {
		return err
	}
	switch {
	case freeze != "":
		return freezeAPI(w, root, mods, freeze, from)
	case record:
		return recordAPI(w, root, mods)
	case names:
		return printNames(w, root, mods)
	default:
		return checkAPI(w, root, mods)
	}
}

func run(w io.Writer, root, version, toolchain string, keep bool) error {
	if !semver.IsValid(version) || semver.Build(version) != "" {
		return fmt.Errorf("version %q is not a semantic version such as v0.1.0", version)
	}
	root, err := repoRoot(root)
	if err != nil {
		return err
	}
	mods, err := discover(root)
	if err != nil {
		return err
	}
	var libs []*repoModule
	fmt.Fprintf(w, "modules of %s (go.work):\n", root)
	for _, m := range mods {
		kind := "development"
		if m.Library {
			kind = "library"
			libs = append(libs, m)
		}
		fmt.Fprintf(w, "  %-11s %-28s go %-7s %s\n", kind, m.Dir, goVersion(m), m.Path)
	}
	if len(libs) == 0 {
		return errors.New("no library module")
	}
	var errs []error
	// The API first: it takes seconds, the consumers minutes.
	if err := checkAPI(w, root, mods); err != nil {
		errs = append(errs, err)
	}
	if err := checkWiring(root, mods, version); err != nil {
		errs = append(errs, err)
	}
	if tags, err := tagOrder(mods, version); err != nil {
		errs = append(errs, err)
	} else {
		fmt.Fprintf(w, "tags, in this order (RELEASING.md): %s\n", strings.Join(tags, " "))
	}

	work, err := os.MkdirTemp("", "cloudg-release-check-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(w, "proxy and consumers kept in %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	proxyDir := filepath.Join(work, "proxy")
	if err := writeProxy(proxyDir, root, mods, version); err != nil {
		return errors.Join(append(errs, err)...)
	}
	sums, err := repoSums(root, mods)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	env := consumerEnv(proxyDir, filepath.Join(work, "modcache"))

	check := func(name string, of []*repoModule) {
		dir := filepath.Join(work, "consumer-"+strings.NewReplacer("/", "_", " ", "_").Replace(name))
		var commands []string
		for _, m := range of {
			commands = append(commands, m.Commands...)
		}
		goLine := maxGoVersion(of)
		if err := writeConsumer(dir, goLine, of, version, sums); err != nil {
			errs = append(errs, err)
			return
		}
		c := consumer{dir: dir, env: env}
		graph, err := c.build(commands)
		if err != nil {
			errs = append(errs, fmt.Errorf("consumer of %s: %w", name, err))
			return
		}
		// go list -m all lists the consumer itself first.
		also := ""
		if toolchain != "" && semver.Compare("v"+goLine, "v"+strings.TrimPrefix(toolchain, "go")) <= 0 {
			old := consumer{dir: dir, env: append(env[:len(env):len(env)], "GOTOOLCHAIN="+toolchain)}
			if _, err := old.run("build", "-o", os.DevNull, "."); err != nil {
				errs = append(errs, fmt.Errorf("consumer of %s with %s: %w", name, toolchain, err))
				return
			}
			also = ", built with " + toolchain + " too"
		}
		fmt.Fprintf(w, "  %-40s %3d modules besides the consumer (go list -m all), go %s%s\n", name, len(graph)-1, goLine, also)
	}
	fmt.Fprintf(w, "consumers of %s from a file-system proxy, outside the tree, GOWORK=off, no replace:\n", version)
	check("every library module", libs)
	for _, m := range libs {
		check(m.Path, []*repoModule{m})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "release-check %s: ok\n", version)
	return nil
}

func goVersion(m *repoModule) string {
	if m.File.Go == nil {
		return "?"
	}
	return m.File.Go.Version
}

// maxGoVersion is the newest go directive of mods: the oldest a consumer
// of them all can declare.
func maxGoVersion(mods []*repoModule) string {
	best := "1.21"
	for _, m := range mods {
		if v := goVersion(m); v != "?" && semver.Compare("v"+v, "v"+best) > 0 {
			best = v
		}
	}
	return best
}
