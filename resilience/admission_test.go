//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// admissionRec is an Admission that keeps what the governor told it.
type admissionRec struct {
	decided  int
	deferred []error
	waits    []time.Duration
}

func (a *admissionRec) Decided() { a.decided++ }
func (a *admissionRec) Deferred(wait time.Duration, err error) {
	a.deferred = append(a.deferred, err)
	a.waits = append(a.waits, wait)
}

// A scheduler's first call that may not wait for an open breaker's
// verdict (breaker_wait) is deferred with a *WouldWaitError whose check
// is the breaker: errors.Is finds ErrCircuitOpen, and its message names
// the breaker and its wait, not a rate token.
func TestDeferredByTheBreakerSaysTheCircuitIsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true}})
		n := 0
		for range 5 { // five throttles open the breaker for 60 s
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		var a admissionRec
		ctx, ledger := WithLedger(context.Background(), "task")
		err := Do(WithAdmission(ctx, &a, time.Second), iamUsers, always(&n, nil), WithGovernor(g))
		var ww *WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, ErrCircuitOpen) || errors.Is(err, ErrNoToken) {
			t.Fatalf("the first call under an admission of 1 s, breaker open for 60 s: %T %v", err, err)
		}
		const want = "circuit open now for aws/123456789012/*/iam/ListUsers; retry in 60s"
		if msg := err.Error(); msg != want || strings.Contains(msg, "rate token") {
			t.Fatalf("message %q, want %q", msg, want)
		}
		if len(a.deferred) != 1 || a.deferred[0] != err || a.waits[0] != 60*time.Second || a.decided != 0 || ledger.Lost() != 0 {
			t.Fatalf("deferred %v after %v, decided %d, %d lost", a.deferred, a.waits, a.decided, ledger.Lost())
		}
	})
}

// panickingAdmission panics in Decided, or in Deferred.
type panickingAdmission struct{ inDeferred bool }

func (a panickingAdmission) Decided() {
	if !a.inDeferred {
		panic("scheduler bug in Decided")
	}
}

func (a panickingAdmission) Deferred(time.Duration, error) {
	if a.inDeferred {
		panic("scheduler bug in Deferred")
	}
}

// doRecovering is Do, with a panic that escapes it returned.
func doRecovering(ctx context.Context, sc Scope, fn func(context.Context) error, opts ...CallOption) (err error, escaped any) {
	defer func() { escaped = recover() }()
	return Do(ctx, sc, fn, opts...), nil
}

// A scheduler's Admission that panics, once the call holds its slot
// (Decided) or when it is deferred (Deferred), does not break the call
// and leaks no slot: the call goes on as if the scheduler had been told,
// and the panic is logged once per governor.
func TestPanickingAdmissionLeaksNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithLogger(buf.logger()))
		ok := func(context.Context) error { return nil }
		for i := range 3 {
			sent := 0
			err, escaped := doRecovering(WithAdmission(context.Background(), panickingAdmission{}, time.Minute), iamUsers,
				func(context.Context) error { sent++; return nil }, WithGovernor(g))
			if escaped != nil || err != nil || sent != 1 {
				t.Errorf("call %d, Decided panicking: err %v, %d sent, panic escaped: %v", i+1, err, sent, escaped)
			}
			if s := g.Inspect(iamUsers); s.InFlight != 0 {
				t.Fatalf("call %d, Decided panicking: %d slots still held after it", i+1, s.InFlight)
			}
		}
		// Deferred: a call holds the only slot, and the first call under the
		// admission may not wait for it.
		gd, _ := g.Begin(context.Background(), iamUsers)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		err, escaped := doRecovering(WithAdmission(context.Background(), panickingAdmission{inDeferred: true}, 0), iamUsers, ok, WithGovernor(g))
		if escaped != nil || !errors.Is(err, ErrNoSlot) {
			t.Errorf("Deferred panicking: err %v, panic escaped: %v", err, escaped)
		}
		gd.End(nil)
		if s := g.Inspect(iamUsers); s.InFlight != 0 {
			t.Fatalf("%d slots still held after every call ended", s.InFlight)
		}
		if n := strings.Count(buf.String(), "Admission panicked"); n != 1 {
			t.Fatalf("the panics logged %d times, want once:\n%s", n, buf.String())
		}
	})
}

