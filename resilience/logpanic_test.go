//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// A panic of the governor's log handler goes on to the caller, as
// log/slog's does. The governor's state is updated before any user
// callback hears of it, so that such a panic never leaves it half
// recorded; each test here has the handler panic on one line.

// panicOn is a log handler of the caller's that panics, with the value
// "handler", on the line whose message it is.
type panicOn string

func (panicOn) Enabled(context.Context, slog.Level) bool { return true }

func (h panicOn) Handle(_ context.Context, r slog.Record) error {
	if r.Message == string(h) {
		panic("handler")
	}
	return nil
}

func (h panicOn) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panicOn) WithGroup(string) slog.Handler      { return h }

// recovering runs f, and returns what it panicked with.
func recovering(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// A throttled answer halves the leaf's rate, pauses it for the
// provider's Retry-After and counts towards the scope's health (a scope
// throttled for good has its breaker opened) before the log says it was
// throttled: a handler that panics on that line changes none of it.
func TestAThrottleIsRecordedBeforeTheLogHearsOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quiet := newGov(t, Config{})
		loud := newGov(t, Config{}, WithLogger(slog.New(panicOn("cloudg: throttled"))))
		ctx := context.Background()
		throttled := func(g *Governor, err error) any {
			gd, _ := g.Begin(ctx, iamUsers)
			if err := gd.Enter(ctx); err != nil {
				return err // the breaker, open
			}
			gd.Release()
			return recovering(func() { gd.After(err) })
		}
		if r := throttled(quiet, throttleAfter(30*time.Second)); r != nil {
			t.Fatalf("without the handler: %v", r)
		}
		if r := throttled(loud, throttleAfter(30*time.Second)); r != "handler" {
			t.Fatalf("the handler's panic reached the caller as %v", r)
		}
		want, got := quiet.Inspect(iamUsers), loud.Inspect(iamUsers)
		if got.Leaf != want.Leaf || !got.PausedUntil.Equal(want.PausedUntil) {
			t.Fatalf("after the handler panicked: leaf %+v paused until %v; want leaf %+v paused until %v",
				got.Leaf, got.PausedUntil, want.Leaf, want.PausedUntil)
		}
		if w, g := quiet.Summary(nil).Totals, loud.Summary(nil).Totals; g.Pauses != w.Pauses || g.Throttled != w.Throttled {
			t.Fatalf("after the handler panicked: %d pauses, %d throttled; want %d, %d", g.Pauses, g.Throttled, w.Pauses, w.Throttled)
		}
		for range 60 {
			time.Sleep(time.Second)
			throttled(quiet, throttle())
			throttled(loud, throttle())
		}
		want, got = quiet.Inspect(iamUsers), loud.Inspect(iamUsers)
		if want.Dead == "" || want.Breaker.State != state.Open {
			t.Fatalf("without the handler the scope is not found dead: %+v", want)
		}
		if got.Dead != want.Dead || got.Breaker.State != want.Breaker.State {
			t.Fatalf("after the handler panicked on every throttle: dead %q, breaker %v; want %q, %v",
				got.Dead, got.Breaker.State, want.Dead, want.Breaker.State)
		}
	})
}

// A success closes a half-open breaker, refunds the retry budget and
// lets the leaf recover before the log says the breaker closed.
func TestASuccessIsRecordedBeforeTheLogHearsOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{BreakerThreshold: 1}}
		quiet := newGov(t, cfg)
		loud := newGov(t, cfg, WithLogger(slog.New(panicOn("cloudg: circuit breaker closed"))))
		ctx := context.Background()
		for _, g := range []*Governor{quiet, loud} {
			Do(ctx, iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g))
			if s := g.Inspect(iamUsers); s.Breaker.State != state.Open {
				t.Fatalf("the breaker after a give-up: %+v", s.Breaker)
			}
		}
		time.Sleep(time.Hour)
		ok := func(context.Context) error { return nil }
		if r := recovering(func() { Do(ctx, iamUsers, ok, WithGovernor(quiet)) }); r != nil {
			t.Fatalf("without the handler: %v", r)
		}
		if r := recovering(func() { Do(ctx, iamUsers, ok, WithGovernor(loud)) }); r != "handler" {
			t.Fatalf("the handler's panic reached the caller as %v", r)
		}
		want, got := quiet.Inspect(iamUsers), loud.Inspect(iamUsers)
		if want.Leaf.Rate == 0 || got.Leaf != want.Leaf || got.Breaker.State != want.Breaker.State || got.RetryBudget != want.RetryBudget {
			t.Fatalf("after the handler panicked: leaf %+v, breaker %v, budget %v; want %+v, %v, %v",
				got.Leaf, got.Breaker.State, got.RetryBudget, want.Leaf, want.Breaker.State, want.RetryBudget)
		}
	})
}

