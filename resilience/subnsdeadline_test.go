package resilience

import (
	"math"
	"testing"
)

// A deadline_seconds below a nanosecond is one (orSeconds), and the rules
// that read it read that nanosecond: the floor of a leaf whose min_rps is
// unset, never below the slowest rate the deadline serves, is a number,
// there its ceiling (no rate serves a call that waits within a
// nanosecond), not NaN, which a bucket would carry into every decrease;
// and a rate too slow for it is refused with values to set that are
// numbers and are accepted.
func TestASubNanosecondDeadlineIsANanosecondToTheFloors(t *testing.T) {
	wantMistakes(t, "aws: {deadline_seconds: 5e-324, max_rps: 1}\n",
		"ratelimit.aws.max_rps: 1 rps is a token every 1 s, longer than deadline_seconds (5e-324 s): a call that waits for one would be refused; set it to 1.01e+09 rps or more, or ratelimit.aws.deadline_seconds to 1.01 s or more")
	accepted(t, "aws: {deadline_seconds: 5e-324, max_rps: 1.01e9}\n")
	accepted(t, "aws: {deadline_seconds: 1.01, max_rps: 1}\n")

	g := newGov(t, accepted(t, "aws: {deadline_seconds: 5e-324}\nproviders: {github: {deadline_seconds: 1e-320}}\n"))
	for _, c := range []struct {
		provider string
		keys     []Scope
	}{
		{"aws", []Scope{{}, {Service: "ec2", Operation: "DescribeVpcs"}, {Service: "controltower"}}},
		{"github", []Scope{{}, {Service: "code_search"}, {Service: "search"}}},
	} {
		for _, k := range c.keys {
			sp := g.provider(c.provider).set.leafSpec(k)
			if math.IsNaN(sp.Floor) || sp.Floor != sp.Rate {
				t.Errorf("%s %+v with a sub-nanosecond deadline: floor %v, rate %v; want the floor at the rate", c.provider, k, sp.Floor, sp.Rate)
			}
		}
	}
}
