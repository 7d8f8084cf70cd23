//go:build go1.25

package resilience

import (
	"context"
	"errors"
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
