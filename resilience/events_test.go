//go:build go1.25

package resilience

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// recorder keeps the events it observes; it also calls back into the
// governor, which would deadlock if an event came under a lock.
type recorder struct {
	mu  sync.Mutex
	g   *Governor
	evs []Event
}

func (r *recorder) Observe(ev Event) {
	if r.g != nil {
		r.g.Inspect(ev.Scope)
		r.g.Summary(nil)
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

func (r *recorder) first(k EventKind) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.evs {
		if ev.Kind == k {
			return ev
		}
	}
	return Event{}
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
		th := rec.first(EventThrottle)
		if th.Scope != iamUsers || !th.HasHint || th.Hint != 3*time.Second || th.Err == nil || th.Context != ctx {
			t.Fatalf("throttle %+v", th)
		}
		if rc := rec.first(EventRateChange); rc.OldRate != 2 || rc.Rate != 1 || rc.Ceiling != 2 {
			t.Fatalf("rate change %+v", rc)
		}
		if p := rec.first(EventPause); p.Until.Sub(p.Time) != 3*time.Second {
			t.Fatalf("pause %+v", p)
		}
		// The retry backs off for the 3 s hint, then waits a second for a
		// token of the drained leaf, now at 1 rps.
		if w := rec.first(EventWait); w.Level != "leaf" || w.Wait != time.Second {
			t.Fatalf("wait %+v", w)
		}
		if r := rec.first(EventRetry); r.Retry != 1 || r.Wait < 3*time.Second {
			t.Fatalf("retry %+v", r)
		}
		if gu := rec.first(EventGaveUp); gu.Reason != "retries" {
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
		if b := rec.first(EventBreakerChange); b.From != state.Closed || b.To != state.Open {
			t.Fatalf("breaker %+v", b)
		}
		if r := rec.first(EventRejected); r.Err == nil {
			t.Fatalf("rejected %+v", r)
		}
		time.Sleep(time.Minute)
		Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g))
		rec.mu.Lock()
		last := rec.evs[len(rec.evs)-1]
		rec.mu.Unlock()
		if last.Kind != EventBreakerChange || last.From != state.HalfOpen || last.To != state.Closed {
			t.Fatalf("after the probe: %+v", last)
		}
	})
}

type panicker struct{}

func (panicker) Observe(Event) { panic("observer bug") }

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

// The log: throttles at Debug, give-ups at Warn, breaker changes at Info,
// each part of the scope an attribute of its own.
func TestLogLevelsAndScopeAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		n := 0
		for range 5 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		out := buf.String()
		for _, want := range []string{
			`level=DEBUG msg="cloudg: throttled"`,
			`level=WARN msg="cloudg: call gave up"`,
			`level=INFO msg="cloudg: circuit breaker open"`,
			`provider=aws account=123456789012 service=iam operation=ListUsers`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
	})
}

// Scopes lists the live scopes with their parts and where each stands.
func TestScopesIteration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gcp := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		n := 0
		Do(context.Background(), gcp, always(&n, &apiErr{code: "ResourceExhausted", status: 429}), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g))
		seen := map[Scope]state.ScopeSnapshot{}
		for sc, snap := range g.Scopes() {
			seen[sc] = snap
		}
		if len(seen) != 2 {
			t.Fatalf("scopes %v", seen)
		}
		if s := seen[gcp]; s.Leaf.Rate != 0.75 || s.Leaf.Ceiling != 1.5 || s.MaxInFlight != 16 || s.RetryBudget != 500 {
			t.Fatalf("gcp %+v", s)
		}
		if _, ok := seen[Scope{Provider: "aws", Account: "123456789012", Service: "iam"}]; !ok {
			t.Fatal("the IAM leaf is missing")
		}
	})
}
