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
		g.provider("aws").scopes.sweep(g.now(), 0, 1<<20, time.Now().Add(time.Hour), nil)
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

// The lifetime's readers count every call once when calls move while
// they read. Each case moves the calls of the scopes the read has listed
// (testHookLive runs between a provider's listing and the reading of its
// entries) to a place the read has gone past: a Configure that changes
// the buckets folds them into the totals, one that changes only the
// breakers moves them to new entries of a table the read does not go
// over, and a sweep of the reclaimer folds an idle scope's into the
// totals. Before, Summary(nil) and Lifetime then reported 0 of the 3
// calls, for that one read.
func TestLifetimeReadersCountCallsMovedWhileTheyRead(t *testing.T) {
	cases := []struct {
		name string
		move func(t *testing.T, g *Governor)
	}{
		{"a Configure that changes the buckets", func(t *testing.T, g *Governor) {
			if err := g.Configure(Config{AWS: ProviderConfig{MaxRPS: 3}}); err != nil {
				t.Error(err)
			}
		}},
		{"a Configure that changes the buckets and breakers", func(t *testing.T, g *Governor) {
			if err := g.Configure(Config{AWS: ProviderConfig{MaxRPS: 3, BreakerThreshold: 4}}); err != nil {
				t.Error(err)
			}
		}},
		{"a Configure that changes the breakers", func(t *testing.T, g *Governor) {
			if err := g.Configure(Config{AWS: ProviderConfig{BreakerThreshold: 4}}); err != nil {
				t.Error(err)
			}
		}},
		{"a sweep", func(t *testing.T, g *Governor) {
			time.Sleep(2 * time.Second)
			g.provider("aws").scopes.sweep(g.now(), 0, 1<<20, time.Now().Add(time.Hour), nil)
			if g.peekEntry(ec2Subnets) {
				t.Error("setup: the idle scope was not reclaimed")
			}
		}},
	}
	reads := []struct {
		name string
		read func(g *Governor) (totals, scope int64)
	}{
		{"Summary(nil)", func(g *Governor) (int64, int64) {
			s := g.Summary(nil)
			return s.Totals.Calls, s.Scopes[ec2Subnets.ServiceScope()].Calls
		}},
		{"Lifetime", func(g *Governor) (int64, int64) {
			totals, scopes := g.Lifetime(ec2Subnets)
			return totals.Calls, scopes[0].Calls
		}},
	}
	for _, c := range cases {
		for _, r := range reads {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{}, WithReclaimAfter(time.Second))
					ok := func(context.Context) error { return nil }
					for range 3 {
						Do(context.Background(), ec2Subnets, ok, WithGovernor(g))
					}
					moved := false
					testHookLive = func() {
						if !moved {
							moved = true
							c.move(t, g)
						}
					}
					defer func() { testHookLive = nil }()
					totals, scope := r.read(g)
					testHookLive = nil
					if !moved {
						t.Fatal("setup: the read listed no provider")
					}
					// What a read after the move reads (the calls of a
					// scope that had no lifetime counters are the
					// totals' alone once folded).
					_, wantScope := r.read(g)
					if totals != 3 || scope != wantScope {
						t.Fatalf("%s beside %s read %d calls in all, %d of the service; 3 were made (want %d of the service, as read after it)", r.name, c.name, totals, scope, wantScope)
					}
				})
			})
		}
	}
}
