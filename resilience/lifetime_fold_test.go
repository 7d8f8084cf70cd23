//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A service's lifetime counts only grow: the calls of an operation that
// only counted calls stay its service's when the reclaimer drops the
// operation's idle scope, since the service has lifetime counters (an
// earlier throttle of another operation made them). Before, they went to
// the totals alone, and Summary(nil) and Lifetime showed the service with
// fewer calls after the sweep than before it.
func TestReclaimKeepsAServiceItsCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{}, WithReclaimAfter(time.Second))
		ok := func(context.Context) error { return nil }
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		for range 3 {
			Do(context.Background(), ec2Subnets, ok, WithGovernor(g))
		}
		svc := ec2Subnets.ServiceScope()
		before := g.Summary(nil)
		if before.Scopes[svc].Calls != 4 || before.Totals.Calls != 4 {
			t.Fatalf("setup: %v calls of %d in all, want 4 of 4", before.Scopes[svc].Calls, before.Totals.Calls)
		}
		time.Sleep(2 * time.Second)
		g.provider("aws").scopes.sweep(g.now(), 0, 1<<20, time.Now().Add(time.Hour))
		if g.peekEntry(ec2Subnets) {
			t.Fatal("setup: the idle DescribeSubnets scope was not reclaimed")
		}
		after := g.Summary(nil)
		_, life := g.Lifetime(svc)
		if after.Scopes[svc].Calls != 4 || life[0].Calls != 4 || after.Totals.Calls != 4 {
			t.Fatalf("after the sweep, Summary(nil) counts %d calls of %v (Lifetime %d), %d in all; want 4 of 4",
				after.Scopes[svc].Calls, svc, life[0].Calls, after.Totals.Calls)
		}
	})
}

// peekEntry reports whether sc's leaf has a live entry.
func (g *Governor) peekEntry(sc Scope) bool {
	e, _ := g.provider(sc.Provider).scopes.peek(sc)
	return e != nil
}
