//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// recorder keeps the events it observes; it also calls back into the
// governor, which would deadlock if an event came under a lock.
type recorder struct {
	mu  sync.Mutex
	g   *Governor
	evs []observe.Event
}

func (r *recorder) Observe(ev observe.Event) {
	if r.g != nil {
		r.g.Inspect(ev.Scope)
		r.g.Summary(nil)
		for range r.g.Scopes() {
		}
	}
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		out = append(out, ev.Kind.String())
	}
	return out
}

func (r *recorder) first(k observe.Kind) observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.evs {
		if ev.Kind == k {
			return ev
		}
	}
	return observe.Event{}
}

// A throttled call that retries and gives up tells the observer each step,
// in order, outside every lock of the governor.
func TestObserverSeesEveryStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 2, Burst: 1}}}}, WithObserver(rec))
		rec.g = g
		ctx := context.WithValue(context.Background(), struct{}{}, "call")
		n := 0
		Do(ctx, iamUsers, always(&n, throttleAfter(3*time.Second)), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 2}))
		got := strings.Join(rec.kinds(), " ")
		want := "call throttle rate_change pause wait retry call throttle rate_change pause gave_up"
		if got != want {
			t.Fatalf("events %q\nwant   %q", got, want)
		}
		th := rec.first(observe.Throttle)
		if th.Scope != iamUsers || !th.HasHint || th.Hint != 3*time.Second || th.Err == nil || th.Context != ctx {
			t.Fatalf("throttle %+v", th)
		}
		if rc := rec.first(observe.RateChange); rc.OldRate != 2 || rc.Rate != 1 || rc.Ceiling != 2 {
			t.Fatalf("rate change %+v", rc)
		}
		if p := rec.first(observe.Pause); p.Until.Sub(p.Time) != 3*time.Second {
			t.Fatalf("pause %+v", p)
		}
		// The retry backs off for the 3 s hint, then waits a second for a
		// token of the drained leaf, now at 1 rps.
		if w := rec.first(observe.Wait); w.Level != "leaf" || w.Wait != time.Second {
			t.Fatalf("wait %+v", w)
		}
		if r := rec.first(observe.Retry); r.Retry != 1 || r.Wait < 3*time.Second {
			t.Fatalf("retry %+v", r)
		}
		if gu := rec.first(observe.GaveUp); gu.Reason != "retries" {
			t.Fatalf("gave up %+v", gu)
		}
	})
}

// Breaker changes and rejections are events, with the states they link.
func TestObserverSeesTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newGov(t, Config{}, WithObserver(rec))
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		n := 0
		for range 6 {
			Do(context.Background(), iamUsers, always(&n, transientErr()), WithGovernor(g), once)
		}
		if b := rec.first(observe.BreakerChange); b.From != state.Closed || b.To != state.Open {
			t.Fatalf("breaker %+v", b)
		}
		if r := rec.first(observe.Rejected); r.Err == nil {
			t.Fatalf("rejected %+v", r)
		}
		time.Sleep(time.Minute)
		rec.mu.Lock()
		rec.evs = nil
		rec.mu.Unlock()
		Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g))
		if got := strings.Join(rec.kinds(), " "); got != "breaker_change call breaker_change" {
			t.Fatalf("the probe's events: %s", got)
		}
		rec.mu.Lock()
		probe, closed := rec.evs[0], rec.evs[2]
		rec.mu.Unlock()
		if probe.From != state.Open || probe.To != state.HalfOpen {
			t.Fatalf("the probe let through: %+v", probe)
		}
		if closed.From != state.HalfOpen || closed.To != state.Closed {
			t.Fatalf("after the probe: %+v", closed)
		}
	})
}

type panicker struct{}

func (panicker) Observe(observe.Event) { panic("observer bug") }

// An observer that panics does not break the call; the panic is logged
// once.
func TestPanickingObserverIsRecoveredAndLoggedOnce(t *testing.T) {
	var buf logBuffer
	g := newGov(t, Config{}, WithObserver(panicker{}), WithLogger(buf.logger()))
	for range 3 {
		if err := Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "observer panicked"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, buf.String())
	}
}

// A retry the empty budget refuses is an event; a throttled call it stops
// is also a give-up, with the budget as its reason.
func TestObserverSeesTheBudgetRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}}, WithObserver(rec))
		n := 0
		Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g))
		if b := rec.first(observe.BudgetExhausted); b.Err == nil || b.Scope != iamUsers {
			t.Fatalf("budget exhausted %+v", b)
		}
		if gu := rec.first(observe.GaveUp); gu.Reason != "budget" {
			t.Fatalf("gave up %+v", gu)
		}
	})
}

