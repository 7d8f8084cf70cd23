package resilience

import (
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
