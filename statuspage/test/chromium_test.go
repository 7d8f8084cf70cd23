package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// chromium returns the path of the Chromium to run: $CLOUDG_CHROMIUM, or
// chromium (Debian's package) or chromium-browser on the PATH. Without
// one the test fails, saying how to install it: the browser test is part
// of the suite, never skipped.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CLOUDG_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: the status page's browser test needs one. Run `source scripts/test.d/chromium.sh` " +
		"from the repository's root (it installs Debian's chromium package, as scripts/test does), " +
		"or set CLOUDG_CHROMIUM to a Chromium or Chrome binary.")
	return ""
}

// browse runs headless Chromium on url in a window of width x height, with
// a fresh profile and no background connection, adding the given
// arguments (--dump-dom, --screenshot=...), and returns what it printed on
// its standard output.
func browse(t *testing.T, bin, url string, width, height int, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	profile := t.TempDir()
	all := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--mute-audio", "--force-device-scale-factor=1",
		"--user-data-dir=" + filepath.Join(profile, "profile"),
		"--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height),
	}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, all, err, stderr.b)
	}
	return out
}

// limitedBuffer keeps the first 16 KiB written to it: Chromium's log.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 16<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}