// An SDK's retry of a final answer that the empty budget refuses is an
// event too, and no give-up: the answer was not a throttle.
func TestObserverSeesTheBudgetRefuseAFinalRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}}, WithObserver(rec))
		ctx := context.Background()
		gd, _ := g.Begin(ctx, iamUsers, WithPolicy(RetryPolicy{MaxAttempts: 10}))
		gd.Enter(ctx)
		for range 3 {
			gd.After(errors.New("connection closed"))
			gd.Retry(0)
		}
		gd.End(nil)
		if b := rec.first(observe.BudgetExhausted); b.Kind != observe.BudgetExhausted {
			t.Fatalf("events %v", rec.kinds())
		}
		if gu := rec.first(observe.GaveUp); gu.Kind != 0 {
			t.Fatalf("a final answer gave up: %+v", gu)
		}
	})
}

// A pause says which bucket it holds: the leaf, or the account's bucket
// where the provider has one.
func TestObserverSeesWhichBucketIsPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newGov(t, Config{}, WithObserver(rec))
		ctx := context.Background()
		gd, _ := g.Begin(ctx, iamUsers)
		gd.Pause(2 * time.Second)
		arm := Scope{Provider: "azure", Account: "sub", Service: "network"}
		ad, _ := g.Begin(ctx, arm)
		ad.PauseAccount(3 * time.Second)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.evs) != 2 {
			t.Fatalf("events %+v", rec.evs)
		}
		leaf, acct := rec.evs[0], rec.evs[1]
		if leaf.Kind != observe.Pause || leaf.Level != "leaf" || leaf.Until.Sub(leaf.Time) != 2*time.Second || leaf.Scope != iamUsers {
			t.Fatalf("leaf pause %+v", leaf)
		}
		if acct.Kind != observe.Pause || acct.Level != "account" || acct.Until.Sub(acct.Time) != 3*time.Second || acct.Scope != arm {
			t.Fatalf("account pause %+v", acct)
		}
	})
}

// A rate given back after a quiet interval is an event whose old rate is
// the one the controller started from, whatever its step: AIMD's 5 % of
// the ceiling or the goodput controller's own.
func TestObserverSeesTheRateRecover(t *testing.T) {
	for _, controller := range []string{"aimd", "goodput"} {
		t.Run(controller, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				g := newGov(t, Config{AWS: ProviderConfig{Controller: controller, Services: map[string]ServiceConfig{"iam": {MaxRPS: 10, Burst: 10}}}}, WithObserver(rec))
				n := 0
				once := WithPolicy(RetryPolicy{MaxAttempts: 1})
				Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), once)
				slowed := rate(g, iamUsers)
				// Past either controller's quiet time (AIMD's 5 s, the
				// goodput controller's 8 s).
				time.Sleep(bucket.GoodputQuiet + time.Second)
				rec.mu.Lock()
				rec.evs = nil
				rec.mu.Unlock()
				Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g), once)
				rc := rec.first(observe.RateChange)
				if rc.Kind != observe.RateChange || rc.OldRate != slowed || rc.Rate != rate(g, iamUsers) || rc.Rate <= slowed || rc.Ceiling != 10 {
					t.Fatalf("slowed to %v, now %v; event %+v", slowed, rate(g, iamUsers), rc)
				}
			})
		})
	}
}

// A retry's event carries the delay Retry gave it: an SDK's retry of a
// final answer goes with none, whatever the delay of the retry before it.
func TestRetryEventOfAFinalRetryHasNoDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newGov(t, Config{}, WithObserver(rec))
		ctx := context.Background()
		gd, _ := g.Begin(ctx, iamUsers)
		gd.Enter(ctx)
		gd.After(throttleAfter(3 * time.Second))
		d, _ := gd.Retry(0)
		time.Sleep(d)
		gd.Enter(ctx)
		gd.After(errors.New("connection closed"))
		if d, err := gd.Retry(0); d != 0 || err != nil {
			t.Fatalf("the final answer's retry: %v, %v", d, err)
		}
		gd.Enter(ctx)
		gd.End(nil)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var delays []time.Duration
		for _, ev := range rec.evs {
			if ev.Kind == observe.Retry {
				delays = append(delays, ev.Wait)
			}
		}
		if len(delays) != 2 || delays[0] != 3*time.Second || delays[1] != 0 {
			t.Fatalf("the retries' delays %v, want [3s 0s]", delays)
		}
	})
}
