//go:build go1.25

package resilience_test

// Regression tests: the failing sequences TestModel found and shrank,
// written out. Each states the rule the sequence broke. Those whose defect
// knownOpen lists fail until its fix merges; a test that crashed or hung
// the process runs in a child process (childtest.InChild), so that it fails
// instead.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/childtest"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

var (
	regAWS     = resilience.Scope{Provider: "aws", Account: "111111111111", Service: "iam", Operation: "ListUsers"}
	regAWS2    = resilience.Scope{Provider: "aws", Account: "111111111111", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	regGeneric = resilience.Scope{Provider: "github", Account: "org-1", Service: "repos"}
	succeed    = func(context.Context) error { return nil }
)

// events is an observer that keeps what it sees.
type events struct {
	mu sync.Mutex
	ev []observe.Event
}

func (o *events) Observe(e observe.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ev = append(o.ev, e)
}

func (o *events) of(k observe.Kind) []observe.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []observe.Event
	for _, e := range o.ev {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func newRegGov(t *testing.T, cfg resilience.Config, opts ...resilience.GovernorOption) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ---- generic providers served from a stale read copy (fixed) ----

// A generic provider looked up twice, then Reset, then called again: the
// call must go through (before the fix: fatal error: stack overflow).
func TestRegressGenericProviderAfterReset(t *testing.T) {
	if !childtest.InChild(t, time.Minute) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{})
		for range 2 {
			if err := resilience.Do(context.Background(), regGeneric, succeed, resilience.WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		g.Reset()
		if err := resilience.Do(context.Background(), regGeneric, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	})
}

// Configure(enabled: false) turns a generic provider off like the others
// (before the fix Enabled("github") stayed true), and turning it on again
// leaves it callable (before the fix: fatal error: stack overflow).
func TestRegressGenericProviderAfterDisable(t *testing.T) {
	if !childtest.InChild(t, time.Minute) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{})
		for range 2 {
			if err := resilience.Do(context.Background(), regGeneric, succeed, resilience.WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		off := false
		if err := g.Configure(resilience.Config{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		if g.Enabled("github") {
			t.Errorf(`Enabled("github") = true after Configure(enabled: false)`)
		}
		if err := g.Configure(resilience.Config{}); err != nil {
			t.Fatal(err)
		}
		if err := resilience.Do(context.Background(), regGeneric, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if !g.Enabled("github") {
			t.Errorf(`Enabled("github") = false after Configure(enabled on)`)
		}
	})
}

// A generic provider looked up without a scope (Enabled) is forgotten by
// the next reclamation pass, which any call runs; the next call to it must
// go through (before the fix: fatal error: stack overflow). No time
// passes.
func TestRegressGenericProviderForgottenWhileEmpty(t *testing.T) {
	if !childtest.InChild(t, time.Minute) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{}, resilience.WithReclaimAfter(1000*time.Hour))
		g.Enabled("github")
		g.Enabled("github")
		if err := resilience.Do(context.Background(), regAWS, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if err := resilience.Do(context.Background(), regGeneric, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	})
}

// A generic provider whose scopes went idle and were reclaimed must be
// callable again (before the fix: fatal error: stack overflow).
func TestRegressGenericProviderAfterIdleReclaim(t *testing.T) {
	if !childtest.InChild(t, time.Minute) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{})
		for range 2 {
			if err := resilience.Do(context.Background(), regGeneric, succeed, resilience.WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		for range 30 { // other calls run the reclamation passes
			time.Sleep(time.Minute)
			if err := resilience.Do(context.Background(), regAWS, succeed, resilience.WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		if err := resilience.Do(context.Background(), regGeneric, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	})
}

// ---- TryEnter's side effects (fixed) ----

// openOnce opens scope's breaker (threshold 1, no retries) with one
// throttled call.
func openOnce(t *testing.T, g *resilience.Governor, scope resilience.Scope) {
	t.Helper()
	err := resilience.Do(context.Background(), scope, func(context.Context) error { return aThrottle.err() }, resilience.WithGovernor(g))
	if err == nil {
		t.Fatal("the throttled call succeeded")
	}
	if st := g.Inspect(scope).Breaker.State; st != state.Open {
		t.Fatalf("the breaker is %v, want open", st)
	}
}

// A TryEnter that cannot go (no token) takes nothing: not the probe's
// lease of a breaker whose cooldown is over, so that the next caller is
// let through as the probe (before the fix the lease was kept, the
// breaker reported half-open, and the next caller refused for a
// cooldown).
func TestRegressTryEnterKeepsTheProbeLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := new(events)
		zero := 0
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{
			BreakerThreshold: 1, BreakerCooldownSeconds: 5, MaxRetries: &zero,
			Services: map[string]resilience.ServiceConfig{"iam": {MaxRPS: 0.1, MinRPS: 0.1, Burst: 1}},
		}}, resilience.WithObserver(obs))
		openOnce(t, g, regAWS) // takes the one token
		time.Sleep(5 * time.Second)

		gd, _ := g.Begin(context.Background(), regAWS)
		if err := gd.TryEnter(); !errors.Is(err, resilience.ErrNoToken) {
			t.Fatalf("TryEnter = %v, want a refusal for want of a token (none for 5s)", err)
		}
		gd.End(nil)
		if n := len(obs.of(observe.BreakerChange)); n != 1 { // closed -> open only
			t.Errorf("a refused TryEnter reported a breaker change: %d changes", n)
		}
		if st := g.Inspect(regAWS).Breaker.State; st != state.Open {
			t.Errorf("after a refused TryEnter the breaker is %v, want open (its cooldown is over, nobody probes)", st)
		}
		// The next caller waits for its token and goes as the probe.
		if err := resilience.Do(context.Background(), regAWS, succeed, resilience.WithGovernor(g)); err != nil {
			t.Errorf("the next call after a refused TryEnter: %v, want it to go as the probe", err)
		}
	})
}

