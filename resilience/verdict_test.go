//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// waitCfg is a provider whose calls wait for the breaker's verdict: one
// failure opens the breaker for 10 s.
func waitCfg() Config {
	return Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 10}}
}

// outage answers 503 ServiceUnavailable (transient) until down ends, then
// succeeds; it counts the attempts sent during the outage and after.
type outage struct {
	start      time.Time
	down       time.Duration
	during     atomic.Int32
	after      atomic.Int32
	firstAfter atomic.Int64 // when the first attempt after the outage was sent
}

func (o *outage) fn(context.Context) error {
	if time.Since(o.start) < o.down {
		o.during.Add(1)
		return &apiErr{code: "ServiceUnavailable", status: 503}
	}
	if o.after.Add(1) == 1 {
		o.firstAfter.Store(int64(time.Since(o.start)))
	}
	return nil
}

// With breaker_wait, a scope that goes down loses no call whose deadline
// allows the wait: the call whose retries run out opens the breaker and
// waits; the calls that come while it is open wait for the cooldown; one
// probe goes at its end, and the others follow its success.
func TestBreakerWaitLosesNoCallToAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, waitCfg())
		o := &outage{start: time.Now(), down: 3 * time.Second}
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		var wg sync.WaitGroup
		var lost atomic.Int32
		var probeDone atomic.Int64
		for i := range 8 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
				if err := Do(context.Background(), ec2Vpcs, o.fn, WithGovernor(g), once); err != nil {
					lost.Add(1)
					t.Errorf("call %d lost: %v", i, err)
				}
				probeDone.CompareAndSwap(0, int64(time.Since(o.start)))
			})
		}
		wg.Wait()
		if lost.Load() != 0 {
			t.Fatalf("%d calls lost", lost.Load())
		}
		// One attempt during the outage opened the breaker (threshold 1);
		// the probe went when its 10 s cooldown ended, and every other
		// call after the probe's success.
		if d := o.during.Load(); d != 1 {
			t.Fatalf("%d attempts sent during the outage, want 1: the others should have waited", d)
		}
		if f := time.Duration(o.firstAfter.Load()); f < 10*time.Second || f > 10*time.Second+time.Millisecond {
			t.Fatalf("first attempt after the outage at %v, want the probe at 10s", f)
		}
		if a := o.after.Load(); a != 8 {
			t.Fatalf("%d attempts after the outage, want 8 (the probe, then each call once)", a)
		}
		if s := g.Inspect(ec2Vpcs).Breaker; s.State.String() != "closed" {
			t.Fatalf("breaker %v after the probe's success", s.State)
		}
	})
}

// A call whose deadline ends before the breaker's cooldown does is refused
// at once, as without waiting: waiting could not get it through.
func TestBreakerWaitRefusesACallItCannotGetThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, waitCfg())
		Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttle() },
			WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		start := time.Now()
		err := Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil },
			WithGovernor(g), WithPolicy(RetryPolicy{Deadline: 5 * time.Second}))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || time.Since(start) != 0 {
			t.Fatalf("error %v after %v, want a *CircuitOpenError at once", err, time.Since(start))
		}
	})
}

// Without breaker_wait (the default), an open breaker fails the calls at
// once, as the spec says, and the call whose retries ran out is lost.
func TestWithoutBreakerWaitAnOpenBreakerFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := waitCfg()
		cfg.AWS.BreakerWait = false
		g := newGov(t, cfg)
		o := &outage{start: time.Now(), down: 3 * time.Second}
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		if err := Do(context.Background(), ec2Vpcs, o.fn, WithGovernor(g), once); err == nil {
			t.Fatal("the call that opened the breaker succeeded")
		}
		var coe *CircuitOpenError
		if err := Do(context.Background(), ec2Vpcs, o.fn, WithGovernor(g), once); !errors.As(err, &coe) {
			t.Fatalf("error %v, want a *CircuitOpenError", err)
		}
	})
}

// Fewer callers than the breaker's threshold are not waited on forever: a
// call whose retries ran out finds the breaker still closed, hears of no
// verdict, and tries again after one cooldown.
func TestBreakerWaitRetriesAfterACooldownBelowTheThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := waitCfg()
		cfg.AWS.BreakerThreshold = 5
		g := newGov(t, cfg)
		o := &outage{start: time.Now(), down: 3 * time.Second}
		if err := Do(context.Background(), ec2Vpcs, o.fn, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1})); err != nil {
			t.Fatalf("call lost: %v", err)
		}
		if f := time.Duration(o.firstAfter.Load()); f != 10*time.Second {
			t.Fatalf("tried again at %v, want after one cooldown (10s)", f)
		}
	})
}

