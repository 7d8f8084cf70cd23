// Package childtest runs a test in a child process with a real-time
// limit, for tests whose failure is a goroutine spinning at one instant of
// a testing/synctest bubble's clock: virtual time never advances, and the
// test would hang the whole package instead of failing.
package childtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// env names the test a child process runs.
const env = "CLOUDG_CHILD_TEST"

// InChild reports whether t runs in the child process InChild starts. In
// the parent it runs t there alone, fails t if the child fails or
// outlives timeout (real time), and returns false; the caller returns.
//
//	if !childtest.InChild(t, time.Minute) {
//		return
//	}
func InChild(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	if os.Getenv(env) == t.Name() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the test did not end within %v of real time (a goroutine spins at one instant of the bubble's clock)\n%s", timeout, head(out, 20))
	}
	if err != nil {
		t.Fatalf("in a child process: %v\n%s", err, head(out, 20))
	}
	return false
}

// head returns the first n lines of out.
func head(out []byte, n int) string {
	lines := strings.SplitN(string(out), "\n", n+1)
	return strings.Join(lines[:min(len(lines), n)], "\n")
}
