// Package childtest runs a test in a child process with a real-time
// limit, for tests whose failure is a goroutine spinning at one instant of
// a testing/synctest bubble's clock: virtual time never advances, and the
// test would hang the whole package instead of failing.
package childtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// env names the test a child process runs.
const env = "CLOUDG_CHILD_TEST"

// InChild reports whether t runs in the child process InChild starts. In
// the parent it runs t there alone, fails t if the child fails, outlives
// timeout (real time) or does not report t passed (a child that ran no
// test exits 0), skips t if the child skipped it, and returns false; the
// caller returns.
//
//	if !childtest.InChild(t, time.Minute) {
//		return
//	}
func InChild(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	return inChild(t, timeout)
}

// tb is what inChild uses of a *testing.T.
type tb interface {
	Helper()
	Name() string
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

func inChild(t tb, timeout time.Duration) bool {
	t.Helper()
	if os.Getenv(env) == t.Name() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+pattern(t.Name()), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the test did not end within %v of real time (a goroutine spins at one instant of the bubble's clock)\n%s", timeout, head(out, 20))
		return false
	}
	if err != nil {
		t.Fatalf("in a child process: %v\n%s", err, head(out, 20))
		return false
	}
	// The child exits 0 when it ran no test: the test passed only if the
	// child says so.
	switch {
	case bytes.Contains(out, []byte("--- PASS: "+t.Name()+" (")):
	case bytes.Contains(out, []byte("--- SKIP: "+t.Name()+" (")):
		t.Skipf("skipped in a child process:\n%s", head(out, 20))
	default:
		t.Fatalf("the test did not run in the child process (-test.run=%s)\n%s", pattern(t.Name()), head(out, 20))
	}
	return false
}

// pattern is the -test.run pattern that matches the test named name and
// nothing else: each part of the name (go test matches the parts of a
// subtest's name level by level, split at '/') matched literally, whole.
func pattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// head returns the first n lines of out.
func head(out []byte, n int) string {
	lines := strings.SplitN(string(out), "\n", n+1)
	return strings.Join(lines[:min(len(lines), n)], "\n")
}
