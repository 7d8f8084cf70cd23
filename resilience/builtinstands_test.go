package resilience

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// A provider's max_rps is its default leaf rate, and a built-in service
// or operation entry a more specific default: it stands whatever the user
// writes at a wider level, so that a user raising the provider's rate
// (aws: {max_rps: 30}, an account that allows more) slows no built-in
// entry (sts stays at 50 rps, azure's network at burst 200), and one
// lowering it leaves the built-in entries faster (warned of, see
// TestAWiderRateBelowABuiltInIsWarnedOf). What the user writes at the
// entry's own level wins over it.
func TestABuiltInEntryStandsUnderAWiderUserRate(t *testing.T) {
	type leaf struct{ ceiling, burst float64 }
	for _, c := range []struct {
		doc, provider string
		leaves        map[string]leaf // service or service.Operation
	}{
		{"aws: {max_rps: 30}\n", "aws", map[string]leaf{
			"sts": {50, 100}, "ec2.DescribeInstances": {20, 100}, "iam": {10, 40},
		}},
		{"aws: {max_rps: 1}\n", "aws", map[string]leaf{
			"sts": {50, 100}, "ec2.DescribeInstances": {20, 100},
		}},
		{"azure: {max_rps: 30, burst: 40}\n", "azure", map[string]leaf{
			"network": {30, 200},
		}},
		{"gcp: {services: {cloudasset: {max_rps: 0.5}}}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {1.5, 10}, "cloudasset.SearchAllResources": {6, 20},
		}},
		// The user's entry at the narrower level wins.
		{"gcp: {services: {cloudasset: {max_rps: 0.5}, cloudasset.ListAssets: {max_rps: 0.5}}}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {0.5, 1},
		}},
	} {
		g := newGov(t, accepted(t, c.doc))
		for k, want := range c.leaves {
			svc, op, _ := strings.Cut(k, ".")
			s := g.Inspect(Scope{Provider: c.provider, Account: "a", Region: "r", Service: svc, Operation: op})
			if got := (leaf{s.Leaf.Ceiling, s.Leaf.Tokens}); got != want {
				t.Errorf("%s: %s: max_rps %v, burst %v; want %v, %v", strings.TrimSpace(c.doc), k, got.ceiling, got.burst, want.ceiling, want.burst)
			}
		}
	}
	// The configuration check's "max_rps in force" is the built-in rate,
	// and says whence.
	wantMistakes(t, "gcp: {services: {cloudasset: {max_rps: 0.5}, cloudasset.ListAssets: {min_rps: 2}}}\n",
		"ratelimit.gcp.services.cloudasset.ListAssets.min_rps: 2 rps is above the max_rps in force here (1.5 rps, built in)")
}

// fastLine is the Warn line of a built-in entry that runs faster than the
// user's max_rps set wider.
func fastLine(setting string, rate float64, builtIn string, builtInRate float64, provider string) string {
	return fmt.Sprintf("cloudg: a built-in rate runs faster than a max_rps set above it setting=%s.max_rps rps=%v built_in=%s.max_rps built_in_rps=%v "+
		"fix=set %s.max_rps to hold it to your rate, or %s.global_max_rps or %s.account_max_rps for a hard cap over the provider or each account",
		setting, rate, builtIn, builtInRate, builtIn, provider, provider)
}

