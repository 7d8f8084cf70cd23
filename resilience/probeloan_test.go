//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A call nested in the attempt of the call that holds its half-open
// breaker's probe borrows the probe (see Guard.Enter); when it ends with
// no verdict (its context cancelled, a local error, the governor's
// refusal), the probe goes back to the enclosing call's attempt, which
// is the probe again: a second call nested in the same attempt borrows
// it then, as the first did, rather than wait out the probe's lease (a
// cooldown: 60 s here) for a verdict that no call is out to give
// (breaker_wait), or be refused as if a probe were out. The enclosing
// call is a Do WithNestedCalls (its attempts gated), or a call of Begin
// whose Guard the attempt's context carries as is (no gate). The account
// allows a call a second, so that a nested call bounded by a max wait of
// 100 ms is refused its token, and the second nested call waits a second
// at most for its own.
func TestANestedCallThatEndsWithNoVerdictGivesTheProbeBack(t *testing.T) {
	for _, wait := range []bool{true, false} {
		for _, end := range []string{"cancelled", "local", "refused"} {
			for _, how := range []string{"Do", "Begin"} {
				t.Run(fmt.Sprintf("breaker_wait=%v/%s/%s", wait, end, how), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						probeGivenBack(t, wait, end, how)
					})
				})
			}
		}
	}
}

func probeGivenBack(t *testing.T, wait bool, end, how string) {
	one := 1.0
	g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: wait, BreakerThreshold: 1, BreakerCooldownSeconds: 60, AccountMaxRPS: &one, AccountBurst: 1}})
	sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return transientErr() })
	if st := g.Inspect(ec2Vpcs).Breaker.State; st != state.Open {
		t.Fatalf("breaker %v after a failure, threshold 1; want open", st)
	}
	time.Sleep(time.Minute) // the cooldown: the next call is the probe
	var first, second error
	var went time.Duration
	attempt := func(ctx context.Context) error {
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if end == "refused" {
			fctx = WithMaxWait(fctx, 100*time.Millisecond)
		}
		first = Do(fctx, ec2Vpcs, func(context.Context) error {
			switch end {
			case "cancelled":
				cancel()
				return context.Canceled
			case "local":
				return errors.New("the response could not be read")
			}
			t.Error("the first nested call, bounded by a max wait of 100 ms, was sent; want it refused its token")
			return nil
		}, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		start := time.Now()
		second = Do(ctx, ec2Vpcs, func(context.Context) error {
			went = time.Since(start)
			return nil
		}, WithGovernor(g))
		return second
	}
	var err error
	if how == "Do" {
		err = Do(context.Background(), ec2Vpcs, attempt, WithGovernor(g), WithNestedCalls())
	} else {
		outer, berr := g.Begin(context.Background(), ec2Vpcs)
		if berr != nil {
			t.Fatal(berr)
		}
		if err = outer.Enter(context.Background()); err != nil {
			t.Fatalf("the enclosing call, the probe: %v", err)
		}
		err = attempt(context.WithValue(context.Background(), g, outer))
		outer.After(err)
		outer.End(err)
	}
	if first == nil {
		t.Fatalf("the first nested call (%s) succeeded; want it ended with no verdict", end)
	}
	const limit = time.Second // the second call's token, the account's next
	if second != nil || went > limit {
		t.Errorf("the second nested call, made once the first (%s: %v) ended with no verdict: %v, sent after %v; want it through as the probe within %v", end, first, second, went, limit)
	}
	if err != nil {
		t.Errorf("the enclosing call: %v", err)
	}
	if s := g.Inspect(ec2Vpcs); s.Breaker.State != state.Closed || s.InFlight != 0 {
		t.Errorf("after the calls: breaker %v, %d in flight; want closed, 0", s.Breaker.State, s.InFlight)
	}
}

// A call nested in the attempt of the call holding its half-open
// breaker's probe, waiting for the verdict (breaker_wait) while another
// nested call that borrowed the probe goes on past the attempt (a
// goroutine's), looks again as the attempt ends: nested in no attempt
// until the caller's next one, it goes as the probe when that attempt
// begins, its caller the probe again (the borrower gave no verdict yet),
// as a call made between the attempts does (see Guard.Enter), rather
// than wait for the borrower or the probe's lease (a cooldown: 60 s),
// which the caller's retry, waiting for what it fetches, would wait out
// with it. As TestACallWaitingForAVerdictBetweenTheProbesAttemptsBorrowsTheProbe
// has it, the probe is a Do WithNestedCalls, or an SDK's call whose
// retry Pace readies on the slot it holds; the borrower ends at 100 s.
func TestACallWaitingForALentProbeLooksAgainAsItsLendersAttemptEnds(t *testing.T) {
	for _, how := range []string{"Do", "Pace"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60}})
				sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return transientErr() })
				time.Sleep(time.Minute) // the cooldown: the next call is the probe
				start := time.Now()
				fetched := make(chan struct{})
				borrowed := make(chan struct{})
				done := make(chan error, 2)
				var went, retry time.Duration
				attempts := 0
				attempt := func(ctx context.Context) error {
					if attempts++; attempts > 1 {
						retry = time.Since(start)
						select {
						case <-fetched:
						case <-time.After(100 * time.Second):
						}
						return nil
					}
					go func() { // the borrower, going on past the attempt
						done <- Do(ctx, ec2Vpcs, func(context.Context) error {
							close(borrowed)
							time.Sleep(100 * time.Second)
							return nil
						}, WithGovernor(g))
					}()
					<-borrowed
					go func() { // waits for the verdict, the probe lent
						done <- Do(ctx, ec2Vpcs, func(context.Context) error {
							went = time.Since(start)
							close(fetched)
							return nil
						}, WithGovernor(g))
					}()
					time.Sleep(time.Second)
					return transientErr()
				}
				var err error
				if how == "Do" {
					err = Do(context.Background(), ec2Vpcs, attempt, WithGovernor(g), WithNestedCalls())
				} else {
					err = paceLoop(t, g, ec2Vpcs, attempt)
				}
				for range 2 {
					if err := <-done; err != nil {
						t.Errorf("a nested call: %v", err)
					}
				}
				if err != nil || attempts != 2 {
					t.Fatalf("the probe: %v after %d attempts; want a success at the retry", err, attempts)
				}
				if went != retry {
					t.Errorf("the call waiting for the verdict in the probe's first attempt, its probe lent to a call going on, went at %v, the probe's retry at %v; want both at the retry: the call may borrow the probe as the retry begins", went, retry)
				}
			})
		})
	}
}