// A TryEnter refused by an open breaker records nothing: no rejection in
// the stats, no skipped call in the ledger, whatever the number of tries
// (before the fix each counted one).
func TestRegressTryEnterAgainstAnOpenBreakerRecordsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		zero := 0
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1, MaxRetries: &zero}})
		openOnce(t, g, regAWS)
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "task")
		gd, _ := g.Begin(ctx, regAWS)
		for range 3 {
			var coe *resilience.CircuitOpenError
			if err := gd.TryEnter(); !errors.As(err, &coe) {
				t.Fatalf("TryEnter = %v, want a *CircuitOpenError", err)
			}
		}
		gd.End(nil)
		if n := g.Summary(stats).Totals.Rejected; n != 0 {
			t.Errorf("three refused TryEnters counted %d rejections", n)
		}
		if _, skipped := ledger.Counts(); skipped != 0 {
			t.Errorf("three refused TryEnters put %d skipped calls in the ledger", skipped)
		}
	})
}

// ---- knownGuardStale ----

// Reset forgets the breakers, for a guard begun before it too (today the
// guard's next call is refused by the forgotten open breaker while Do
// goes through).
func TestRegressGuardAfterResetAsksTheForgottenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		zero := 0
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1, MaxRetries: &zero}})
		gd, _ := g.Begin(context.Background(), regAWS)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		gd.After(aThrottle.err())
		gd.Retry(0)
		gd.End(nil)
		if st := g.Inspect(regAWS).Breaker.State; st != state.Open {
			t.Fatalf("the breaker is %v, want open", st)
		}
		g.Reset()
		if err := gd.Enter(context.Background()); err != nil {
			t.Errorf("after Reset the guard's next call: %v, want it let through", err)
		}
		gd.End(nil)
	})
}

// After Configure makes a scope's bucket afresh, a guard begun before it
// takes its tokens from the new bucket: one bucket per scope (today it
// takes one from the retired bucket too, two requests at once through a
// burst of one).
func TestRegressGuardAfterConfigureUsesTheRetiredBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{})
		gd, _ := g.Begin(context.Background(), regAWS)
		if err := g.Configure(resilience.Config{AWS: resilience.ProviderConfig{
			Services: map[string]resilience.ServiceConfig{"iam": {MaxRPS: 0.5, Burst: 1}},
		}}); err != nil {
			t.Fatal(err)
		}
		if err := resilience.Do(context.Background(), regAWS, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if err := gd.TryEnter(); err == nil {
			t.Errorf("a second request went at once through a bucket of 0.5 rps, burst 1")
		}
		gd.End(nil)
	})
}

// The same after the idle reclamation drops the scope of a guard that
// waits (today the guard takes a token from the dropped bucket).
func TestRegressGuardAfterIdleReclaimUsesTheDroppedBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{
			Services: map[string]resilience.ServiceConfig{"iam": {MaxRPS: 0.5, Burst: 1}},
		}})
		gd, _ := g.Begin(context.Background(), regAWS)
		time.Sleep(61 * time.Second)
		// A call elsewhere runs the reclamation pass that drops regAWS's scope.
		if err := resilience.Do(context.Background(), regAWS2, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if err := resilience.Do(context.Background(), regAWS, succeed, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if err := gd.TryEnter(); err == nil {
			t.Errorf("a second request went at once through a bucket of 0.5 rps, burst 1")
		}
		gd.End(nil)
	})
}

// ---- knownRetiredWait ----

