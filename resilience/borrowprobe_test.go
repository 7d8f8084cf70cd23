//go:build go1.26

package resilience

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// A call nested in the attempt of a half-open breaker's probe, on the
// same scope, goes as the probe in its caller's stead, and on its
// caller's slot when its caller holds the last one (see Guard.Enter). Its
// success is the probe's verdict at After, though it goes on a borrowed
// slot (which it may hold across its pages, as a slot of its own), where
// a call holding a slot of its own records it at End: it closes the
// breaker once, and neither its End nor its caller's End, which records
// the attempt as well, reports a second change. No probe is left out: the
// caller's next page asks the breaker again and goes with a pass, and a
// call after both goes at once, with nothing in flight.
func TestABorrowersProbeSuccessClosesTheBreakerOnceAndLeavesNoProbeOut(t *testing.T) {
	for _, pages := range []int{1, 2} {
		t.Run(map[int]string{1: "one page", 2: "two pages on the loan"}[pages], func(t *testing.T) {
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
				ctx := context.Background()
				outer, _ := g.Begin(ctx, ec2Vpcs)
				if err := outer.Enter(ctx); err != nil || outer.lease != leaseProbe {
					t.Fatalf("the enclosing call: %v, lease %v; want the probe", err, outer.lease)
				}
				attempt := context.WithValue(ctx, g, outer)
				inner, _ := g.Begin(attempt, ec2Vpcs)
				for page := range pages {
					if err := inner.Enter(attempt); err != nil {
						t.Fatalf("page %d of the nested call: %v", page+1, err)
					}
					if inner.slot != nil || inner.loan != outer.lends() || inner.lease != leaseProbe {
						t.Fatalf("page %d of the nested call: slot %p, a loan of %p (the caller's slot: %p), lease %v; want the caller's slot and the probe", page+1, inner.slot, inner.loan, outer.lends(), inner.lease)
					}
					inner.After(nil)
					if st := g.Inspect(ec2Vpcs).Breaker.State; st != state.Closed {
						t.Fatalf("breaker %v once page %d of the nested probe succeeded, want closed: its verdict", st, page+1)
					}
				}
				inner.End(nil)
				if outer.lease != leaseLent {
					t.Fatalf("the enclosing call's lease %v, want lent", outer.lease)
				}
				outer.After(nil) // recorded as well
				if err := outer.Enter(ctx); err != nil || outer.lease != leaseProbe && outer.lease != leasePass {
					t.Fatalf("the enclosing call's next page: %v, lease %v", err, outer.lease)
				}
				outer.After(nil)
				outer.End(nil)
				mu.Lock()
				got := strings.Join(changes, " ")
				mu.Unlock()
				if want := "closed>open open>half_open half_open>closed"; got != want {
					t.Errorf("breaker changes %q, want %q: the probe's success closes it once", got, want)
				}
				next, _ := g.Begin(ctx, ec2Vpcs)
				start := time.Now()
				if err := next.Enter(ctx); err != nil || time.Since(start) != 0 || next.lease != leasePass {
					t.Fatalf("the next call: %v after %v, lease %v; want it through at once with a pass: no probe left out", err, time.Since(start), next.lease)
				}
				next.After(nil)
				next.End(nil)
				if s := g.Inspect(ec2Vpcs); s.Breaker.State != state.Closed || s.InFlight != 0 {
					t.Errorf("after the calls: breaker %+v, %d in flight; want closed, 0", s.Breaker, s.InFlight)
				}
			})
		})
	}
}
