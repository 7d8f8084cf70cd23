//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// longBackoff is a policy whose retry waits 20 s.
var longBackoff = WithPolicy(RetryPolicy{MaxAttempts: 2, BaseDelay: 20 * time.Second, MaxBackoff: 20 * time.Second})

// A retry's backoff ends when the scope's breaker opens meanwhile, with a
// cooldown past the backoff's end: the retry is refused then, not 20 s
// later, and recorded as a call that gave up (it was sent, and throttled).
func TestBackoffEndsWhenTheBreakerOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "t")
		start := time.Now()
		var at time.Duration
		done := make(chan error)
		n := 0
		go func() {
			err := Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), longBackoff)
			at = time.Since(start)
			done <- err
		}()
		synctest.Wait() // asleep in its backoff
		time.Sleep(time.Second)
		openBreaker(t, g)
		opened := time.Since(start)
		err := <-done
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || n != 1 {
			t.Fatalf("err %v after %d attempts, want a CircuitOpenError after 1", err, n)
		}
		if at != opened || at >= 20*time.Second {
			t.Fatalf("the retry was refused at %v; the breaker opened at %v, the backoff ended at 20s", at, opened)
		}
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
			t.Fatalf("ledger: %d gave up, %d skipped; want 1, 0", gu, sk)
		}
	})
}

// A breaker whose cooldown ends before the backoff does leaves the backoff
// whole: the retry, sent when it ends, is the breaker's probe.
func TestBackoffOutlastingTheCooldownIsWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerCooldownSeconds: 5}})
		start := time.Now()
		n := 0
		done := make(chan error)
		go func() {
			done <- Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), longBackoff)
		}()
		synctest.Wait()
		time.Sleep(time.Second)
		openBreaker(t, g)
		err := <-done
		var coe *CircuitOpenError
		if errors.As(err, &coe) || n != 2 || time.Since(start) < 20*time.Second {
			t.Fatalf("err %v after %d attempts at %v; want the provider's error after 2, the retry sent after its 20s backoff",
				err, n, time.Since(start))
		}
	})
}

// A provider that waits for its breakers' verdicts keeps the backoff
// whole: its retry waits for the verdict at Enter instead.
func TestBackoffWithBreakerWaitIsWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true}})
		start := time.Now()
		n := 0
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error)
		go func() { done <- Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), longBackoff) }()
		synctest.Wait()
		time.Sleep(time.Second)
		openBreaker(t, g)
		<-done
		if time.Since(start) < 20*time.Second {
			t.Fatalf("the call ended at %v, within its 20s backoff", time.Since(start))
		}
	})
}

// AfterOpen calls f once the breaker refuses the call's next attempt (at
// once if it does already), and stop says whether it prevented that; for
// a provider that waits for its breakers' verdicts, f is never called.
func TestAfterOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gd := throttledRetry(t, g, context.Background(), ec2Subnets)
		var calls atomic.Int32
		stop := gd.AfterOpen(0, func() { calls.Add(1) })
		synctest.Wait()
		if calls.Load() != 0 {
			t.Fatal("f called with the breaker closed")
		}
		openBreaker(t, g)
		synctest.Wait()
		if calls.Load() != 1 || stop() {
			t.Fatalf("after the breaker opened: f called %d times, stop reported it prevented it", calls.Load())
		}
		// Open already: f at once.
		stop = gd.AfterOpen(0, func() { calls.Add(1) })
		synctest.Wait()
		if calls.Load() != 2 || stop() {
			t.Fatalf("with the breaker open: f called %d times in all, want 2", calls.Load())
		}
		gd.End(nil)
	})
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gd := throttledRetry(t, g, context.Background(), ec2Subnets)
		stop := gd.AfterOpen(0, func() { t.Error("f called after stop") })
		synctest.Wait()
		if !stop() || !stop() {
			t.Fatal("stop did not report that it prevented f")
		}
		openBreaker(t, g)
		synctest.Wait()
		gd.End(nil)
	})
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true}})
		gd := throttledRetry(t, g, context.Background(), ec2Subnets)
		stop := gd.AfterOpen(0, func() { t.Error("f called for a provider with breaker_wait") })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n := 0
		for range 5 {
			Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		synctest.Wait()
		if !stop() {
			t.Fatal("stop did not report that f was never called")
		}
		gd.End(nil)
	})
}

// watchOpen has gd watch an SDK's backoff of 20 s from now
// (Guard.AfterOpen), its f noting when it was called. It returns the
// instant the watch began, calledAt, how long after it f was called (-1
// ns: not called), and AfterOpen's stop.
func watchOpen(gd *Guard) (start time.Time, calledAt func() time.Duration, stop func() bool) {
	start = time.Now()
	var called atomic.Int64 // when f was called, +1 ns; 0: not called
	stop = gd.AfterOpen(20*time.Second, func() { called.Store(int64(time.Since(start)) + 1) })
	return start, func() time.Duration { return time.Duration(called.Load() - 1) }, stop
}

