//go:build go1.25

package resilience

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A call made with an attempt's context between the attempts of the call
// that holds its half-open breaker's probe (a goroutine the probe's first
// attempt started) is nested in no attempt then, and a provider with
// breaker_wait has it wait for the probe's verdict; as the probe's next
// attempt begins it is nested in that one, and looks again, as a call
// waiting for a slot does: it goes as the probe in its caller's stead
// (see Guard.Enter), rather than wait out the probe's lease (a cooldown),
// which the probe's retry, waiting for what the call fetches, would wait
// out with it. Here the breaker opened with a cooldown of 60 s: the probe's
// first attempt starts a goroutine and fails at 1 s; the goroutine's call
// is made at 1.1 s, between the attempts (the retry's backoff is about a
// second); the retry waits up to 100 s for it. The probe is a Do
// WithNestedCalls, or an SDK's call whose retry Pace readies on the slot
// it holds, its attempts gated as an integration gates them.
func TestACallWaitingForAVerdictBetweenTheProbesAttemptsBorrowsTheProbe(t *testing.T) {
	for _, how := range []string{"Do", "Pace"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60}})
				sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return transientErr() })
				if st := g.Inspect(ec2Vpcs).Breaker.State; st != state.Open {
					t.Fatalf("breaker %v after a failure, threshold 1; want open", st)
				}
				time.Sleep(time.Minute) // the cooldown: the next call is the probe
				start := time.Now()
				fetched := make(chan struct{})
				nested := make(chan error, 1)
				var made, went, retry time.Duration
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
					go func() {
						time.Sleep(1100 * time.Millisecond) // the attempt is over
						made = time.Since(start)
						nested <- Do(ctx, ec2Vpcs, func(context.Context) error {
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
				if err := <-nested; err != nil {
					t.Fatalf("the nested call: %v", err)
				}
				if err != nil || attempts != 2 {
					t.Fatalf("the probe: %v after %d attempts; want a success at the retry", err, attempts)
				}
				if made >= retry {
					t.Fatalf("the nested call was made at %v, the probe's retry began at %v: not between the attempts", made, retry)
				}
				if went != retry {
					t.Errorf("the call made at %v, between the probe's attempts, went at %v, the probe's retry at %v; want both at the retry: the call may borrow the probe as the retry begins", made, went, retry)
				}
				if s := g.Inspect(ec2Vpcs); s.Breaker.State != state.Closed || s.InFlight != 0 {
					t.Errorf("after the calls: breaker %v, %d in flight; want closed, 0", s.Breaker.State, s.InFlight)
				}
			})
		})
	}
}

// paceLoop makes a call of scope on g as an SDK integration does whose
// SDK retries on the slot the call holds: Begin, Enter once, each retry
// allowed by Retry and readied by Pace after the SDK's backoff of a
// second, a gate open while each attempt runs, and the attempt's context.
// It returns the call's outcome.
func paceLoop(t *testing.T, g *Governor, scope Scope, attempt func(context.Context) error) error {
	t.Helper()
	ctx := context.Background()
	gd, gate, actx := enterGated(t, g, ctx, scope)
	for {
		err := attempt(actx)
		gate.SetOpen(false)
		if gd.After(err); err == nil {
			gd.End(nil)
			return nil
		}
		if _, err := gd.Retry(0); err != nil {
			gd.End(err)
			return err
		}
		time.Sleep(time.Second)
		if err := gd.Pace(ctx); err != nil {
			gd.End(err)
			return err
		}
		gate.SetOpen(true)
	}
}

// panickyClock is the time package's clock, whose Sleep panics once armed.
type panickyClock struct{ armed atomic.Bool }

func (c *panickyClock) Now() time.Time { return time.Now() }

func (c *panickyClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.armed.Load() {
		panic("the clock's Sleep")
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The goroutines a call waiting for the verdict starts to look again as
// an enclosing call's next attempt begins end with the wait on every
// path, a panic of what it calls included (a Clock's Sleep, here): none
// is left waiting for an attempt that never comes. synctest.Test fails
// on a goroutine of the bubble still blocked at its end.
func TestAWaitForTheVerdictLeavesNoGoroutineWhenItPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := new(panickyClock)
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60}}, WithClock(clock))
		sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return transientErr() })
		time.Sleep(time.Minute) // the cooldown: the next call is the probe
		ctx := context.Background()
		p, pgate, pctx := enterGated(t, g, ctx, ec2Vpcs)
		pgate.SetOpen(false)
		p.After(transientErr()) // between the probe's attempts
		clock.armed.Store(true)
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			n, err := g.Begin(pctx, ec2Vpcs)
			if err != nil {
				t.Fatal(err)
			}
			n.Enter(pctx) // waits for the verdict, watching P's gate
		}()
		if panicked == nil {
			t.Fatal("the nested call's wait for the verdict did not panic with its clock")
		}
		clock.armed.Store(false)
		p.End(transientErr()) // P's gate never opens again
	})
}
