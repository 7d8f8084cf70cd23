//go:build go1.25

package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A call nested in a borrower's attempt (a call WithNestedCalls that
// borrowed its caller's slot) borrows that slot in turn; made by a
// goroutine the attempt started and did not wait for, it may go on once
// the borrower's attempt, and the borrower's caller, are over. The slot
// stays taken until it comes back: with max_concurrency 1, the innermost
// call's 10 s and another call's 1 s run one after the other.
func TestASlotLentOnByABorrowerStaysTakenUntilItComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		var mu sync.Mutex
		inFlight, most := 0, 0
		work := func(d time.Duration) func(context.Context) error {
			return func(context.Context) error {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				mu.Unlock()
				time.Sleep(d)
				mu.Lock()
				inFlight--
				mu.Unlock()
				return nil
			}
		}
		inner := make(chan error, 1)
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			return Do(ctx, ec2Subnets, func(ctx context.Context) error {
				go func() { inner <- Do(ctx, iamUsers, work(10*time.Second), WithGovernor(g)) }()
				time.Sleep(time.Second) // the innermost call borrows the slot, and goes on
				return nil
			}, WithGovernor(g), WithNestedCalls())
		}, WithGovernor(g), WithNestedCalls())
		if err != nil {
			t.Fatal(err)
		}
		if err := Do(context.Background(), iamUsers, work(time.Second), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if err := <-inner; err != nil {
			t.Fatalf("the innermost call: %v", err)
		}
		if most != 1 {
			t.Errorf("%d calls in flight at once, want 1: the account's cap is 1, and the innermost call still went on the slot it borrowed", most)
		}
		if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 0 || waiting != 0 {
			t.Fatalf("bulkhead %d used, %d waiting after the calls; want 0, 0", used, waiting)
		}
	})
}