// AfterOpen calls f only when the breaker would still refuse the retry
// when the SDK's backoff (20 s here) ends, as Backoff cuts: a breaker
// that opens 1 s into it with a cooldown of 5 s is half-open when the
// backoff ends, and the retry goes as its probe, so f is not called; one
// with the default 60 s cooldown calls f as it opens. A breaker whose
// cooldown ends first and that opens again (its probe failed), its
// cooldown doubled past the backoff's end, calls f then. Before, f was
// called as the breaker opened, whatever the backoff left.
func TestAfterOpenCallsOnlyWhenTheRetryWouldBeRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cooldown float64 // 0: the default, 60 s
		reopen   bool    // the probe after the cooldown fails
		cut      bool    // f is called as the breaker (last) opens
	}{
		{name: "a cooldown past the backoff", cut: true},
		{name: "a cooldown that ends first", cooldown: 5},
		{name: "open again past the backoff", cooldown: 8, reopen: true, cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{BreakerCooldownSeconds: tc.cooldown}})
				gd := throttledRetry(t, g, context.Background(), ec2Subnets)
				start, calledAt, stop := watchOpen(gd)
				time.Sleep(time.Second)
				openBreaker(t, g)
				opened := time.Since(start)
				if tc.reopen {
					time.Sleep(time.Duration(tc.cooldown * float64(time.Second)))
					n := 0
					Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
					opened = time.Since(start)
				}
				time.Sleep(30 * time.Second) // past the backoff's end
				stopped := stop()
				got := calledAt()
				if !tc.cut && (!stopped || got >= 0) {
					t.Errorf("f called at %v; the breaker lets the retry through when the backoff ends", got)
				}
				if tc.cut && (stopped || got != opened || got >= 20*time.Second) {
					t.Errorf("f called at %v (stop reported %v), want as the breaker opened at %v", got, stopped, opened)
				}
				gd.End(nil)
			})
		})
	}
}

// AfterOpen watches the retry of an attempt After recorded whose Retry
// the integration asks only as the SDK sends it (Enter, Pace and Admit
// ask it then: cloudgazure's retries of a request azcosmos made, or that
// a caller's ShouldRetry decides on), a failed answer's or a final one's
// an SDK retries, as it watches one Retry allowed: a breaker that opens
// during the SDK's backoff, its cooldown past the backoff's end, calls f
// then, and the retry's Enter refuses it. Before, such a call held its
// lease and the breaker was never looked at: f was not called, and the
// SDK slept its whole backoff for a retry refused after it.
func TestAfterOpenWatchesARetryNotAskedYet(t *testing.T) {
	for name, answer := range map[string]func() error{"throttled": throttle, "final": accessDenied} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ctx := context.Background()
				gd, _ := g.Begin(ctx, ec2Subnets)
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.Release()
				gd.After(answer())
				start, calledAt, stop := watchOpen(gd)
				time.Sleep(time.Second)
				openBreaker(t, g)
				opened := time.Since(start)
				synctest.Wait()
				if got := calledAt(); stop() || got != opened {
					t.Errorf("f called at %v (-1ns: not), want as the breaker opened at %v", got, opened)
				}
				var coe *CircuitOpenError
				if err := gd.Enter(ctx); !errors.As(err, &coe) {
					t.Errorf("the retry's Enter: %v, want a CircuitOpenError", err)
				}
				gd.End(nil)
			})
		})
	}
}

// A Reset or a Configure during the SDK's backoff retires the breaker
// AfterOpen watches: the live one's opening calls f (the watch looks for
// it every second). Before, the retired breaker was watched until stop.
func TestAfterOpenWatchesTheLiveBreaker(t *testing.T) {
	for _, name := range []string{"Reset", "Configure"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				gd := throttledRetry(t, g, context.Background(), ec2Subnets)
				start, calledAt, stop := watchOpen(gd)
				if name == "Reset" {
					g.Reset()
				} else if err := g.Configure(Config{AWS: ProviderConfig{BreakerCooldownSeconds: 30}}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(1500 * time.Millisecond)
				openBreaker(t, g)
				opened := time.Since(start)
				synctest.Wait()
				if got := calledAt(); stop() || got != opened {
					t.Errorf("f called at %v (-1ns: not), want as the live breaker opened at %v", got, opened)
				}
				gd.End(nil)
			})
		})
	}
}

