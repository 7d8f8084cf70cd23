//go:build go1.25

package resilience

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A call nested in an attempt that finds the attempt's slot lent to
// another nested call waits for that loan to come back, or for a free
// slot (see Guard.Enter). Once the attempt is over and its slot kept for
// that loan, which goes on (a goroutine's), the loan's coming back gives
// it no slot: the kept slot goes back to the bulkhead, and the enclosing
// call lends its next slot on another lend. The waiting call looks again
// then, as the slot is kept, and goes on a slot it may borrow now: here
// the slot of the call enclosing the lender (Z, made WithNestedCalls),
// free while the lender waits to retry. Were it to wait for the kept
// loan, which waits for it (a goroutine of the first attempt that
// consumes what the second fetches), it would wait for good with the
// account's cap full (2: Z's slot and the kept one), or until another
// call gives a slot back (3: one more call, 100 s), though the lender's
// retry went at once on Z's slot.
func TestACallWaitingForAKeptSlotLooksAgain(t *testing.T) {
	for _, maxConc := range []int{2, 3} {
		t.Run(fmt.Sprint("max_concurrency ", maxConc), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: maxConc}})
				var wg sync.WaitGroup
				for range maxConc - 2 {
					wg.Go(func() {
						_ = Do(context.Background(), iamUsers, func(context.Context) error {
							time.Sleep(100 * time.Second)
							return nil
						}, WithGovernor(g))
					})
				}
				synctest.Wait()
				start := time.Now()
				fetched := make(chan struct{})
				nested := make(chan error, 2)
				var went, retry time.Duration
				err := Do(context.Background(), iamUsers, func(zctx context.Context) error {
					attempts := 0
					return Do(zctx, ec2Vpcs, func(ctx context.Context) error {
						if attempts++; attempts > 1 {
							retry = time.Since(start)
							<-fetched // the retry consumes what the second nested call fetched
							return nil
						}
						go func() {
							nested <- Do(ctx, ec2Subnets, func(context.Context) error {
								<-fetched // so does the first nested call, which outlives the attempt
								return nil
							}, WithGovernor(g))
						}()
						time.Sleep(time.Millisecond) // the first nested call borrows the attempt's slot
						go func() {
							nested <- Do(ctx, ec2Subnets, func(context.Context) error {
								went = time.Since(start)
								close(fetched)
								return nil
							}, WithGovernor(g))
						}()
						time.Sleep(time.Second) // the second waits for that slot
						return transientErr()
					}, WithGovernor(g), WithNestedCalls())
				}, WithGovernor(g), WithNestedCalls())
				if err != nil {
					t.Fatalf("the enclosing calls: %v", err)
				}
				for range 2 {
					if err := <-nested; err != nil {
						t.Fatalf("a nested call: %v", err)
					}
				}
				if went > retry {
					t.Errorf("the second call nested in the first attempt went at %v, after the retry at %v; want by then: Z's slot was free from the first attempt's end", went, retry)
				}
				wg.Wait()
				checkSlotsBack(t, g)
			})
		})
	}
}

// With max_concurrency 1 the one slot is the kept one: a call nested in
// the first attempt that waits for it, woken as the attempt ends and the
// slot is kept (it looks again: no enclosing call's attempt runs, no slot
// is free), waits for a free slot, first in line, ahead of the retry. The
// first nested call gives the slot back at 10 s, to the bulkhead, which
// hands it to the waiting call then: it goes at 10 s, the retry after it.
func TestACallWaitingForTheOneKeptSlotGoesAsItComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		var fl flights
		start := time.Now()
		nested := make(chan error, 2)
		var went, retry time.Duration
		attempts := 0
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			if attempts++; attempts > 1 {
				retry = time.Since(start)
				return nil
			}
			go func() { nested <- Do(ctx, ec2Subnets, fl.work(10*time.Second), WithGovernor(g)) }()
			time.Sleep(time.Millisecond) // the first nested call borrows the attempt's slot
			go func() {
				nested <- Do(ctx, ec2Subnets, func(ctx context.Context) error {
					went = time.Since(start)
					return fl.work(time.Second)(ctx)
				}, WithGovernor(g))
			}()
			time.Sleep(time.Second) // the second waits for that slot
			return transientErr()
		}, WithGovernor(g), WithNestedCalls())
		for range 2 {
			if err := <-nested; err != nil {
				t.Fatalf("a nested call: %v", err)
			}
		}
		if err != nil || attempts != 2 {
			t.Fatalf("the enclosing call: %v after %d attempts; want a success at the retry", err, attempts)
		}
		if want := 10 * time.Second; went != want || retry != want+time.Second {
			t.Errorf("the second nested call went at %v, the retry at %v; want at %v, as the first gave the slot back, and at %v, after it", went, retry, want, want+time.Second)
		}
		if fl.most() != 1 {
			t.Errorf("%d calls in flight at once, want 1: the account's cap", fl.most())
		}
	})
}
