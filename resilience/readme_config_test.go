package resilience_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/doctest"
	"github.com/cloudg/cloudg/liveop"
	"github.com/cloudg/cloudg/resilience"
)

// The configuration the README shows is configuration that loads: every
// YAML block of the repository's README that is a ratelimit section
// parses and validates, with resilience.ParseConfig and (for its live_*
// keys) liveop.ParseConfig, so that a user who copies one gets no error.
func TestREADMEConfigBlocksParse(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := doctest.Blocks(string(data), "yaml")
	n := 0
	for _, b := range blocks {
		if !strings.HasPrefix(b.Text, "ratelimit:") {
			continue
		}
		n++
		if _, err := resilience.ParseConfig([]byte(b.Text)); err != nil {
			t.Errorf("README.md:%d: resilience.ParseConfig: %v", b.Line, err)
		}
		if _, err := liveop.ParseConfig([]byte(b.Text)); err != nil {
			t.Errorf("README.md:%d: liveop.ParseConfig: %v", b.Line, err)
		}
	}
	// The configuration reference and the other providers' example.
	if n < 2 {
		t.Fatalf("README.md: %d ratelimit blocks found, want at least 2 (the reference and the other providers')", n)
	}
}
