//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/nestgate"
)

// A call nested in another's attempt borrows the slot the enclosing call
// holds; made by a goroutine the attempt started and did not wait for, it
// may go on after the attempt is over. The slot stays taken until that
// call gives it back: the account keeps within its cap, whether the
// enclosing call returns (and another call wants the slot) or retries
// (and its next attempt wants one). With max_concurrency 1, the nested
// call's 10 s and the other call's (or the retry's) 1 s run one after
// the other.
func TestASlotLentToACallOutlivingTheAttemptStaysTakenUntilItComesBack(t *testing.T) {
	for _, retry := range []bool{false, true} {
		t.Run(map[bool]string{false: "the enclosing call returns", true: "the enclosing call retries"}[retry], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				var fl flights
				work := fl.work
				nested := make(chan error, 1)
				attempts := 0
				err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
					if attempts++; attempts > 1 {
						return work(time.Second)(ctx) // the retry, on a slot of its own
					}
					go func() { nested <- Do(ctx, ec2Subnets, work(10*time.Second), WithGovernor(g)) }()
					time.Sleep(time.Second) // the nested call borrows the slot, and goes on
					if retry {
						return transientErr()
					}
					return nil
				}, WithGovernor(g), WithNestedCalls())
				if err != nil {
					t.Fatal(err)
				}
				if !retry {
					if err := Do(context.Background(), iamUsers, work(time.Second), WithGovernor(g)); err != nil {
						t.Fatal(err)
					}
				}
				if err := <-nested; err != nil {
					t.Fatalf("the nested call: %v", err)
				}
				if fl.most() != 1 {
					t.Errorf("%d calls in flight at once, want 1: the account's cap is 1, and the nested call still went on the slot it borrowed", fl.most())
				}
				checkSlotsBack(t, g)
			})
		})
	}
}

// An integration's Guard may hold its slot across attempts (a listing's
// pages, through Enter or TryEnter; an SDK's retries, through Pace or
// Admit). A
// call nested in one attempt that borrowed the slot and goes on after it
// keeps it: the next attempt is not sent on it while it is lent, and
// takes a slot of its own. With max_concurrency 1, the nested call's 10 s
// and the next attempt's 1 s run one after the other.
func TestAnAttemptIsNotSentOnAHeldSlotLentToACallOutlivingTheAttemptBefore(t *testing.T) {
	for _, verb := range []string{"Enter", "TryEnter", "Pace", "Admit"} {
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				var fl flights
				work := fl.work
				ctx := context.Background()
				gd, gate, actx := enterGated(t, g, ctx, ec2Vpcs)
				nested := make(chan error, 1)
				go func() { nested <- Do(actx, ec2Subnets, work(10*time.Second), WithGovernor(g)) }()
				time.Sleep(time.Second) // the nested call borrows the slot, and goes on
				gate.SetOpen(false)
				switch verb {
				case "Enter":
					gd.After(nil) // the first page; the Guard holds its slot
					if err := gd.Enter(ctx); err != nil {
						t.Fatal(err)
					}
				case "TryEnter":
					gd.After(nil)
					if err := gd.TryEnter(); !errors.Is(err, ErrNoSlot) {
						t.Fatalf("TryEnter of the next page, its slot lent to a call still going on and the cap 1: %v, want ErrNoSlot", err)
					}
					time.Sleep(10 * time.Second) // the nested call gives the slot back
					if err := gd.TryEnter(); err != nil {
						t.Fatalf("TryEnter of the next page once the nested call is over: %v", err)
					}
				case "Pace", "Admit":
					gd.After(transientErr()) // the SDK retries, holding the slot
					delay, err := gd.Retry(0)
					if err != nil {
						t.Fatal(err)
					}
					time.Sleep(delay)
					ready := gd.Pace
					if verb == "Admit" {
						ready = gd.Admit
					}
					if err := ready(ctx); err != nil {
						t.Fatal(err)
					}
				}
				work(time.Second)(ctx) // the next attempt
				gd.After(nil)
				gd.End(nil)
				if err := <-nested; err != nil {
					t.Fatalf("the nested call: %v", err)
				}
				if fl.most() != 1 {
					t.Errorf("%d calls in flight at once, want 1: the account's cap is 1, and the next attempt was sent on the slot lent to the nested call", fl.most())
				}
				checkSlotsBack(t, g)
			})
		})
	}
}

