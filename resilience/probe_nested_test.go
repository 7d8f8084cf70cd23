//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// A call made inside another's attempt on the same scope (an SDK's
// governed pipeline inside an integration's own Guard), while the
// enclosing call holds the half-open breaker's probe: the nested call is
// let through as the probe in its stead (with Enter or TryEnter, and
// without a slot when its caller holds the last one). Its answer is the
// probe's verdict, at once: a success closes the breaker, a failure
// reopens it. The enclosing call, left without End as the integration
// leaves it (the nested call recorded the attempt's outcome), records
// nothing more: the breaker reports each change once, the success refunds
// the budget once, the failure is one loss. Neither call keeps the probe
// or a slot: after a success the next call goes at once; after a failure
// the next call after the new cooldown goes at once, as the probe.
func TestGuardNestedCallBorrowsTheProbe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		try    bool  // the nested call enters with TryEnter
		answer error // the nested call's answer
	}{
		{"success", false, nil},
		{"success/TryEnter", true, nil},
		{"failure", false, throttle()},
		{"failure/TryEnter", true, throttle()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var changes []string
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithObserver(observe.Func(func(e observe.Event) {
					if e.Kind == observe.BreakerChange {
						mu.Lock()
						changes = append(changes, e.From.String()+">"+e.To.String())
						mu.Unlock()
					}
				})))
				for range 5 {
					sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return throttle() })
				}
				time.Sleep(time.Minute) // the cooldown: the next call is the probe
				g.provider("aws").budget.Take()
				ctx, stats := WithStats(context.Background())
				ctx, ledger := WithLedger(ctx, "t")

				outer, _ := g.Begin(ctx, ec2Vpcs)
				if err := outer.Enter(ctx); err != nil {
					t.Fatalf("the enclosing call, the probe: %v", err)
				}
				attempt := context.WithValue(ctx, g, outer)
				inner, _ := g.Begin(attempt, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
				enter := func() error { return inner.Enter(attempt) }
				if tc.try {
					enter = inner.TryEnter
				}
				if err := enter(); err != nil {
					t.Fatalf("the nested call was refused: %v", err)
				}
				if inner.lease != leaseProbe || outer.lease != leaseLent {
					t.Fatalf("leases: nested %v, enclosing %v; want probe, lent", inner.lease, outer.lease)
				}
				if inner.slot != nil {
					t.Fatal("the nested call took a slot: its caller holds the only one")
				}
				inner.After(tc.answer)
				if st := g.Inspect(ec2Vpcs).Breaker.State; tc.answer == nil && st != state.Closed {
					t.Fatalf("breaker %v once the nested probe's success was reported, want closed", st)
				}
				inner.End(tc.answer) // a failure is recorded here, when its SDK gives up
				outer.Release()      // and no End: the nested call recorded the attempt

				b := g.Inspect(ec2Vpcs).Breaker
				tot := g.Summary(stats).Totals
				mu.Lock()
				got := strings.Join(changes, " ")
				mu.Unlock()
				if tc.answer == nil {
					if b.State != state.Closed {
						t.Fatalf("breaker %+v after the nested probe succeeded, want closed", b)
					}
					if want := "closed>open open>half_open half_open>closed"; got != want {
						t.Errorf("breaker changes %q, want %q", got, want)
					}
					if r := g.Inspect(ec2Vpcs).RetryBudget; r != 499.1 {
						t.Errorf("retry budget %v, want 499.1: one success refunded", r)
					}
					if tot.Lost() != 0 || ledger.Lost() != 0 || tot.Rejected != 0 {
						t.Errorf("stats %+v, ledger %q: want nothing lost", tot, ledger.Describe())
					}
				} else {
					if b.State != state.Open || b.Cooldown != 2*time.Minute {
						t.Fatalf("breaker %+v after the nested probe failed, want open for a doubled cooldown", b)
					}
					if want := "closed>open open>half_open half_open>open"; got != want {
						t.Errorf("breaker changes %q, want %q", got, want)
					}
					if tot.GaveUp != 1 || tot.Lost() != 1 || ledger.Count(LossGaveUp) != 1 || ledger.Lost() != 1 || tot.BreakerTrips != 1 {
						t.Errorf("stats %+v, ledger %q: want the one give-up, one trip", tot, ledger.Describe())
					}
					time.Sleep(b.Wait)
				}
				if tot.Calls != 2 {
					t.Errorf("%d calls counted, want 2: each Guard's Enter counts its own", tot.Calls)
				}

				// The next call goes at once (after a failure, as the probe),
				// with the one slot.
				next, _ := g.Begin(context.Background(), ec2Vpcs)
				wctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				start := time.Now()
				if err := next.Enter(wctx); err != nil || time.Since(start) != 0 {
					t.Fatalf("the next call: %v after %v, want it to go at once", err, time.Since(start))
				}
				if (tc.answer != nil) != (next.lease == leaseProbe) {
					t.Errorf("the next call's lease is %v", next.lease)
				}
				next.After(nil)
				next.End(nil)
				if s := g.Inspect(ec2Vpcs); s.Breaker.State != state.Closed || s.InFlight != 0 {
					t.Errorf("after the next call: breaker %+v, %d in flight", s.Breaker, s.InFlight)
				}
			})
		})
	}
}

