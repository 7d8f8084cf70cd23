//go:build go1.25

package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A call lends one slot at a time to the calls nested in its attempts
// (see Guard.Enter), whichever attempt they were nested in. A call nested
// in its first attempt borrows its slot (the account's cap, 2, is full:
// another call holds the other slot until 2 s) and goes on, 10 s, once
// that attempt failed at 1 s: the slot stays taken for it. The retry
// takes the slot the other call gave back, and a call nested in it,
// finding no slot free and the earlier loan still out, waits for a free
// slot or for that loan to come back, as a second call nested in the same
// attempt does: it goes at 10 s, as the first nested call gives its slot
// back. The account stays within its cap, and every call ends: nothing
// waits for good while the earlier nested call goes on to its end.
func TestACallNestedInALaterAttemptWaitsForAnEarlierLoanStillOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
		var fl flights
		work := fl.work
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { _ = Do(context.Background(), iamUsers, work(2*time.Second), WithGovernor(g)) })
		synctest.Wait()
		first := make(chan error, 1)
		var second time.Duration
		attempts := 0
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			if attempts++; attempts == 1 {
				go func() { first <- Do(ctx, ec2Subnets, work(10*time.Second), WithGovernor(g)) }()
				time.Sleep(time.Second) // the nested call borrows the slot, and goes on
				return transientErr()
			}
			return Do(ctx, ec2Subnets, func(ctx context.Context) error {
				second = time.Since(start)
				return work(time.Second)(ctx)
			}, WithGovernor(g))
		}, WithGovernor(g), WithNestedCalls())
		if err != nil || attempts != 2 {
			t.Fatalf("the enclosing call: %v after %d attempts; want a success at the retry", err, attempts)
		}
		if err := <-first; err != nil {
			t.Fatalf("the call nested in the first attempt: %v", err)
		}
		wg.Wait()
		if second != 10*time.Second {
			t.Errorf("the call nested in the retry went at %v, want at 10s: when the loan of the first attempt came back", second)
		}
		if fl.most() != 2 {
			t.Errorf("%d calls in flight at once, want 2: the account's cap", fl.most())
		}
		if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 0 || waiting != 0 {
			t.Fatalf("bulkhead %d used, %d waiting after the calls; want 0, 0", used, waiting)
		}
	})
}
