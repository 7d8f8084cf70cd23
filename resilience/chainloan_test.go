//go:build go1.25

package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// flights counts the calls in flight at once: work(d) is a call's
// function that takes d, and most the most that ran at once.
type flights struct {
	mu        sync.Mutex
	now, peak int
}

func (f *flights) work(d time.Duration) func(context.Context) error {
	return func(context.Context) error {
		f.mu.Lock()
		f.now++
		f.peak = max(f.peak, f.now)
		f.mu.Unlock()
		time.Sleep(d)
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
		return nil
	}
}

func (f *flights) most() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}

// A call nested in a borrower's attempt (a call WithNestedCalls that
// borrowed its caller's slot) borrows that slot in turn; made by a
// goroutine the attempt started and did not wait for, it may go on once
// the borrower's attempt, and the borrower's caller, are over. The slot
// stays taken until it comes back: with max_concurrency 1, the innermost
// call's 10 s and another call's 1 s run one after the other.
func TestASlotLentOnByABorrowerStaysTakenUntilItComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		var fl flights
		work := fl.work
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
		if fl.most() != 1 {
			t.Errorf("%d calls in flight at once, want 1: the account's cap is 1, and the innermost call still went on the slot it borrowed", fl.most())
		}
		checkSlotsBack(t, g)
	})
}