// A wait that would end at the call's deadline leaves the call nothing to
// be sent in: its deadline is spent when the wait is over (Enter ends a
// retry found at its deadline), and a context whose deadline it is is
// done then, so that the call would be sent with a dead context, and how
// it ended would hang on which of two timers due at the same instant ran
// first. Such a wait is not made, as one that would pass the deadline is
// not: a first attempt whose token comes at its deadline is refused at
// once with a *DeadlineExceededError, nothing sent; a retry whose backoff
// ends at the deadline ends the call at once with its answer, its failure
// recorded.
func TestAWaitEndingAtTheDeadlineIsNotMade(t *testing.T) {
	cfg := Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}}
	t.Run("token", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, cfg)
			if err := Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
				t.Fatal(err) // the only token: the next is due in a second
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			ctx, led := WithLedger(ctx, "task")
			start, sent := time.Now(), 0
			err := Do(ctx, ec2Vpcs, func(context.Context) error { sent++; return nil }, WithGovernor(g))
			var de *DeadlineExceededError
			if !errors.As(err, &de) || sent != 0 || time.Since(start) != 0 {
				t.Fatalf("a call whose token comes at its deadline: %v, sent %d times, after %v; want a *DeadlineExceededError at once, nothing sent", err, sent, time.Since(start))
			}
			if led.Lost() != 1 {
				t.Fatalf("the ledger lost %d calls, want 1", led.Lost())
			}
		})
	})
	t.Run("queue", func(t *testing.T) {
		// Refused, the call takes no token: one taken and given back
		// beside a queue would stay spent, and the next call wait longer.
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, cfg)
			ok := func(context.Context) error { return nil }
			Do(context.Background(), ec2Vpcs, ok, WithGovernor(g))    // the only token
			go Do(context.Background(), ec2Vpcs, ok, WithGovernor(g)) // queued for the token due in a second
			synctest.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // its token is due then
			defer cancel()
			var de *DeadlineExceededError
			if err := Do(ctx, ec2Vpcs, ok, WithGovernor(g)); !errors.As(err, &de) {
				t.Fatalf("a call whose token comes at its deadline: %v, want a *DeadlineExceededError", err)
			}
			start := time.Now()
			Do(context.Background(), ec2Vpcs, ok, WithGovernor(g))
			if waited := time.Since(start); waited != 2*time.Second {
				t.Fatalf("the next call waited %v for its token, want 2s: the refused call took none", waited)
			}
		})
	})
	t.Run("backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // longBackoff's delay
			defer cancel()
			ctx, led := WithLedger(ctx, "task")
			start, sent := time.Now(), 0
			err := Do(ctx, ec2Vpcs, func(context.Context) error { sent++; return transientErr() }, WithGovernor(g), longBackoff)
			var ae *apiErr
			if !errors.As(err, &ae) || errors.Is(err, context.DeadlineExceeded) || sent != 1 || time.Since(start) != 0 {
				t.Fatalf("a call whose retry's backoff ends at its deadline: %v, sent %d times, after %v; want its answer at once, sent once", err, sent, time.Since(start))
			}
			if led.Lost() != 1 || led.Count(LossCancelled) != 0 {
				t.Fatalf("the ledger lost %d calls (%d cancelled), want 1, as failed", led.Lost(), led.Count(LossCancelled))
			}
			if f := g.Inspect(ec2Vpcs).Breaker.Failures; f != 1 {
				t.Fatalf("breaker failures %d, want the call's 1", f)
			}
		})
	})
}