// A call that gives up is recorded as given up before the log says that
// the retry budget ran out or that the breaker opened.
func TestAGiveUpIsRecordedBeforeTheLogHearsOfIt(t *testing.T) {
	for _, c := range []struct {
		name, line string
		cfg        ProviderConfig
	}{
		{"budget", "cloudg: retry budget exhausted", ProviderConfig{RetryBudget: new(0)}},
		{"breaker", "cloudg: circuit breaker open", ProviderConfig{BreakerThreshold: 1, BreakerDeadSeconds: new(0.0)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: c.cfg}, WithLogger(slog.New(panicOn(c.line))))
				r := newRun(context.Background())
				throttled := func(context.Context) error { return throttle() }
				if p := recovering(func() { Do(r.ctx, iamUsers, throttled, WithGovernor(g)) }); p != "handler" {
					t.Fatalf("the handler's panic reached the caller as %v", p)
				}
				r.lost(t, g, LossGaveUp, 1)
				if c.name == "breaker" {
					if s := g.Inspect(iamUsers); s.Breaker.State != state.Open || s.OpenReason != "throttling" {
						t.Fatalf("the breaker: %+v, opened for %q", s.Breaker, s.OpenReason)
					}
				}
			})
		})
	}
}

// A call is recorded lost once, even when the log handler panics on the
// line that says so: EndPanicked, run for the panic, finds the outcome
// recorded and records nothing more.
func TestALossIsRecordedOnceWhenTheLogPanics(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{}, WithLogger(slog.New(panicOn("cloudg: call lost"))))
			ctx, cancel := context.WithCancel(context.Background())
			r := newRun(ctx)
			fn := func(context.Context) error {
				cancel()
				return throttle()
			}
			if p := recovering(func() { Do(r.ctx, iamUsers, fn, WithGovernor(g)) }); p != "handler" {
				t.Fatalf("the handler's panic reached the caller as %v", p)
			}
			r.lost(t, g, LossCancelled, 1)
		})
	})
	t.Run("gave up at End", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{}, WithLogger(slog.New(panicOn("cloudg: call gave up"))))
			r := newRun(context.Background())
			gd, _ := g.Begin(r.ctx, iamUsers)
			p := recovering(func() {
				returned := false
				defer func() {
					if !returned {
						gd.EndPanicked()
					}
				}()
				if err := gd.Enter(r.ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(throttle())
				gd.Release()
				gd.End(throttle()) // the SDK gave up
				returned = true
			})
			if p != "handler" {
				t.Fatalf("the handler's panic reached the caller as %v", p)
			}
			r.lost(t, g, LossGaveUp, 1)
			if s := g.Inspect(iamUsers); s.InFlight != 0 {
				t.Fatalf("%d slots held after the panic", s.InFlight)
			}
		})
	})
	t.Run("succeeded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1}},
				WithLogger(slog.New(panicOn("cloudg: circuit breaker closed"))))
			Do(context.Background(), iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g))
			time.Sleep(time.Hour)
			r := newRun(context.Background())
			ok := func(context.Context) error { return nil }
			if p := recovering(func() { Do(r.ctx, iamUsers, ok, WithGovernor(g)) }); p != "handler" {
				t.Fatalf("the handler's panic reached the caller as %v", p)
			}
			r.lost(t, g, LossPanicked, 0) // the probe succeeded
		})
	})
}

// A call whose function panics is lost as panicked, and the caller
// recovers the function's panic, even when the log handler panics on the
// line that says the call was lost: EndPanicked drops that second panic,
// which would replace the first. A runtime.Goexit (t.FailNow) goes on
// likewise.
func TestEndPanickedKeepsThePanicItEnds(t *testing.T) {
	lost := slog.New(panicOn("cloudg: call lost"))
	t.Run("panic", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithLogger(lost))
			r := newRun(context.Background())
			fn := func(context.Context) error { panic("fn") }
			if p := recovering(func() { Do(r.ctx, iamUsers, fn, WithGovernor(g)) }); p != "fn" {
				t.Fatalf("the caller recovered %v, want the function's panic", p)
			}
			r.lost(t, g, LossPanicked, 1)
			if s := g.Inspect(iamUsers); s.InFlight != 0 {
				t.Fatalf("%d slots held after the panic", s.InFlight)
			}
		})
	})
	t.Run("goexit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{}, WithLogger(lost))
			r := newRun(context.Background())
			fn := func(context.Context) error {
				runtime.Goexit()
				return nil
			}
			var p any
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer func() { p = recover() }() // Goexit goes on once it returns
				Do(r.ctx, iamUsers, fn, WithGovernor(g))
			}()
			<-done
			if p != nil {
				t.Fatalf("the goroutine's Goexit became a panic: %v", p)
			}
			r.lost(t, g, LossPanicked, 1)
		})
	})
}

