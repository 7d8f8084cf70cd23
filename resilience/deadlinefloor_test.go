//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// The floor of a leaf whose min_rps is unset is never below the slowest
// rate deadline_seconds serves, the default floor included: a deadline
// shorter than a token at the default floor (aws 0.2 rps, a token every
// 5 s; azure 0.1, 10 s; gcp 0.05, 20 s) raises the floor to that rate, as
// Config.Validate refuses a min_rps set to the default floor beside that
// deadline. Otherwise throttles slow the leaf to where every call that
// waits for its token is refused for its deadline.
func TestTheDefaultFloorServesTheDeadline(t *testing.T) {
	for _, c := range []struct {
		provider string
		deadline float64
		floor    float64 // the provider's default floor
	}{
		{"aws", 3, 0.2},
		{"azure", 8, 0.1},
		{"gcp", 15, 0.05},
		{"acme", 3, 0.2},
	} {
		// The breaker stays shut through the throttles, which are all the
		// leaf answers here.
		const keep = "breaker_dead_seconds: 0, breaker_threshold: 100, deadline_seconds: "
		doc := func(extra string) string {
			if c.provider == "acme" {
				return fmt.Sprintf("providers: {acme: {%s%v%s}}\n", keep, c.deadline, extra)
			}
			return fmt.Sprintf("%s: {%s%v%s}\n", c.provider, keep, c.deadline, extra)
		}
		// The rule, for a floor the user sets.
		if m := mistakes(t, doc(fmt.Sprintf(", min_rps: %v", c.floor))); len(m) != 1 {
			t.Errorf("%s: min_rps %v beside deadline_seconds %v: %q, want it refused", c.provider, c.floor, c.deadline, m)
		}
		least := slowestRate(c.deadline)
		cfg := accepted(t, doc(""))
		t.Run(c.provider, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, cfg)
				if sp := g.provider(c.provider).set.leaf; sp.Floor != least {
					t.Errorf("%s with deadline_seconds %v: leaf floor %v, want the slowest rate the deadline serves, %v", c.provider, c.deadline, sp.Floor, least)
				}
				sc := Scope{Provider: c.provider, Account: "a", Service: "svc"}
				// Throttles, each after a token is saved, down to the floor.
				for i := 0; i < 20; i++ {
					time.Sleep(time.Duration(2*c.deadline) * time.Second)
					before := rate(g, sc)
					n := 0
					Do(context.Background(), sc, failing(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
					if rate(g, sc) == before && i > 0 {
						break
					}
				}
				if r := rate(g, sc); r*c.deadline <= 1 || math.Abs(r-least) > 1e-12 {
					t.Errorf("%s with deadline_seconds %v: rate after the throttles %v, want %v (a token within the deadline)", c.provider, c.deadline, r, least)
				}
				// The throttles drained the bucket: this call waits a whole
				// token at the floor, and is sent.
				err := Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g))
				var de *DeadlineExceededError
				if errors.As(err, &de) || err != nil {
					t.Errorf("%s with deadline_seconds %v: a call at the floor: %v, want it sent", c.provider, c.deadline, err)
				}
			})
		})
	}
}