// With breaker_wait, a retry budget that runs dry on a failing scope does
// not lose the call: its failure counts towards the breaker (here opening
// it), and it sends nothing more until the breaker's verdict, as when its
// attempts run out. Without breaker_wait the empty budget ends the call.
func TestBreakerWaitOutlastsAnEmptyRetryBudget(t *testing.T) {
	for _, wait := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			cfg := waitCfg()
			cfg.AWS.BreakerWait = wait
			cfg.AWS.RetryBudget = new(int) // every retry after the first two finds it empty
			g := newGov(t, cfg)
			o := &outage{start: time.Now(), down: 8 * time.Second}
			err := Do(context.Background(), ec2Vpcs, o.fn, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 10}))
			if !wait {
				// Do returns the provider's error; with 10 attempts allowed,
				// only the empty budget stops the call after the third.
				if err == nil || o.during.Load() != 3 || o.after.Load() != 0 {
					t.Fatalf("without breaker_wait: error %v after %d attempts, want the provider's after 3", err, o.during.Load())
				}
				return
			}
			if err != nil {
				t.Fatalf("with breaker_wait the call was lost: %v", err)
			}
			// The first attempt and the two free retries, then the probe at
			// the end of the breaker's 10 s cooldown.
			if d, a := o.during.Load(), o.after.Load(); d != 3 || a != 1 {
				t.Fatalf("%d attempts during the outage and %d after, want 3 and 1", d, a)
			}
			// The budget ran dry within the outage's 8 s, which opened the
			// breaker for 10 s.
			if f := time.Duration(o.firstAfter.Load()); f < 10*time.Second || f > 18*time.Second {
				t.Fatalf("the attempt after the outage went at %v, want the probe at the cooldown's end (10 s after the breaker opened)", f)
			}
			if s := g.Inspect(ec2Vpcs).Breaker; s.State.String() != "closed" {
				t.Fatalf("breaker %v after the probe's success", s.State)
			}
		})
	}
}

// An SDK's retry goes through Pace, not Enter (cloudgaws sends the AWS
// SDK's retries so). With breaker_wait, Pace asks the breaker as Enter
// does: a retry that finds it open waits for the cooldown's end and goes
// as its probe. Without breaker_wait the open breaker refuses the retry.
func TestBreakerWaitHoldsAnSDKRetryAtAnOpenBreaker(t *testing.T) {
	for _, wait := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			cfg := waitCfg()
			cfg.AWS.BreakerWait = wait
			var probes atomic.Int32
			g := newGov(t, cfg, WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.BreakerChange && e.To == state.HalfOpen {
					probes.Add(1)
				}
			})))
			ctx := context.Background()
			unavailable := &apiErr{code: "ServiceUnavailable", status: 503}
			// Two SDK calls in flight; the first gives up and opens the
			// breaker (threshold 1) while the second is about to retry.
			first, _ := g.Begin(ctx, ec2Vpcs)
			second, _ := g.Begin(ctx, ec2Vpcs)
			for _, gd := range []*Guard{first, second} {
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(unavailable)
			}
			first.End(unavailable)
			if s := g.Inspect(ec2Vpcs).Breaker; s.State.String() != "open" {
				t.Fatalf("breaker %v after a failed call, want open", s.State)
			}
			if _, err := second.Retry(0); err != nil {
				t.Fatalf("Retry: %v", err)
			}
			start := time.Now()
			err := second.Pace(ctx)
			if !wait {
				// Without breaker_wait the open breaker stops the SDK's
				// loop at once: the call failed after its retries.
				var coe *CircuitOpenError
				if !errors.As(err, &coe) || !errors.Is(err, unavailable) || time.Since(start) != 0 {
					t.Fatalf("Pace at an open breaker without breaker_wait: %v after %v", err, time.Since(start))
				}
				second.End(err)
				if f := g.Summary(nil).Totals.Failed; f != 2 {
					t.Fatalf("%d calls failed, want both", f)
				}
				return
			}
			if err != nil {
				t.Fatalf("Pace: %v", err)
			}
			waited := time.Since(start)
			breakerState := g.Inspect(ec2Vpcs).Breaker.State.String()
			second.After(nil)
			second.End(nil)
			if waited != 10*time.Second || breakerState != "half_open" || probes.Load() != 1 {
				t.Fatalf("the retry went after %v with the breaker %s (%d probe events), want after the 10 s cooldown, as the probe (half-open, one event)", waited, breakerState, probes.Load())
			}
			if s := g.Inspect(ec2Vpcs).Breaker; s.State.String() != "closed" {
				t.Fatalf("breaker %v after the probe's success", s.State)
			}
		})
	}
}

