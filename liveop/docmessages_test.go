package liveop

import (
	"os"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/doctest"
	"github.com/cloudg/cloudg/resilience"
)

// The errors of the live_* keys docs/configuration.md quotes, each a code
// span beginning with its key path, are what liveop.ParseConfig writes for
// a document that makes that mistake; a misspelt live_* key is refused by
// resilience.ParseConfig in the same words, as the document says.
func TestTheDocumentedLiveKeyErrorsAreTheCodes(t *testing.T) {
	data, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	spans := doctest.CodeSpans(string(data))
	for _, c := range []struct {
		begins, doc string
		both        bool // resilience.ParseConfig writes it too
	}{
		{"ratelimit.live_max_concurrent: must be", "live_max_concurrent: 0\n", false},
		{"ratelimit.live_cooldown_secs: unknown key", "live_cooldown_secs: 5\n", true},
	} {
		var got []string
		if _, err := ParseConfig([]byte(c.doc)); err != nil {
			got = append(got, strings.Split(err.Error(), "\n")...)
		}
		var gov []string
		if _, err := resilience.ParseConfig([]byte(c.doc)); err != nil {
			gov = strings.Split(err.Error(), "\n")
		}
		quoted := doctest.Beginning(spans, c.begins)
		if len(quoted) == 0 {
			t.Errorf("docs/configuration.md quotes no error beginning %q", c.begins)
		}
		for _, s := range quoted {
			if !doctest.Quotes(s, got) {
				t.Errorf("docs/configuration.md quotes\n  %s\nliveop.ParseConfig writes\n  %s", s, strings.Join(got, "\n  "))
			}
			if c.both && !doctest.Quotes(s, gov) {
				t.Errorf("docs/configuration.md quotes\n  %s\nresilience.ParseConfig writes\n  %s", s, strings.Join(gov, "\n  "))
			}
		}
	}
}
