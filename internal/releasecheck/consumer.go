package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// consumerModule is the module path of the consumers: outside the
// repository's, so nothing of the workspace applies to them.
const consumerModule = "example.com/cloudgconsumer"

// A consumer is a module outside the tree that requires library modules of
// a release the way a user's module would: no replace, no workspace, every
// module fetched through GOPROXY (the file-system proxy first).
type consumer struct {
	dir string
	env []string
}

// consumerEnv is the environment of the consumers: GOWORK=off, -mod=mod,
// the proxy at proxyDir first, then the machine's module cache as a
// read-only proxy (third-party modules already downloaded), then the
// configured GOPROXY; no checksum database for cloudg's modules, which it
// has never seen; and the module cache modcache, new for each run: the go
// command takes whatever is in a module cache to be the module at that
// version for good (its package index and file hashes included), and this
// run's cloudg modules differ from the last run's at the same version.
// -trimpath keeps the compiled third-party packages in the build cache
// independent of that directory, so that a run compiles only what changed.
func consumerEnv(proxyDir, modcache string) []string {
	goenv := func(key string) string {
		out, _ := exec.Command("go", "env", key).Output()
		return strings.TrimSpace(string(out))
	}
	proxies := []string{"file://" + filepath.ToSlash(proxyDir)}
	if cache := goenv("GOMODCACHE"); cache != "" && cache != modcache {
		proxies = append(proxies, "file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download")))
	}
	if p := goenv("GOPROXY"); p != "" && p != "off" {
		proxies = append(proxies, p)
	}
	nosum := "github.com/cloudg/cloudg"
	if v := goenv("GONOSUMDB"); v != "" {
		nosum += "," + v
	}
	flags := strings.TrimSpace(goenv("GOFLAGS") + " -mod=mod -modcacherw -trimpath")
	return append(os.Environ(),
		"GOWORK=off", "GOFLAGS="+flags, "GOPROXY="+strings.Join(proxies, ","),
		"GONOSUMDB="+nosum, "GOMODCACHE="+modcache, "GOTOOLCHAIN=local")
}

// writeConsumer writes a consumer module in dir that requires mods at
// version and imports every package they export. Its go.sum starts with
// the repository's checksums of third-party modules, so that what the
// repository's modules were tested with is what the consumer verifies.
func writeConsumer(dir, goVersion string, mods []*repoModule, version string, sums []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var gomod, main bytes.Buffer
	fmt.Fprintf(&gomod, "module %s\n\ngo %s\n\nrequire (\n", consumerModule, goVersion)
	fmt.Fprintf(&main, "// Command cloudgconsumer imports every package of the release.\npackage main\n\nimport (\n")
	for _, m := range mods {
		fmt.Fprintf(&gomod, "\t%s %s\n", m.Path, version)
		for _, p := range m.Packages {
			fmt.Fprintf(&main, "\t_ %q\n", p)
		}
	}
	gomod.WriteString(")\n")
	main.WriteString(")\n\nfunc main() {}\n")
	for name, data := range map[string][]byte{
		"go.mod": gomod.Bytes(), "main.go": main.Bytes(), "go.sum": []byte(strings.Join(sums, "")),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// build resolves the consumer (go mod tidy), builds it and the commands of
// its modules, and returns `go list -m all`: every module in its graph,
// the consumer's own line first.
func (c consumer) build(commands []string) ([]string, error) {
	steps := [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}}
	for _, cmd := range commands {
		steps = append(steps, []string{"build", "-o", os.DevNull, cmd})
	}
	for _, args := range steps {
		if _, err := c.run(args...); err != nil {
			return nil, err
		}
	}
	out, err := c.run("list", "-m", "all")
	if err != nil {
		return nil, err
	}
	return strings.Fields(strings.ReplaceAll(out, " ", "@")), nil
}

func (c consumer) run(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// repoSums collects the go.sum lines of every module of the repository,
// leaving out the repository's own modules.
func repoSums(root string, mods []*repoModule) ([]string, error) {
	set := map[string]bool{}
	for _, m := range mods {
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(m.Dir), "go.sum"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if fields := strings.Fields(line); len(fields) == 3 && moduleOf(mods, fields[0]) == nil {
				set[line+"\n"] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	lines := make([]string, 0, len(set))
	for l := range set {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return lines, nil
}
