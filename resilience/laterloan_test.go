//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A call lends each slot it holds to one call nested in the attempt it
// holds it for at a time (see Guard.Enter). A call nested in its first
// attempt borrows its slot (the account's cap, 2, is full: another call
// holds the other slot until 2 s) and goes on, 10 s, once that attempt
// failed at 1 s: the slot stays taken for it. The retry takes the slot
// the other call gave back, and of two calls nested in it at once (a
// function that fans out with its context), finding no slot free, one
// goes at once on the retry's slot, the earlier loan still out, and the
// other waits for that loan to come back, 1 s later, as a second call
// nested in the same attempt does: the account stays within its cap, and
// every call ends, no slot left taken.
func TestACallNestedInALaterAttemptGoesAtOnceOnItsAttemptsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
		var fl flights
		work := fl.work
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { _ = Do(context.Background(), iamUsers, work(2*time.Second), WithGovernor(g)) })
		synctest.Wait()
		first := make(chan error, 1)
		var retry time.Duration
		var went [2]time.Duration
		attempts := 0
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			if attempts++; attempts == 1 {
				go func() { first <- Do(ctx, ec2Subnets, work(10*time.Second), WithGovernor(g)) }()
				time.Sleep(time.Second) // the nested call borrows the slot, and goes on
				return transientErr()
			}
			retry = time.Since(start)
			var errs [2]error
			var fan sync.WaitGroup
			for i := range went {
				fan.Go(func() {
					errs[i] = Do(ctx, ec2Subnets, func(ctx context.Context) error {
						went[i] = time.Since(start)
						return work(time.Second)(ctx)
					}, WithGovernor(g))
				})
			}
			fan.Wait()
			return errors.Join(errs[:]...)
		}, WithGovernor(g), WithNestedCalls())
		if err != nil || attempts != 2 {
			t.Fatalf("the enclosing call: %v after %d attempts; want a success at the retry", err, attempts)
		}
		if err := <-first; err != nil {
			t.Fatalf("the call nested in the first attempt: %v", err)
		}
		wg.Wait()
		if retry < 2*time.Second {
			t.Fatalf("the retry went at %v, before the other call gave its slot back at 2s", retry)
		}
		if sooner, later := min(went[0], went[1]), max(went[0], went[1]); sooner != retry || later != retry+time.Second {
			t.Errorf("the calls nested in the retry went at %v and %v, want at %v, as the retry did, on its slot, and at %v, as that loan came back", sooner, later, retry, retry+time.Second)
		}
		if fl.most() != 2 {
			t.Errorf("%d calls in flight at once, want 2: the account's cap", fl.most())
		}
		checkSlotsBack(t, g)
	})
}

// A call lends each slot it holds to one call nested in the attempt it
// holds it for (see Guard.Enter): a slot it took for a later attempt,
// the one of an earlier attempt kept for a call nested in it that goes
// on, is lent to a call nested in the later attempt at once. The earlier
// nested call here waits for the later one (a goroutine's fetch that the
// retry's own call completes), with the account's cap, 2, full: another
// call holds the other slot until 2 s, and the earlier nested call keeps
// the first attempt's slot. Were the later nested call to wait for the
// earlier loan to come back, every call would wait for good. So with a
// Guard that holds its slot across the SDK's retries (Pace), whose
// retry takes a slot of its own while the one it held is kept.
func TestACallNestedInALaterAttemptDoesNotWaitForAnEarlierLoanWaitingForIt(t *testing.T) {
	for _, how := range []string{"Do", "Pace"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
				var fl flights
				work := fl.work
				var wg sync.WaitGroup
				wg.Go(func() { _ = Do(context.Background(), iamUsers, work(2*time.Second), WithGovernor(g)) })
				synctest.Wait()
				fetched := make(chan struct{})
				first := make(chan error, 1)
				earlier := func(ctx context.Context) {
					go func() {
						first <- Do(ctx, ec2Subnets, func(ctx context.Context) error {
							<-fetched // the retry's nested call completes it
							return nil
						}, WithGovernor(g))
					}()
					time.Sleep(time.Second) // the nested call borrows the slot, and goes on
				}
				later := func(ctx context.Context) error {
					return Do(ctx, ec2Subnets, func(context.Context) error {
						close(fetched)
						return nil
					}, WithGovernor(g))
				}
				switch how {
				case "Do":
					attempts := 0
					err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
						if attempts++; attempts == 1 {
							earlier(ctx)
							return transientErr()
						}
						return later(ctx)
					}, WithGovernor(g), WithNestedCalls())
					if err != nil || attempts != 2 {
						t.Fatalf("the enclosing call: %v after %d attempts; want a success at the retry", err, attempts)
					}
				case "Pace":
					ctx := context.Background()
					gd, gate, actx := enterGated(t, g, ctx, ec2Vpcs)
					earlier(actx)
					gate.SetOpen(false)
					gd.After(transientErr()) // the SDK retries, holding the slot
					delay, err := gd.Retry(0)
					if err != nil {
						t.Fatal(err)
					}
					time.Sleep(delay)
					if err := gd.Pace(ctx); err != nil {
						t.Fatal(err)
					}
					gate.SetOpen(true)
					err = later(actx)
					gate.SetOpen(false)
					if err != nil {
						t.Fatalf("the call nested in the retry: %v", err)
					}
					gd.After(nil)
					gd.End(nil)
				}
				if err := <-first; err != nil {
					t.Fatalf("the call nested in the first attempt: %v", err)
				}
				wg.Wait()
				checkSlotsBack(t, g)
			})
		})
	}
}