// A wait for a token that ends after a Reset is in the lifetime stats
// the Reset started, as the observer reports it (today a scope that had
// lifetime counters before the Reset, from a throttle, counts it in the
// forgotten ones).
func TestRegressWaitAcrossResetIsNotInTheLifetimeStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := new(events)
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{
			Services: map[string]resilience.ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}},
		}}, resilience.WithObserver(obs))
		n := 0
		first := make(chan error)
		go func() {
			first <- resilience.Do(context.Background(), regAWS, func(context.Context) error {
				if n++; n == 1 {
					return aThrottle.err() // the scope gets lifetime counters
				}
				return nil
			}, resilience.WithGovernor(g))
		}()
		synctest.Wait()
		second := make(chan error)
		go func() { second <- resilience.Do(context.Background(), regAWS, succeed, resilience.WithGovernor(g)) }()
		synctest.Wait() // both wait: the retry for its backoff, the second for its token
		before := len(obs.of(observe.Wait))
		g.Reset()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		after := len(obs.of(observe.Wait)) - before
		if after == 0 {
			t.Fatal("no wait ended after the Reset")
		}
		if n := g.Summary(nil).Totals.Waits; n != int64(after) {
			t.Errorf("the lifetime stats count %d waits since the Reset; the observer saw %d end after it", n, after)
		}
	})
}

// A call waiting for its breaker's verdict when Configure replaces the
// breaker does not probe the retired one: a breaker change reported for a
// scope is one its breaker made (today the call becomes the retired
// breaker's probe, reporting open -> half_open while Inspect shows the
// scope's breaker closed).
func TestRegressVerdictWaitProbesTheRetiredBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := new(events)
		zero := 0
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{
			BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 5, MaxRetries: &zero, DeadlineSeconds: 20,
		}}, resilience.WithObserver(obs))
		n := 0
		done := make(chan error)
		go func() {
			done <- resilience.Do(context.Background(), regAWS, func(context.Context) error {
				if n++; n == 1 {
					return aTransient.err()
				}
				return nil
			}, resilience.WithGovernor(g))
		}()
		synctest.Wait()                                          // failed once, the breaker opened; it waits for a verdict
		if err := g.Configure(resilience.Config{}); err != nil { // new breakers
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, e := range obs.of(observe.BreakerChange) {
			if e.To == state.HalfOpen {
				t.Errorf("after Configure replaced the breaker, the waiting call reported %v -> %v; Inspect shows %v", e.From, e.To, g.Inspect(regAWS).Breaker.State)
			}
		}
	})
}

// ---- knownMislabelledReopen ----

// A breaker change reports where the breaker was. Two calls that fail
// late (today the change is guessed from the call's role): one let
// through while the breaker was closed that fails once it is half-open,
// and a probe that fails after another call closed the breaker.
func TestRegressLateFailureReportsTheWrongBreakerChange(t *testing.T) {
	cfg := func() resilience.Config {
		zero := 0
		return resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 5, MaxRetries: &zero}}
	}
	// blocked starts a call whose one attempt waits for release, then
	// answers with a.
	blocked := func(g *resilience.Governor, a answer) (release func(), done chan error) {
		r := make(chan struct{})
		done = make(chan error, 1)
		go func() {
			done <- resilience.Do(context.Background(), regAWS, func(context.Context) error {
				<-r
				return a.err()
			}, resilience.WithGovernor(g))
		}()
		synctest.Wait()
		return func() { close(r) }, done
	}
	opening := func(obs *events) []observe.Event {
		var out []observe.Event
		for _, e := range obs.of(observe.BreakerChange) {
			if e.To == state.Open {
				out = append(out, e)
			}
		}
		return out
	}

	t.Run("let through while closed, fails while half-open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			obs := new(events)
			g := newRegGov(t, cfg(), resilience.WithObserver(obs))
			releaseLate, lateDone := blocked(g, aThrottle) // let through while closed
			openOnce(t, g, regAWS)
			time.Sleep(5 * time.Second)
			releaseProbe, probeDone := blocked(g, aOK) // the probe: half-open
			releaseLate()
			<-lateDone
			if st := g.Inspect(regAWS).Breaker.State; st != state.Open {
				t.Fatalf("the breaker is %v after the late failure, want open", st)
			}
			ev := opening(obs)
			if last := ev[len(ev)-1]; last.From != state.HalfOpen {
				t.Errorf("the late failure reopened a half-open breaker; the event says %v -> %v", last.From, last.To)
			}
			releaseProbe()
			<-probeDone
		})
	})
	t.Run("a probe fails after another call closed the breaker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			obs := new(events)
			g := newRegGov(t, cfg(), resilience.WithObserver(obs))
			releaseOK, okDone := blocked(g, aOK) // let through while closed
			openOnce(t, g, regAWS)
			time.Sleep(5 * time.Second)
			releaseProbe, probeDone := blocked(g, aThrottle) // the probe
			releaseOK()
			<-okDone // its success closes the half-open breaker
			if st := g.Inspect(regAWS).Breaker.State; st != state.Closed {
				t.Fatalf("the breaker is %v after a success, want closed", st)
			}
			releaseProbe()
			<-probeDone
			ev := opening(obs)
			if last := ev[len(ev)-1]; last.From != state.Closed {
				t.Errorf("the probe's failure opened a closed breaker; the event says %v -> %v", last.From, last.To)
			}
		})
	})
}