// Resend lets an SDK whose own attempts ran out send the call again only
// for a provider that waits for verdicts, after a transient answer: the
// failure opens the breaker (threshold 1) and the next Pace waits for the
// cooldown's end. A throttled call, or any call without breaker_wait, is
// left to End.
func TestResendOnlyAfterATransientAnswerUnderBreakerWait(t *testing.T) {
	unavailable := &apiErr{code: "ServiceUnavailable", status: 503}
	for _, c := range []struct {
		wait bool
		last error
		want bool
	}{{true, unavailable, true}, {true, throttle(), false}, {false, unavailable, false}} {
		synctest.Test(t, func(t *testing.T) {
			cfg := waitCfg()
			cfg.AWS.BreakerWait = c.wait
			g := newGov(t, cfg)
			ctx := context.Background()
			gd, _ := g.Begin(ctx, ec2Vpcs)
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			gd.After(c.last)
			if got := gd.Resend(); got != c.want {
				t.Fatalf("breaker_wait %v, last %v: Resend %v, want %v", c.wait, c.last, got, c.want)
			}
			if !c.want {
				if s := g.Inspect(ec2Vpcs).Breaker.State.String(); s != "closed" {
					t.Fatalf("breaker %s after a refused Resend, want closed: End records the outcome", s)
				}
				gd.End(c.last)
				if s := g.Inspect(ec2Vpcs).Breaker.State.String(); s != "open" {
					t.Fatalf("breaker %s after End, want open (threshold 1)", s)
				}
				return
			}
			start := time.Now()
			if err := gd.Pace(ctx); err != nil {
				t.Fatal(err)
			}
			if w := time.Since(start); w != 10*time.Second {
				t.Fatalf("the resend went after %v, want the breaker's 10 s cooldown", w)
			}
			gd.After(nil)
			gd.End(nil)
			if s := g.Inspect(ec2Vpcs).Breaker.State.String(); s != "closed" {
				t.Fatalf("breaker %s after the resend's success", s)
			}
		})
	}
}

// A call that waited for the breaker's verdict takes its rate token at the
// time it was let through, not at the time it began to wait: at 1 rps the
// bucket has long refilled after a 10 s cooldown, so the probe goes at the
// cooldown's end, not a token interval later.
func TestBreakerWaitTakesItsTokenWhenLetThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := waitCfg()
		cfg.AWS.Services = map[string]ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}
		g := newGov(t, cfg)
		o := &outage{start: time.Now(), down: time.Second}
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		// The first call's failure opens the breaker (threshold 1) at 0 s,
		// with the bucket's one token spent; the second call waits for the
		// cooldown's end and goes as the probe.
		if err := Do(context.Background(), ec2Vpcs, o.fn, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1, Deadline: time.Millisecond})); err == nil {
			t.Fatal("the call in the outage succeeded")
		}
		if err := Do(context.Background(), ec2Vpcs, o.fn, WithGovernor(g), once); err != nil {
			t.Fatalf("the probe failed: %v", err)
		}
		if f := time.Duration(o.firstAfter.Load()); f != 10*time.Second {
			t.Fatalf("the probe went at %v, want at the cooldown's end (10s)", f)
		}
	})
}

// A retry the breaker held until its verdict goes on with the call's
// attempts renewed: the attempts it spent before were spent against a
// scope that went down. Here a call of three attempts spends two on an
// outage, another call's failure opens the breaker, and its third attempt
// (the probe, after the cooldown) is throttled: with the attempts renewed
// it retries and succeeds; without, it would be lost with the throttle.
func TestBreakerWaitRenewsTheAttemptsOfARetryItHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, waitCfg())
		start := time.Now()
		var sent []time.Duration
		fn := func(context.Context) error {
			sent = append(sent, time.Since(start))
			switch len(sent) {
			case 1:
				return transientErr()
			case 2:
				// Another call fails during this attempt: its failure opens
				// the breaker (threshold 1), and it stops waiting for the
				// verdict when its context ends.
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					Do(ctx, ec2Vpcs, func(context.Context) error { return transientErr() },
						WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
				}()
				synctest.Wait()
				cancel()
				<-done
				if s := g.Inspect(ec2Vpcs).Breaker.State; s != state.Open {
					t.Fatalf("breaker %v after the other call's failure, want open", s)
				}
				return transientErr()
			case 3:
				return throttle()
			}
			return nil
		}
		if err := Do(context.Background(), ec2Vpcs, fn, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 3})); err != nil {
			t.Fatalf("the call was lost after the breaker held its retry: %v (attempts at %v)", err, sent)
		}
		if len(sent) != 4 || sent[2] < 10*time.Second {
			t.Fatalf("attempts at %v, want 4, the third held until the cooldown's end (10s)", sent)
		}
	})
}
