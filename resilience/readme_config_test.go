package resilience_test

import (
	"os"
	"strings"
	"testing"

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
	blocks := yamlBlocks(string(data))
	n := 0
	for _, b := range blocks {
		if !strings.HasPrefix(b.text, "ratelimit:") {
			continue
		}
		n++
		if _, err := resilience.ParseConfig([]byte(b.text)); err != nil {
			t.Errorf("README.md:%d: resilience.ParseConfig: %v", b.line, err)
		}
		if _, err := liveop.ParseConfig([]byte(b.text)); err != nil {
			t.Errorf("README.md:%d: liveop.ParseConfig: %v", b.line, err)
		}
	}
	// The configuration reference and the other providers' example.
	if n < 2 {
		t.Fatalf("README.md: %d ratelimit blocks found, want at least 2 (the reference and the other providers')", n)
	}
}

type fenced struct {
	line int // of the block's first line
	text string
}

// yamlBlocks returns the text of each ```yaml block of a Markdown text.
func yamlBlocks(md string) []fenced {
	var out []fenced
	var cur *strings.Builder
	start := 0
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```yaml":
			cur, start = &strings.Builder{}, i+2
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, fenced{start, cur.String()})
			cur = nil
		case cur != nil:
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	return out
}