// A max_rps the user writes at a wider level (a provider's, or a
// service's with built-in operation entries) below a built-in entry's
// rate leaves that entry faster than the user's number: NewGovernor and
// Configure say so at Warn, once for each such entry a configuration
// brings, naming the user's setting and rate, the built-in entry and its
// rate, and the fixes. No warning where the user's rate is at or above
// the built-in, where the provider is disabled, or where the user writes
// the entry itself.
func TestAWiderRateBelowABuiltInIsWarnedOf(t *testing.T) {
	sts := fastLine("ratelimit.aws", 30, "ratelimit.aws.services.sts", 50, "ratelimit.aws")
	for _, c := range []struct {
		doc  string
		want []string
	}{
		{"aws: {max_rps: 30}\n", []string{sts}},
		{"aws: {max_rps: 5}\n", []string{
			fastLine("ratelimit.aws", 5, "ratelimit.aws.services.ec2", 20, "ratelimit.aws"),
			fastLine("ratelimit.aws", 5, "ratelimit.aws.services.iam", 10, "ratelimit.aws"),
			fastLine("ratelimit.aws", 5, "ratelimit.aws.services.lambda", 15, "ratelimit.aws"),
			fastLine("ratelimit.aws", 5, "ratelimit.aws.services.sts", 50, "ratelimit.aws"),
		}},
		{"gcp: {services: {cloudasset: {max_rps: 0.5}}}\n", []string{
			fastLine("ratelimit.gcp.services.cloudasset", 0.5, "ratelimit.gcp.services.cloudasset.ListAssets", 1.5, "ratelimit.gcp"),
			fastLine("ratelimit.gcp.services.cloudasset", 0.5, "ratelimit.gcp.services.cloudasset.SearchAllIamPolicies", 6, "ratelimit.gcp"),
			fastLine("ratelimit.gcp.services.cloudasset", 0.5, "ratelimit.gcp.services.cloudasset.SearchAllResources", 6, "ratelimit.gcp"),
		}},
		// A service's max_rps is nearer than the provider's.
		{"gcp: {max_rps: 0.5, services: {cloudasset: {max_rps: 2}, cloudasset.SearchAllResources: {max_rps: 1}}}\n", []string{
			fastLine("ratelimit.gcp.services.cloudasset", 2, "ratelimit.gcp.services.cloudasset.SearchAllIamPolicies", 6, "ratelimit.gcp"),
		}},
		{"providers: {github: {max_rps: 0.2}}\n", []string{
			fastLine("ratelimit.providers.github", 0.2, "ratelimit.providers.github.services.search", 0.5, "ratelimit.providers.github"),
		}},
		// Above or at every built-in rate: no warning.
		{"aws: {max_rps: 60}\n", nil},
		{"aws: {max_rps: 50, services: {ec2: {max_rps: 20}}}\n", nil},
		// A disabled provider: no warning.
		{"aws: {max_rps: 5, enabled: false}\n", nil},
		{"enabled: false\naws: {max_rps: 5}\n", nil},
		// The user writes the narrower entries: no warning.
		{"aws: {max_rps: 30, services: {sts: {max_rps: 40}}}\n", nil},
		{"gcp: {services: {cloudasset: {max_rps: 0.5}, cloudasset.ListAssets: {max_rps: 0.5}, cloudasset.SearchAllResources: {max_rps: 0.5}, cloudasset.SearchAllIamPolicies: {max_rps: 0.5}}}\n", nil},
	} {
		w := &warnings{}
		newGov(t, accepted(t, c.doc), WithLogger(slog.New(w)))
		if got := w.take(); !slices.Equal(got, c.want) {
			t.Errorf("%q: NewGovernor warned:\n%q\nwant:\n%q", c.doc, got, c.want)
		}
	}
	// Once per configuration: a Configure that keeps it says nothing
	// again; one that brings it back, or changes the user's rate, does.
	w := &warnings{}
	g := newGov(t, accepted(t, "aws: {max_rps: 30}\n"), WithLogger(slog.New(w)))
	w.take()
	for _, c := range []struct {
		doc  string
		want []string
	}{
		{"aws: {max_rps: 30}\n", nil},
		{"aws: {max_rps: 30}\nazure: {max_rps: 40}\n", nil},
		{"azure: {max_rps: 40}\n", nil},
		{"aws: {max_rps: 30}\n", []string{sts}},
		{"aws: {max_rps: 45}\n", []string{fastLine("ratelimit.aws", 45, "ratelimit.aws.services.sts", 50, "ratelimit.aws")}},
	} {
		if err := g.Configure(accepted(t, c.doc)); err != nil {
			t.Fatal(err)
		}
		if got := w.take(); !slices.Equal(got, c.want) {
			t.Errorf("Configure(%q) warned:\n%q\nwant:\n%q", c.doc, got, c.want)
		}
	}
}