// A max wait too long to add to the time (math.MaxInt64, "no bound")
// bounds nothing a call waits: WithMaxWait's and WithAdmission's are held
// to the longest configured time instead of wrapping to a bound already
// past, which refused every wait.
func TestEndlessMaxWaitBoundsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}})
		time.Sleep(time.Minute) // the governor's time is well past 0
		ok := func(context.Context) error { return nil }
		for i := range 3 { // the second and third wait a second for their token
			if err := Do(WithMaxWait(context.Background(), math.MaxInt64), iamUsers, ok, WithGovernor(g)); err != nil {
				t.Fatalf("WithMaxWait(MaxInt64), call %d: %v", i+1, err)
			}
			var a admissionRec
			if err := Do(WithAdmission(context.Background(), &a, math.MaxInt64), iamUsers, ok, WithGovernor(g)); err != nil || a.decided != 1 {
				t.Fatalf("WithAdmission(MaxInt64), call %d: %v, decided %d", i+1, err, a.decided)
			}
		}
	})
}

// A call of a disabled provider goes at once, ungoverned, and decides the
// admission its context carries as it begins, through Do, a Bound and
// Begin alike: a scheduler holding the scope's next task until then does
// not hold it until the task ends. A second call under the context
// decides nothing more.
func TestAnUngovernedCallDecidesItsAdmission(t *testing.T) {
	off := false
	g := newGov(t, Config{AWS: ProviderConfig{Enabled: &off}})
	ok := func(context.Context) error { return nil }
	b, err := g.Bind(iamUsers)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(ctx context.Context) error{
		"Do":    func(ctx context.Context) error { return Do(ctx, iamUsers, ok, WithGovernor(g)) },
		"Bound": func(ctx context.Context) error { return b.Do(ctx, ok) },
		"Begin": func(ctx context.Context) error {
			b2, err := b.Begin(ctx)
			if err != nil {
				return err
			}
			b2.End(nil)
			_, err = g.Begin(ctx, iamUsers)
			return err
		},
	} {
		var a admissionRec
		ctx := WithAdmission(context.Background(), &a, 0)
		if err := call(ctx); err != nil {
			t.Fatal(err)
		}
		if err := call(ctx); err != nil {
			t.Fatal(err)
		}
		if a.decided != 1 || len(a.deferred) != 0 {
			t.Errorf("%s: decided %d times, deferred %d, want 1 and 0", name, a.decided, len(a.deferred))
		}
	}
}

// WithAdmission with a nil Admission gives a context whose calls claim no
// admission: the context of a task that declared no scope, submitted by a
// task whose first call is still to come. Its call to a paused scope
// waits out the pause, and the admission it came with stays for the
// parent's call; the max wait of WithMaxWait stays in force.
func TestANilAdmissionLeavesTheHoldToItsOwner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, iamUsers, 2*time.Second)
		var a admissionRec
		parent := WithAdmission(context.Background(), &a, 10*time.Second)
		n := 0
		start := time.Now()
		if err := Do(WithAdmission(parent, nil, 0), iamUsers, always(&n, nil), WithGovernor(g)); err != nil || time.Since(start) < 2*time.Second {
			t.Fatalf("the child's call: %v after %v, want nil after the 2 s pause", err, time.Since(start))
		}
		if a.decided != 0 || len(a.deferred) != 0 {
			t.Fatalf("the child's call took the parent's admission: decided %d, deferred %d", a.decided, len(a.deferred))
		}
		if err := Do(parent, iamUsers, always(&n, nil), WithGovernor(g)); err != nil || a.decided != 1 {
			t.Fatalf("the parent's call: %v, decided %d", err, a.decided)
		}
		pauseScope(t, g, iamUsers, 2*time.Second)
		bounded := WithAdmission(WithMaxWait(parent, time.Second), nil, 0)
		var ww *WouldWaitError
		if err := Do(bounded, iamUsers, always(&n, nil), WithGovernor(g)); !errors.As(err, &ww) {
			t.Fatalf("under WithMaxWait of 1 s, a 2 s pause: %v, want a *WouldWaitError", err)
		}
		if ctx := context.Background(); WithAdmission(ctx, nil, 0) != ctx {
			t.Fatal("a nil admission over none made a new context")
		}
	})
}