// The probe is borrowed only by a call nested in the attempt of the call
// that holds it, on the same breaker: a call of another scope in the
// attempt, or a call of the same scope whose context does not lead back
// to the probe, is refused as before.
func TestGuardProbeIsBorrowedOnlyInsideItsAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for range 5 {
			sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return throttle() })
			sdkLoop(context.Background(), g, ec2Subnets, 1, func() error { return throttle() })
		}
		time.Sleep(time.Minute)
		outer, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := outer.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		other, _ := g.Begin(context.Background(), ec2Subnets)
		if err := other.Enter(context.Background()); err != nil { // ec2Subnets' own probe
			t.Fatal(err)
		}
		attempt := context.WithValue(context.Background(), g, outer)
		var coe *CircuitOpenError
		for _, tc := range []struct {
			name string
			ctx  context.Context
			sc   Scope
		}{
			{"another scope in the attempt", attempt, ec2Subnets},
			{"the same scope outside it", context.Background(), ec2Vpcs},
		} {
			gd, _ := g.Begin(tc.ctx, tc.sc)
			if err := gd.Enter(tc.ctx); !errors.As(err, &coe) {
				t.Errorf("%s: %v, want refused", tc.name, err)
			}
			gd.End(nil)
			gd, _ = g.Begin(tc.ctx, tc.sc)
			if err := gd.TryEnter(); !errors.As(err, &coe) {
				t.Errorf("%s, TryEnter: %v, want refused", tc.name, err)
			}
			gd.End(nil)
		}
		if outer.lease != leaseProbe {
			t.Errorf("the enclosing call's lease is %v, want probe", outer.lease)
		}
		outer.After(nil)
		outer.End(nil)
		other.After(nil)
		other.End(nil)
	})
}