// A call nested in a call that borrowed its caller's slot (a call
// WithNestedCalls, nested in another's attempt) finds that slot through
// the call it is nested in, and reads nothing of the call that lent it:
// that call's goroutine, its attempt over, gives its slot back meanwhile
// (run with -race).
func TestACallNestedInABorrowerReadsNothingOfTheLender(t *testing.T) {
	fast := 1e9 // no call waits for a token
	g := newGov(t, Config{AWS: ProviderConfig{
		MaxConcurrency: 1, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
		Services: map[string]ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}, "iam": {MaxRPS: fast, Burst: fast}},
	}})
	for range 100 {
		var wg sync.WaitGroup
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			borrowed := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				Do(ctx, ec2Subnets, func(ctx context.Context) error {
					close(borrowed)
					return Do(ctx, iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
				}, WithGovernor(g), WithNestedCalls())
			}()
			<-borrowed
			runtime.Gosched()
			return nil
		}, WithGovernor(g), WithNestedCalls())
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
	}
	checkSlotsBack(t, g)
}

// A retry that Pace readies takes its token before its slot; when the
// Guard's held slot is lent to a call that goes on and no other slot
// comes within the call's max wait (or the call's context ends while it
// waits), the retry is not sent, and its token goes back to the scope's
// buckets, as Enter gives back the tokens of an attempt refused for want
// of a slot. The account's rate is slow, so that what its bucket earns
// meanwhile is a small part of a token.
func TestARetryRefusedForWantOfASlotGivesItsTokenBack(t *testing.T) {
	for _, how := range []string{"max wait", "context ends"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := 0.05
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1, AccountMaxRPS: &slow, AccountBurst: 5}})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if how == "max wait" {
					ctx = WithMaxWait(ctx, 2*time.Second)
				}
				gd, gate, actx := enterGated(t, g, ctx, ec2Vpcs)
				nested := make(chan error, 1)
				go func() {
					nested <- Do(actx, ec2Subnets, func(context.Context) error { time.Sleep(10 * time.Second); return nil }, WithGovernor(g))
				}()
				time.Sleep(time.Second) // the nested call borrows the slot, and goes on
				gate.SetOpen(false)
				gd.After(throttle()) // the SDK retries, holding the slot
				delay, err := gd.Retry(0)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(delay)
				before := g.Inspect(ec2Vpcs).Account.Tokens
				if how == "context ends" {
					time.AfterFunc(2*time.Second, cancel)
				}
				err = gd.Pace(ctx)
				if how == "max wait" && !errors.Is(err, ErrNoSlot) || how == "context ends" && !errors.Is(err, context.Canceled) {
					t.Fatalf("Pace, the slot lent to a call going on for 10s: %v", err)
				}
				if after := g.Inspect(ec2Vpcs).Account.Tokens; after < before {
					t.Errorf("the account's bucket holds %.3f tokens after the retry was refused, %.3f before it was readied: the retry that was not sent kept its token", after, before)
				}
				gd.End(err)
				if err := <-nested; err != nil {
					t.Fatalf("the nested call: %v", err)
				}
			})
		})
	}
}