// EndAdmission ends a hold no call has claimed: a call made under the
// context after it is an ordinary call, which waits for its scope (here a
// 2 s pause) instead of being deferred, and tells the scheduler nothing.
// A hold a call claimed before it is that call's still, and a context
// without a hold is left as it was.
func TestEndAdmissionMakesLaterCallsOrdinary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		EndAdmission(context.Background()) // no hold: nothing to end
		n := 0
		var a admissionRec
		ctx := WithAdmission(context.Background(), &a, 0)
		EndAdmission(ctx)
		pauseScope(t, g, iamUsers, 2*time.Second)
		start := time.Now()
		if err := Do(ctx, iamUsers, always(&n, nil), WithGovernor(g)); err != nil || time.Since(start) < 2*time.Second {
			t.Fatalf("a call after EndAdmission: %v after %v, want a success after the 2 s pause", err, time.Since(start))
		}
		if a.decided != 0 || len(a.deferred) != 0 {
			t.Fatalf("a call after EndAdmission claimed the hold: decided %d, deferred %d", a.decided, len(a.deferred))
		}

		var b admissionRec
		ctx = WithAdmission(context.Background(), &b, 0)
		pauseScope(t, g, iamUsers, 2*time.Second)
		if err := Do(ctx, iamUsers, always(&n, nil), WithGovernor(g)); err == nil || len(b.deferred) != 1 {
			t.Fatalf("the first call: %v, deferred %d times; want it deferred once", err, len(b.deferred))
		}
		EndAdmission(ctx) // claimed already: changes nothing
		if b.decided != 0 || len(b.deferred) != 1 {
			t.Fatalf("EndAdmission after the claim: decided %d, deferred %d; want 0 and 1", b.decided, len(b.deferred))
		}
	})
}

// A scheduler's first call that claimed the hold, and is refused for a
// wait past the admission's bound after the scheduler ended the hold
// (EndAdmission: its task returned, and will not run again), is lost: it
// is recorded as refused in the lifetime counters, the run's stats and
// the ledger, and the scheduler is told Decided, not Deferred.
func TestARefusalAfterEndAdmissionIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		gd, _ := g.Begin(context.Background(), ec2Vpcs) // the account's only slot
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		var a admissionRec
		ctx, stats := WithStats(context.Background())
		ctx, ledger := WithLedger(ctx, "task")
		ctx = WithAdmission(ctx, &a, time.Second)
		done := make(chan error, 1)
		go func() { done <- Do(ctx, iamUsers, func(context.Context) error { return nil }, WithGovernor(g)) }()
		synctest.Wait() // the call claimed the hold, and waits for the slot
		EndAdmission(ctx)
		err := <-done // refused at 1 s
		gd.End(nil)
		if !errors.Is(err, ErrNoSlot) {
			t.Fatalf("the call: %v, want a refusal for want of a slot", err)
		}
		run, life := g.Summary(stats).Totals.Refused, g.Summary(nil).Totals.Refused
		if n := ledger.Count(LossRefused); n != 1 || run != 1 || life != 1 || a.decided != 1 || len(a.deferred) != 0 {
			t.Fatalf("refused: ledger %d, stats %d, lifetime %d; decided %d, deferred %v: want 1, 1, 1; 1, none", n, run, life, a.decided, a.deferred)
		}
	})
}

// scopedRec is a ScopedAdmission that keeps the scopes its first calls
// were decided in.
type scopedRec struct {
	admissionRec
	in []Scope
}

func (a *scopedRec) DecidedIn(sc Scope) { a.in = append(a.in, sc) }

// A ScopedAdmission is told the scope its first call was made to, in place
// of Decided: a call sent (Do, a bound scope's Do), one ended before
// sending and recorded (an open breaker's skip), and one of a provider
// turned off, sent at once ungoverned.
func TestAScopedAdmissionIsToldTheFirstCallsScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := false
		g := newGov(t, Config{GCP: ProviderConfig{Enabled: &off}})
		gcp := Scope{Provider: "gcp", Account: "proj", Service: "compute", Operation: "list"}
		n := 0
		for range 5 { // five throttles open iamUsers's breaker
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		cases := []struct {
			sc  Scope
			do  func(ctx context.Context, sc Scope) error
			why string
		}{
			{ec2Vpcs, func(ctx context.Context, sc Scope) error { return Do(ctx, sc, always(&n, nil), WithGovernor(g)) }, "sent"},
			{ec2Subnets, func(ctx context.Context, sc Scope) error {
				b, err := g.Bind(sc)
				if err != nil {
					return err
				}
				return b.Do(ctx, always(&n, nil))
			}, "sent, bound"},
			{iamUsers, func(ctx context.Context, sc Scope) error { return Do(ctx, sc, always(&n, nil), WithGovernor(g)) }, "skipped, breaker open"},
			{gcp, func(ctx context.Context, sc Scope) error { return Do(ctx, sc, always(&n, nil), WithGovernor(g)) }, "provider off"},
		}
		for _, c := range cases {
			var a scopedRec
			ctx := WithAdmission(context.Background(), &a, time.Second)
			c.do(ctx, c.sc)
			c.do(ctx, c.sc) // a later call: not the first
			if len(a.in) != 1 || a.in[0] != c.sc || a.decided != 0 || len(a.deferred) != 0 {
				t.Errorf("%s: DecidedIn %v, Decided %d times, deferred %v; want DecidedIn [%v] alone", c.why, a.in, a.decided, a.deferred, c.sc)
			}
		}
	})
}