// A wait for a breaker's verdict (breaker_wait) that would end at the
// call's deadline, the breaker's cooldown ending then, is not made either:
// the call is refused at once, as the open breaker refuses a call whose
// deadline does not allow the wait, and sends nothing (let through at its
// deadline, it would be the half-open breaker's probe with its deadline
// spent, and a context deadline at the same instant would end it or not).
func TestAVerdictWaitEndingAtTheDeadlineIsNotMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 10}})
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		if st := g.Inspect(ec2Vpcs).Breaker; st.State != state.Open || st.Wait != 10*time.Second {
			t.Fatalf("breaker %+v after a throttled call, want open for 10s", st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the cooldown's end
		defer cancel()
		start, sent := time.Now(), 0
		err := Do(ctx, ec2Vpcs, always(&sent, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || sent != 0 || time.Since(start) != 0 {
			t.Fatalf("a call whose breaker's cooldown ends at its deadline: %v, sent %d times, after %v; want a *CircuitOpenError at once, nothing sent", err, sent, time.Since(start))
		}
	})
}

// atDeadline returns a context whose deadline is now and whose timer has
// not run (see deadlineAt).
func atDeadline() context.Context {
	return deadlineAt{context.Background(), time.Now(), make(chan struct{})}
}

// A call made at its context's deadline is not sent, whichever of the
// call and the context's timer, due at the same instant, runs first: a
// wait ending at the deadline is not made (TestAWaitEndingAtTheDeadlineIsNotMade),
// nor is a task run whose turn comes then (the pool drops it), and a call
// with no wait at all is not sent either. It is refused at once, nothing
// sent, recorded as cancelled (its context was done, or as good as), and
// its error is a *DeadlineExceededError, which is context.DeadlineExceeded.
func TestACallAtItsDeadlineIsNotSent(t *testing.T) {
	check := func(t *testing.T, run int, err error, sent int, led *Ledger) {
		t.Helper()
		var de *DeadlineExceededError
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || sent != 0 {
			t.Fatalf("run %d: a call at its deadline: %v, sent %d times; want a *DeadlineExceededError that is context.DeadlineExceeded, nothing sent", run, err, sent)
		}
		if led.Lost() != 1 || led.Count(LossCancelled) != 1 {
			t.Fatalf("run %d: the ledger lost %d calls (%d cancelled): %q; want 1, cancelled", run, led.Lost(), led.Count(LossCancelled), led.Describe())
		}
	}
	t.Run("timer not run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{})
			ctx, led := WithLedger(atDeadline(), "task")
			sent := 0
			err := Do(ctx, ec2Vpcs, func(context.Context) error { sent++; return nil }, WithGovernor(g))
			check(t, 0, err, sent, led)
		})
	})
	t.Run("TryEnter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{})
			ctx, led := WithLedger(atDeadline(), "task")
			gd, _ := g.Begin(ctx, ec2Vpcs)
			err := gd.TryEnter()
			sent := 0
			if err == nil {
				sent = 1
				gd.End(nil)
			}
			check(t, 0, err, sent, led)
		})
	})
	t.Run("either timer first", func(t *testing.T) {
		for i := range 50 {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				ctx, led := WithLedger(ctx, "task")
				time.Sleep(time.Second) // the context's timer is due now too
				sent := 0
				err := Do(ctx, ec2Vpcs, func(context.Context) error { sent++; return nil }, WithGovernor(g))
				check(t, i, err, sent, led)
			})
		}
	})
	t.Run("slot at the deadline", func(t *testing.T) {
		// The slot comes back at the deadline: the call that waited for
		// it is not sent then.
		for i := range 50 {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				go Do(context.Background(), ec2Vpcs, func(context.Context) error { time.Sleep(time.Second); return nil }, WithGovernor(g))
				synctest.Wait() // it holds the only slot for a second
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				ctx, led := WithLedger(ctx, "task")
				sent := 0
				err := Do(ctx, ec2Vpcs, func(context.Context) error { sent++; return nil }, WithGovernor(g))
				check(t, i, err, sent, led)
			})
		}
	})
}

// deadlineAt is a context whose deadline is dl and whose timer never
// runs: Err stays nil past it, as a context's is at its deadline until
// the timer due then runs. Its Done is a channel never closed, as a
// context with a deadline has one (only a context that can never be done
// has none).
type deadlineAt struct {
	context.Context
	dl   time.Time
	done chan struct{}
}

func (c deadlineAt) Deadline() (time.Time, bool) { return c.dl, true }

func (c deadlineAt) Done() <-chan struct{} { return c.done }

// A retry an SDK readies at its context's deadline, the timer due then
// not run yet, is not sent either, as a call at its deadline is not
// (TestACallAtItsDeadlineIsNotSent), whether it takes a fresh token
// (Guard.Pace after a throttled answer) or not (Pace after a transient
// one, and Guard.Admit): it ends the call with the deadline's error
// joined to the last answer, recorded as cancelled.
func TestARetryPacedAtItsDeadlineIsNotSent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func() error
		pace   func(*Guard, context.Context) error
	}{
		{"Pace after a throttle", throttle, (*Guard).Pace},
		{"Pace after a transient error", transientErr, (*Guard).Pace},
		{"Admit after a throttle", throttle, (*Guard).Admit},
		{"Admit after a transient error", transientErr, (*Guard).Admit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ctx, led := WithLedger(deadlineAt{context.Background(), time.Now().Add(time.Second), make(chan struct{})}, "task")
				gd, err := g.Begin(ctx, ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(tc.answer())
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second) // the SDK's backoff ends at the deadline
				err = tc.pace(gd, ctx)
				var ae *apiErr
				if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) {
					gd.End(err)
					t.Fatalf("a retry readied at its deadline: %v; want the deadline's error with the last answer, nothing sent", err)
				}
				gd.End(err)
				if led.Lost() != 1 || led.Count(LossCancelled) != 1 {
					t.Fatalf("the ledger lost %d calls (%d cancelled): %q; want 1, cancelled", led.Lost(), led.Count(LossCancelled), led.Describe())
				}
			})
		})
	}
}
