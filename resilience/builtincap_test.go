package resilience

import (
	"strings"
	"testing"
)

// A built-in entry never runs faster than a rate the user writes at a
// wider level: a service's max_rps caps its built-in operations (gcp's
// cloudasset.ListAssets, 1.5 rps, SearchAll*, 6 rps), a provider's caps
// its built-in services (aws's ec2, sts; azure's network; github's
// search), each taking at most the burst in force there where its rate is
// capped; an entry the user writes at the narrower level still wins. The
// user's cap is what Governor.Inspect shows as each leaf's ceiling, and
// its burst as a new leaf's tokens.
func TestAUserRateAtAWiderLevelCapsABuiltInEntry(t *testing.T) {
	type leaf struct{ ceiling, burst float64 }
	for _, c := range []struct {
		doc, provider string
		leaves        map[string]leaf // service or service.Operation
	}{
		{"gcp: {services: {cloudasset: {max_rps: 0.5}}}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {0.5, 1}, "cloudasset.SearchAllResources": {0.5, 1},
			"cloudasset.SearchAllIamPolicies": {0.5, 1}, "cloudasset.AnalyzeIamPolicy": {0.5, 1},
		}},
		// A built-in rate below the user's is kept, with its burst; one
		// above it takes the user's rate and at most its burst.
		{"gcp: {services: {cloudasset: {max_rps: 3}}}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {1.5, 10}, "cloudasset.SearchAllResources": {3, 6},
		}},
		{"gcp: {services: {cloudasset: {max_rps: 0.5, burst: 2}}}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {0.5, 2}, "cloudasset.SearchAllResources": {0.5, 2},
		}},
		// A burst the user writes caps a built-in burst above it.
		{"gcp: {services: {cloudasset: {burst: 4}}}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {1.5, 4}, "cloudasset.SearchAllResources": {6, 4},
		}},
		// The user's operation entry wins over the user's service entry.
		{"gcp: {services: {cloudasset: {max_rps: 0.5}, cloudasset.ListAssets: {max_rps: 1}}}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {1, 2}, "cloudasset.SearchAllResources": {0.5, 1},
		}},
		{"gcp: {max_rps: 1}\n", "gcp", map[string]leaf{
			"cloudasset.ListAssets": {1, 10}, "cloudasset.SearchAllResources": {1, 20}, "compute": {1, 20},
		}},
		{"aws: {max_rps: 1}\n", "aws", map[string]leaf{
			"ec2.DescribeInstances": {1, 40}, "iam": {1, 40}, "sts": {1, 40}, "controltower": {1, 5}, "secretsmanager.ListSecrets": {1, 40},
		}},
		{"aws: {max_rps: 30}\n", "aws", map[string]leaf{
			"sts": {30, 40}, "ec2.DescribeInstances": {20, 100}, "iam": {10, 40},
		}},
		// The user's service entry wins over the user's provider max_rps.
		{"aws: {max_rps: 1, services: {ec2: {max_rps: 5}}}\n", "aws", map[string]leaf{
			"ec2.DescribeInstances": {5, 10}, "iam": {1, 40},
		}},
		{"azure: {max_rps: 0.2}\n", "azure", map[string]leaf{
			"storage": {0.2, 20}, "network": {0.2, 100},
		}},
		{"providers: {github: {max_rps: 0.1, burst: 1}}\n", "github", map[string]leaf{
			"code_search": {0.1, 1}, "search": {0.1, 1}, "rest": {0.1, 1},
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
}

// What the configuration check says of a min_rps above the max_rps in
// force for a built-in operation is the rate that holds there: the user's
// service cap, not the built-in rate it caps.
func TestTheCeilingInForceOfACappedBuiltInIsTheUsersRate(t *testing.T) {
	wantMistakes(t, "gcp: {services: {cloudasset: {max_rps: 0.5}, cloudasset.ListAssets: {min_rps: 1}}}\n",
		"ratelimit.gcp.services.cloudasset.ListAssets.min_rps: 1 rps is above the max_rps in force here (0.5 rps)")
	wantMistakes(t, "aws: {max_rps: 1, services: {ec2: {min_rps: 2}}}\n",
		"ratelimit.aws.services.ec2.min_rps: 2 rps is above the max_rps in force here (1 rps)")
}