// panickingScoped is a ScopedAdmission whose DecidedIn panics.
type panickingScoped struct{ admissionRec }

func (a *panickingScoped) DecidedIn(Scope) { panic("scheduler bug in DecidedIn") }

// A ScopedAdmission whose DecidedIn panics is recovered as one whose
// Decided panics (see TestPanickingAdmissionLeaksNoSlot): the call is
// sent, holds no slot after it, and the panic is logged once, naming the
// method that panicked, DecidedIn, and not Decided, which the governor
// did not call.
func TestAPanickingDecidedInIsRecoveredAndNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithLogger(buf.logger()))
		var a panickingScoped
		sent := 0
		err, escaped := doRecovering(WithAdmission(context.Background(), &a, time.Minute), iamUsers,
			func(context.Context) error { sent++; return nil }, WithGovernor(g))
		if escaped != nil || err != nil || sent != 1 || a.decided != 0 {
			t.Fatalf("DecidedIn panicking: err %v, %d sent, Decided called %d times, panic escaped: %v", err, sent, a.decided, escaped)
		}
		if s := g.Inspect(iamUsers); s.InFlight != 0 {
			t.Fatalf("DecidedIn panicking: %d slots still held after it", s.InFlight)
		}
		if log := buf.String(); strings.Count(log, "Admission panicked") != 1 || !strings.Contains(log, "method=DecidedIn") {
			t.Fatalf("the panic logged as %q; want once, with method=DecidedIn", log)
		}
	})
}

// ErrDeferred tells a task that its first call was deferred for its
// scheduler, to be run again, from the two refusals that are lost calls
// with the same *WouldWaitError and check: a WithMaxWait's, and an
// admission's once its task has returned (EndAdmission). A task counting
// its failed calls reads it to leave the deferral out.
func TestErrDeferredTellsADeferralFromALostRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		gd, _ := g.Begin(context.Background(), ec2Vpcs) // the account's only slot
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer gd.End(nil)
		ok := func(context.Context) error { return nil }
		for _, c := range []struct {
			name     string
			ctx      func(context.Context, *admissionRec) context.Context
			end      bool // EndAdmission once the call waits
			deferred bool
		}{
			{"the first call under an admission of 1 s", func(ctx context.Context, a *admissionRec) context.Context {
				return WithAdmission(ctx, a, time.Second)
			}, false, true},
			{"a call under WithMaxWait(1 s)", func(ctx context.Context, _ *admissionRec) context.Context {
				return WithMaxWait(ctx, time.Second)
			}, false, false},
			{"the first call under an admission of 1 s, its task returned", func(ctx context.Context, a *admissionRec) context.Context {
				return WithAdmission(ctx, a, time.Second)
			}, true, false},
		} {
			var a admissionRec
			ctx, ledger := WithLedger(context.Background(), "task")
			ctx = c.ctx(ctx, &a)
			done := make(chan error, 1)
			go func() { done <- Do(ctx, iamUsers, ok, WithGovernor(g)) }()
			synctest.Wait() // it waits for the slot
			if c.end {
				EndAdmission(ctx)
			}
			err := <-done
			var ww *WouldWaitError
			if !errors.As(err, &ww) || !errors.Is(err, ErrNoSlot) {
				t.Fatalf("%s, no slot free: %T %v; want a *WouldWaitError for want of a slot", c.name, err, err)
			}
			lost := ledger.Lost() != 0
			if errors.Is(err, ErrDeferred) != c.deferred || ww.Deferred != c.deferred || lost == c.deferred {
				t.Errorf("%s, refused: errors.Is(err, ErrDeferred) %v, Deferred %v, lost %v; want deferred %v, lost %v",
					c.name, errors.Is(err, ErrDeferred), ww.Deferred, lost, c.deferred, !c.deferred)
			}
			if c.deferred && (len(a.deferred) != 1 || !errors.Is(a.deferred[0], ErrDeferred)) {
				t.Errorf("%s: the scheduler was told Deferred with %v; want the call's error, ErrDeferred", c.name, a.deferred)
			}
		}
	})
}