// ---- knownBreakerWaitSpin ----

// A breaker_wait call whose every attempt fails with a transient error
// ends within its deadline (today, once it is the probe and fails, it
// spins at one instant of its clock: it never returns, and the bubble's
// clock never moves again).
func TestRegressBreakerWaitProbeSpins(t *testing.T) {
	if !childtest.InChild(t, 10*time.Second) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		zero := 0
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{
			BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 5, MaxRetries: &zero, DeadlineSeconds: 60,
		}})
		err := resilience.Do(context.Background(), regAWS, func(context.Context) error { return aTransient.err() }, resilience.WithGovernor(g))
		if err == nil {
			t.Fatal("a call whose attempts all fail succeeded")
		}
	})
}

// A breaker_wait call that was its breaker's probe, whose lease ran out
// and whose breaker another probe reopened meanwhile, waits out the new
// cooldown and goes as the next probe (before the fix it kept asking
// AllowProbe, which refuses an open breaker with no wait once the
// cooldown is over: it spun at one instant of its clock).
func TestRegressBreakerWaitStaleProbeSpins(t *testing.T) {
	if !childtest.InChild(t, 10*time.Second) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{
			BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 5, DeadlineSeconds: 60,
		}})
		bg := context.Background()
		fail := func() { // a call that fails once and gives up: a breaker failure
			gd, _ := g.Begin(bg, regAWS)
			if err := gd.Enter(bg); err != nil {
				t.Fatal(err)
			}
			gd.After(aThrottle.err())
			gd.End(aThrottle.err())
		}
		fail() // the breaker opens for 5s
		time.Sleep(5 * time.Second)
		probe, _ := g.Begin(bg, regAWS)
		if err := probe.Enter(bg); err != nil { // the probe
			t.Fatal(err)
		}
		probe.After(aTransient.err())
		time.Sleep(5 * time.Second) // its lease runs out
		fail()                      // the next probe fails: open again, for 10s
		if st := g.Inspect(regAWS).Breaker.State; st != state.Open {
			t.Fatalf("the breaker is %v, want open", st)
		}
		if _, err := probe.Retry(0); err != nil {
			t.Fatal(err)
		}
		if err := probe.Enter(bg); err != nil {
			t.Fatalf("the retry of the stale probe: %v", err)
		}
		if st := g.Inspect(regAWS).Breaker.State; st != state.HalfOpen {
			t.Errorf("the retry went with the breaker %v, want half_open (its probe)", st)
		}
		probe.After(nil)
		probe.End(nil)
	})
}

// ---- Retry on a disabled provider (fixed) ----

// Retry on a guard of a disabled provider applies the policy's attempts
// and returns the answer once they are spent (before the fix: nil
// pointer panic).
func TestRegressRetryOnADisabledProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off, zero := false, 0
		g := newRegGov(t, resilience.Config{AWS: resilience.ProviderConfig{Enabled: &off, MaxRetries: &zero}})
		gd, _ := g.Begin(context.Background(), regAWS)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		answer := aThrottle.err()
		gd.After(answer)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Retry panicked: %v", r)
				}
			}()
			if _, err := gd.Retry(0); !errors.Is(err, answer) {
				t.Errorf("Retry with no attempts left = %v, want the answer", err)
			}
		}()
		gd.End(nil)
	})
}

// A retry Pace readied and sent, whose transient answer only End hears, is
// counted as a transient error, in the run's stats and the governor's,
// though a Configure came between (TestModel's phase for it stayed failed
// after Pace, and so expected nothing to be counted).
func TestRegressEndHearsTheAnswerOfARetryPaceSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRegGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		gd, _ := g.Begin(ctx, regAWS)
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.After(aThrottle.err())
		if err := gd.Pace(ctx); err != nil {
			t.Fatal(err)
		}
		if err := g.Configure(resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 2}}); err != nil {
			t.Fatal(err)
		}
		gd.End(aTransient.err())
		if run, life := g.Summary(stats).Totals, g.Summary(nil).Totals; run.TransientErrors != 1 || life.TransientErrors != 1 || run.Retries != 1 {
			t.Fatalf("run %+v, lifetime %+v; want one retry and one transient error in each", run, life)
		}
	})
}
