package resilience

import (
	"bytes"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/doctest"
)

// configurationMD returns docs/configuration.md.
func configurationMD(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// errorLines returns the lines of the error ParseConfig refuses doc with,
// one per mistake.
func errorLines(t *testing.T, doc string) []string {
	t.Helper()
	_, err := ParseConfig([]byte(doc))
	if err == nil {
		t.Errorf("%q: accepted", doc)
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// Every error line docs/configuration.md's Validation section shows is a
// line ParseConfig writes, word for word, for a document that makes that
// mistake: the section's block is read from the file, and each of its
// lines must be among the lines of these documents' errors. The lines of
// an AWS name the SDK lacks, which only a program importing cloudgaws
// refuses, and of the SDK's own section (aws.max_retires), which
// cloudgaws.ParseConfig reads, are cloudgaws's to check
// (TestTheDocumentedErrorsOfTheSDKsNames).
func TestTheDocumentedConfigErrorsAreTheCodes(t *testing.T) {
	md := configurationMD(t)
	_, section, _ := strings.Cut(md, "\n## Validation\n")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := doctest.Blocks(section, "")
	if len(blocks) == 0 {
		t.Fatal("docs/configuration.md: the Validation section has no block of error lines")
	}
	var got []string
	for _, doc := range []string{
		"aws: {max_rps: fast, services: {ec2: {brust: 10}}}\n",
		"aws: {max_rps: 5, min_rps: 50, global_max_rps: 100, global_burst: 0.5, account_burst: 50}\n",
		"gcp: {base_delay_seconds: 100, max_backoff_seconds: 1}\nazure: {breaker_cooldown_seconds: 900}\n",
		"aws: {services: {ec2.describeinstances: {max_rps: 1}}}\n",
		"aws: {max_rps: 1e-9}\n",
		"aws: {min_rps: 1, services: {iam: {max_rps: 0.5}}}\n",
		"github: {max_rps: 1}\n",
	} {
		got = append(got, errorLines(t, doc)...)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(blocks[0].Text, "\n"), "\n") {
		if !strings.HasPrefix(line, "ratelimit.") || strings.Contains(line, ": unknown AWS service") || strings.Contains(line, ": unknown operation of ") {
			continue // cloudgaws's
		}
		n++
		if !doctest.Quotes(line, got) {
			t.Errorf("docs/configuration.md's Validation block shows\n  %s\nwhich no document of this test's is refused with; the code writes\n  %s", line, strings.Join(got, "\n  "))
		}
	}
	if n == 0 {
		t.Error("docs/configuration.md: the Validation block has no line of the governor's section")
	}
}

// The errors docs/configuration.md quotes in its text, each a code span
// beginning with a key path, are what ParseConfig writes for a document
// that makes that mistake, but for the words its "..." leaves out.
func TestTheDocumentedConfigErrorsInTheTextAreTheCodes(t *testing.T) {
	spans := doctest.CodeSpans(configurationMD(t))
	for _, c := range []struct{ begins, doc string }{
		{"live_cooldown_seconds: a setting", "aws: {max_retries: 3, retry_mode: standard}\nlive_cooldown_seconds: 5\n"},
		{"rate_limit: unknown key", "aws: {max_retries: 3, retry_mode: standard}\nrate_limit: {aws: {max_rps: 5}}\n"},
		{"aws.max_retries: ambiguous", "aws: {max_retries: 3}\n"},
		{"aws.max_rps: not a setting", "aws: {max_rps: 5, retry_mode: standard}\n"},
		{"ratelimit.aws.<<: unknown key", "base: &b {max_rps: 5}\nratelimit:\n  aws:\n    <<: *b\n"},
		{"ratelimit: document contains", doctest.AliasBomb(1000)},
		{"ratelimit.live_cooldown_secs: unknown key", "live_cooldown_secs: 5\n"},
	} {
		got := errorLines(t, c.doc)
		quoted := doctest.Beginning(spans, c.begins)
		if len(quoted) == 0 {
			t.Errorf("docs/configuration.md quotes no error beginning %q", c.begins)
		}
		for _, s := range quoted {
			if !doctest.Quotes(s, got) {
				t.Errorf("docs/configuration.md quotes\n  %s\nthe code writes\n  %s", s, strings.Join(got, "\n  "))
			}
		}
	}
}

// The Warn lines docs/configuration.md shows, each a block beginning
// "cloudg: ", are what NewGovernor logs, without WithLogger, through
// slog.Default's handler for the configuration its text gives as the
// example (the message, then each attribute as key=value, a value with
// spaces quoted), after the time and level, but for the words their
// "..." leave out.
func TestTheDocumentedWarnLinesAreTheCodes(t *testing.T) {
	var shown []string
	for _, b := range doctest.Blocks(configurationMD(t), "") {
		if strings.HasPrefix(b.Text, "cloudg: ") {
			shown = append(shown, strings.TrimSuffix(b.Text, "\n"))
		}
	}
	if len(shown) != 2 {
		t.Fatalf("docs/configuration.md shows %d Warn lines, want 2 (a built-in rate too slow, one faster)", len(shown))
	}
	// slog.Default, unset, writes through the log package.
	var out bytes.Buffer
	flags, w := log.Flags(), log.Writer()
	log.SetFlags(0)
	log.SetOutput(&out)
	defer func() { log.SetFlags(flags); log.SetOutput(w) }()
	newGov(t, accepted(t, "providers: {github: {deadline_seconds: 5}}\n"))
	newGov(t, accepted(t, "aws: {max_rps: 5}\n"))
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if line, ok := strings.CutPrefix(line, "WARN "); ok {
			got = append(got, line)
		}
	}
	for _, line := range shown {
		if !doctest.Quotes(line, got) {
			t.Errorf("docs/configuration.md shows the Warn line\n  %s\nthe code logs\n  %s", line, strings.Join(got, "\n  "))
		}
	}
}