// An integration's Guard nested in another call's attempt that borrowed
// the enclosing call's slot, and holds it across its own attempts (a
// listing's pages, through Enter or TryEnter; an SDK's retries), goes on
// the loan: its next attempt does not wait for the slot it holds itself.
func TestABorrowerHoldingItsLoanAcrossAttemptsDoesNotWaitForItself(t *testing.T) {
	for _, verb := range []string{"Enter", "TryEnter"} {
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				ctx := context.Background()
				outer, err := g.Begin(ctx, ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				var gate nestgate.Gate
				nestgate.Attach(outer, &gate)
				if err := outer.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gate.SetOpen(true)
				actx := WithMaxWait(&loopCtx{Context: ctx, gd: outer}, 5*time.Second)
				gd, err := g.Begin(actx, ec2Subnets)
				if err != nil {
					t.Fatal(err)
				}
				if err := gd.Enter(actx); err != nil {
					t.Fatal(err)
				}
				gd.After(nil) // the first page, on the borrowed slot
				start := time.Now()
				if verb == "Enter" {
					err = gd.Enter(actx)
				} else {
					err = gd.TryEnter()
				}
				if err != nil || time.Since(start) != 0 {
					t.Errorf("%s of the next page, on the slot the Guard borrowed: %v after %v, want nil at once", verb, err, time.Since(start))
				}
				gd.After(nil)
				gd.End(nil)
				gate.SetOpen(false)
				outer.After(nil)
				outer.End(nil)
				checkSlotsBack(t, g)
			})
		})
	}
}

// A Guard that borrowed its slot and holds the loan across its attempts
// lends it on to a call nested in one attempt, as it would a slot of its
// own: when that call goes on once the attempt is over, the next attempt
// (Enter, or an SDK's retry readied with Pace) is not sent on the loan,
// and waits for another slot. With max_concurrency 1, the innermost
// call's 10 s and the next attempt's 1 s run one after the other.
func TestABorrowersNextAttemptIsNotSentOnALoanLentOn(t *testing.T) {
	for _, verb := range []string{"Enter", "Pace"} {
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				var fl flights
				work := fl.work
				ctx := context.Background()
				outer, err := g.Begin(ctx, ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				var ogate nestgate.Gate
				nestgate.Attach(outer, &ogate)
				if err := outer.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				ogate.SetOpen(true)
				octx := &loopCtx{Context: ctx, gd: outer}
				gd, err := g.Begin(octx, ec2Subnets)
				if err != nil {
					t.Fatal(err)
				}
				var gate nestgate.Gate
				nestgate.Attach(gd, &gate)
				if err := gd.Enter(octx); err != nil { // borrows outer's slot
					t.Fatal(err)
				}
				gate.SetOpen(true)
				inner := make(chan error, 1)
				go func() { inner <- Do(&loopCtx{Context: ctx, gd: gd}, iamUsers, work(10*time.Second), WithGovernor(g)) }()
				time.Sleep(time.Second) // the innermost call borrows the slot, and goes on
				gate.SetOpen(false)
				switch verb {
				case "Enter":
					gd.After(nil) // the first page; the Guard holds its loan
					err = gd.Enter(octx)
				case "Pace":
					gd.After(transientErr()) // the SDK retries, holding the loan
					var delay time.Duration
					if delay, err = gd.Retry(0); err == nil {
						time.Sleep(delay)
						err = gd.Pace(octx)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				work(time.Second)(ctx) // the next attempt
				gd.After(nil)
				gd.End(nil)
				ogate.SetOpen(false)
				outer.After(nil)
				outer.End(nil)
				if err := <-inner; err != nil {
					t.Fatalf("the innermost call: %v", err)
				}
				if fl.most() != 1 {
					t.Errorf("%d calls in flight at once, want 1: the account's cap is 1, and the next attempt was sent on the loan lent to the innermost call", fl.most())
				}
				checkSlotsBack(t, g)
			})
		})
	}
}

// checkSlotsBack fails the test unless every slot of the account of
// ec2Vpcs (the one the lending tests' calls share) is back and no call
// waits for one, as the calls are over.
func checkSlotsBack(t *testing.T, g *Governor) {
	t.Helper()
	if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 0 || waiting != 0 {
		t.Fatalf("bulkhead %d used, %d waiting after the calls; want 0, 0", used, waiting)
	}
}
