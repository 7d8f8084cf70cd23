//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A half-open breaker's probe that EndDenied ends gives the breaker its
// verdict: the provider answered, the service is reachable, and the
// breaker closes, so that the next call is let through rather than
// refused while a probe is out that no one will decide. So with After
// having read the answer or not, and with the probe's slot still held
// (EndDenied gives it back).
func TestEndDeniedGivesTheProbesVerdict(t *testing.T) {
	for _, tc := range []struct {
		name          string
		after, holdOn bool
	}{
		{"After read the answer", true, false},
		{"After did not see it", false, false},
		{"the slot still held", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				openBreaker(t, g)
				time.Sleep(g.Inspect(ec2Subnets).Breaker.Wait + time.Second)
				ctx, stats := WithStats(context.Background())
				gd, _ := g.Begin(ctx, ec2Subnets)
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				if s := g.Inspect(ec2Subnets).Breaker.State; s != state.HalfOpen {
					t.Fatalf("the breaker is %v as the probe is out, want half-open", s)
				}
				if !tc.holdOn {
					gd.Release()
				}
				if tc.after {
					gd.After(accessDenied())
				}
				gd.EndDenied(accessDenied())
				s := g.Inspect(ec2Subnets)
				if s.Breaker.State != state.Closed || s.InFlight != 0 {
					t.Errorf("after the probe's EndDenied: breaker %v, %d slots held; want closed, none", s.Breaker.State, s.InFlight)
				}
				if c := g.Summary(stats).Totals; c.Denied != 1 || c.Lost() != 1 {
					t.Errorf("totals %v, want the probe lost as denied", c)
				}
				gd2, _ := g.Begin(context.Background(), ec2Subnets)
				if err := gd2.TryEnter(); err != nil {
					t.Errorf("the next call: %v, want it let through", err)
				}
				gd2.End(nil)
			})
		})
	}
}