// An SDK's retry of a local error that the empty retry budget refuses is
// lost (LossErrored) before the log says the budget ran out.
func TestARefusedRetryIsRecordedBeforeTheLogHearsOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}},
			WithLogger(slog.New(panicOn("cloudg: retry budget exhausted"))))
		r := newRun(context.Background())
		signing := errors.New("signing failed")
		gd, _ := g.Begin(r.ctx, iamUsers)
		var p any
		for range freeRetries + 1 {
			if err := gd.Enter(r.ctx); err != nil {
				t.Fatal(err)
			}
			gd.Release()
			gd.After(signing)
			if p = recovering(func() { gd.Retry(0) }); p != nil {
				break
			}
		}
		if p != "handler" {
			t.Fatalf("the handler's panic reached the caller as %v", p)
		}
		r.lost(t, g, LossErrored, 1)
	})
}

// A transient call of a provider that waits for its breakers' verdicts
// (breaker_wait), whose retry the empty budget refuses, counts its failure
// towards the breaker before the log says the budget ran out.
func TestABudgetsBreakerFailureIsRecordedBeforeTheLogHearsOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{RetryBudget: new(0), BreakerWait: true, BreakerThreshold: 1}}
		quiet := newGov(t, cfg)
		loud := newGov(t, cfg, WithLogger(slog.New(panicOn("cloudg: retry budget exhausted"))))
		ctx := context.Background()
		for _, g := range []*Governor{quiet, loud} {
			gd, _ := g.Begin(ctx, iamUsers)
			for range freeRetries + 1 {
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.Release()
				gd.After(transientErr())
				if p := recovering(func() { gd.Retry(0) }); p != nil {
					break
				}
			}
		}
		want, got := quiet.Inspect(iamUsers), loud.Inspect(iamUsers)
		if want.Breaker.State != state.Open {
			t.Fatalf("without the handler: the breaker %+v", want.Breaker)
		}
		if got.Breaker.State != want.Breaker.State || got.OpenReason != want.OpenReason {
			t.Fatalf("after the handler panicked: breaker %v opened for %q; want %v for %q",
				got.Breaker.State, got.OpenReason, want.Breaker.State, want.OpenReason)
		}
	})
}

// A retry that finds its scope dead opens the breaker, which refuses it:
// the call is recorded as given up before the log says the breaker
// opened.
func TestARetryRefusedByADeadScopeIsRecordedBeforeTheLogHearsOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1}},
			WithLogger(slog.New(panicOn("cloudg: circuit breaker open"))))
		r := newRun(context.Background())
		throttled := func(context.Context) error { return throttle() }
		if p := recovering(func() { Do(r.ctx, iamUsers, throttled, WithGovernor(g)) }); p != "handler" {
			t.Fatalf("the handler's panic reached the caller as %v", p)
		}
		r.lost(t, g, LossGaveUp, 1)
		if s := g.Inspect(iamUsers); s.Breaker.State != state.Open || s.Dead != "throttled for good" {
			t.Fatalf("the scope: dead %q, breaker %+v", s.Dead, s.Breaker)
		}

		// Without the panic, the events say it in that order: the breaker
		// opened, then the call gave up.
		rec := &recorder{}
		g = newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1}}, WithObserver(rec))
		Do(context.Background(), iamUsers, throttled, WithGovernor(g))
		kinds := rec.kinds()
		if n := len(kinds); n < 2 || kinds[n-2] != "breaker_change" || kinds[n-1] != "gave_up" {
			t.Fatalf("the events: %v", kinds)
		}
	})
}

// A call of Do whose retry's record panics (the log handler, on the line
// that says the retry budget ran out of a provider that waits for its
// breakers' verdicts) is lost as panicked, as one whose answer's record
// panics is.
func TestDoLostPanickedDecidingARetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0), BreakerWait: true}},
			WithLogger(slog.New(panicOn("cloudg: retry budget exhausted"))))
		r := newRun(context.Background())
		failing := func(context.Context) error { return transientErr() }
		if p := recovering(func() { Do(r.ctx, iamUsers, failing, WithGovernor(g)) }); p != "handler" {
			t.Fatalf("the handler's panic reached the caller as %v", p)
		}
		r.lost(t, g, LossPanicked, 1)
	})
}

// The observer hears an event before the log does, so that a log
// handler's panic on a line does not keep the event from the observer (a
// metrics pipeline would miss the throttle the log panicked on).
func TestTheObserverHearsAnEventTheLogPanickedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newGov(t, Config{}, WithObserver(rec), WithLogger(slog.New(panicOn("cloudg: throttled"))))
		ctx := context.Background()
		gd, _ := g.Begin(ctx, iamUsers)
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		if r := recovering(func() { gd.After(throttle()) }); r != "handler" {
			t.Fatalf("the handler's panic reached the caller as %v", r)
		}
		if ev := rec.first(observe.Throttle); ev.Kind != observe.Throttle || ev.Scope != iamUsers {
			t.Fatalf("the observer heard %v, want the throttle of %v the log panicked on", rec.kinds(), iamUsers)
		}
	})
}