// Two calls nested in the same attempt at once, both refused by the
// half-open breaker whose probe the enclosing call holds: one borrows the
// probe, the other is refused, as any call while the probe is out. And a
// call nested two levels deep (its caller, of another scope, was made in
// the probe's attempt) borrows the probe of its caller's caller.
func TestGuardNestedProbeIsBorrowedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for range 5 {
			sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return throttle() })
		}
		time.Sleep(time.Minute)
		outer, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := outer.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		attempt := context.WithValue(context.Background(), g, outer)
		errs := make(chan error, 2)
		inners := make([]*Guard, 2)
		for i := range inners {
			inners[i], _ = g.Begin(attempt, ec2Vpcs)
			go func() { errs <- inners[i].Enter(attempt) }()
		}
		var let, refused int
		for range inners {
			var coe *CircuitOpenError
			switch err := <-errs; {
			case err == nil:
				let++
			case errors.As(err, &coe):
				refused++
			default:
				t.Fatalf("a nested call: %v", err)
			}
		}
		if let != 1 || refused != 1 || outer.lease != leaseLent {
			t.Fatalf("%d let through, %d refused, the enclosing lease %v; want 1, 1, lent", let, refused, outer.lease)
		}
		for _, in := range inners {
			in.End(nil) // the one let through: its success closes the breaker
		}
		if s := g.Inspect(ec2Vpcs).Breaker; s.State != state.Closed {
			t.Fatalf("breaker %+v after the nested probe's success", s)
		}
		outer.Release()

		// Two levels deep.
		for range 5 {
			sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return throttle() })
		}
		time.Sleep(g.Inspect(ec2Vpcs).Breaker.Wait)
		top, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := top.Enter(context.Background()); err != nil || top.lease != leaseProbe {
			t.Fatalf("the probe: %v, lease %v", err, top.lease)
		}
		ctx1 := context.WithValue(context.Background(), g, top)
		mid, _ := g.Begin(ctx1, Scope{Provider: "aws", Account: "123456789012", Service: "sts"})
		if err := mid.Enter(ctx1); err != nil {
			t.Fatal(err)
		}
		ctx2 := context.WithValue(ctx1, g, mid)
		deep, _ := g.Begin(ctx2, ec2Vpcs)
		if err := deep.Enter(ctx2); err != nil || deep.lease != leaseProbe || top.lease != leaseLent {
			t.Fatalf("two levels deep: %v, leases %v and %v; want probe, lent", err, deep.lease, top.lease)
		}
		deep.After(nil)
		deep.End(nil) // it holds a slot: its success is recorded here
		if s := g.Inspect(ec2Vpcs).Breaker; s.State != state.Closed {
			t.Fatalf("breaker %+v after the probe two levels deep succeeded", s)
		}
		mid.After(nil)
		mid.End(nil)
		top.Release()
	})
}

// A call nested in the attempt of the half-open breaker's probe borrows
// the probe after a Configure that kept the breaker (only max_concurrency
// changed) during that attempt: the enclosing call's entry is retired,
// the nested call looks up the live one, and both have the same breaker.
// Before, the lender was found by entry, and the nested call was refused
// by the probe its own caller held ("circuit open ...; retry in 10s").
func TestANestedCallBorrowsTheProbeAcrossAConfigureThatKeptTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := func(conc int) Config {
			return Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 10, MaxConcurrency: conc}}
		}
		g := newGov(t, cfg(10))
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		if st := g.Inspect(ec2Vpcs).Breaker.State; st != state.Open {
			t.Fatalf("the breaker is %v, want open", st)
		}
		time.Sleep(10 * time.Second)
		ctx := context.Background()
		outer, _ := g.Begin(ctx, ec2Vpcs)
		if err := outer.Enter(ctx); err != nil || outer.lease != leaseProbe {
			t.Fatalf("the enclosing call: %v, lease %v; want the probe", err, outer.lease)
		}
		if err := g.Configure(cfg(20)); err != nil {
			t.Fatal(err)
		}
		attempt := context.WithValue(ctx, g, outer)
		inner, _ := g.Begin(attempt, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
		if inner.e == outer.e || inner.e.breaker != outer.e.breaker {
			t.Fatal("setup: want a new entry with the same breaker")
		}
		if err := inner.Enter(attempt); err != nil {
			t.Fatalf("the nested call, inside the probe's attempt: %v; want it to borrow the probe", err)
		}
		inner.End(nil)
		outer.End(nil)
		if st := g.Inspect(ec2Vpcs).Breaker.State; st != state.Closed {
			t.Errorf("after the probe's success the breaker is %v, want closed", st)
		}
	})
}
