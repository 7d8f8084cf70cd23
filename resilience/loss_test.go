//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// Every call lost is recorded once, with its kind, in the lifetime
// counters, the run's Stats and the task's Ledger. Each test here states
// one way to lose a call.

// pauseScope makes the provider pause scope for d, as a Retry-After on a
// throttled answer does.
func pauseScope(t *testing.T, g *Governor, scope Scope, d time.Duration) {
	t.Helper()
	n := 0
	Do(context.Background(), scope, always(&n, throttleAfter(d)), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
	if p := g.Inspect(scope).Leaf.Paused; p < d-time.Second {
		t.Fatalf("scope paused for %v, want %v", p, d)
	}
}

// run is a run's Stats and a task's Ledger, as a scanner binds them.
type run struct {
	ctx    context.Context
	stats  *Stats
	ledger *Ledger
}

func newRun(parent context.Context) run {
	ctx, stats := WithStats(parent)
	ctx, ledger := WithLedger(ctx, "task")
	return run{ctx, stats, ledger}
}

// lost checks that r lost want calls of kind, and no other, in its stats
// and its ledger, and in g's lifetime counters at least as many.
func (r run) lost(t *testing.T, g *Governor, kind Loss, want int) {
	t.Helper()
	tot := g.Summary(r.stats).Totals
	counts := map[Loss]int64{LossGaveUp: tot.GaveUp, LossSkipped: tot.Rejected, LossFailed: tot.Failed, LossRefused: tot.Refused, LossCancelled: tot.Cancelled,
		LossErrored: tot.Errored, LossPanicked: tot.Panicked, LossDenied: tot.Denied}
	if k := Loss(len(counts)); k < numLosses {
		t.Fatalf("loss %v is not looked at", k)
	}
	for k, n := range counts {
		w := int64(0)
		if k == kind {
			w = int64(want)
		}
		if n != w || r.ledger.Count(k) != int(w) {
			t.Errorf("%v: stats %d, ledger %d; want %d (totals %v, ledger %q)", k, n, r.ledger.Count(k), w, tot, r.ledger.Describe())
		}
	}
	if r.ledger.Degraded() != (want > 0) || tot.Lost() != int64(want) {
		t.Errorf("degraded %v, lost %d; want %d", r.ledger.Degraded(), tot.Lost(), want)
	}
	if life := g.Summary(nil).Totals; life.Lost() < int64(want) {
		t.Errorf("the lifetime counters lost %d, want at least %d", life.Lost(), want)
	}
}

// A call whose wait for a paused scope would overrun its deadline is
// refused before sending, and recorded: in a second run in the same
// process too (it used to be in no counter and no ledger).
func TestLostRefusedByItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		for range 2 { // two runs, the second inside the first one's pause
			r := newRun(context.Background())
			ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
			sent := 0
			err := Do(ctx, ec2Vpcs, always(&sent, nil), WithGovernor(g))
			cancel()
			var de *DeadlineExceededError
			if !errors.As(err, &de) || sent != 0 {
				t.Fatalf("%v, %d sent; want a refusal, nothing sent", err, sent)
			}
			r.lost(t, g, LossRefused, 1)
			if d := r.ledger.Describe(); !strings.HasPrefix(d, "throttled: 1 call(s) refused (would wait past their deadline or max wait) (deadline exceeded for aws/123456789012/us-east-1/ec2/DescribeVpcs: a wait of ") {
				t.Errorf("ledger %q", d)
			}
			time.Sleep(5 * time.Second)
		}
	})
}

// A call refused for its max wait (WithMaxWait), which has no deadline,
// is described as refused for its max wait too: the ledger's line said
// "would wait past their deadline" of calls that had none.
func TestLostRefusedByItsMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		r := newRun(context.Background())
		sent := 0
		err := Do(WithMaxWait(r.ctx, time.Second), ec2Vpcs, always(&sent, nil), WithGovernor(g))
		var ww *WouldWaitError
		if !errors.As(err, &ww) || sent != 0 {
			t.Fatalf("%v, %d sent; want a refusal, nothing sent", err, sent)
		}
		r.lost(t, g, LossRefused, 1)
		if d := r.ledger.Describe(); !strings.HasPrefix(d, "throttled: 1 call(s) refused (would wait past their deadline or max wait) (") {
			t.Errorf("ledger %q, want the refusal described as past a deadline or a max wait", d)
		}
	})
}

// A call its context ends while it waits for a token is cancelled.
func TestLostCancelledWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		r := newRun(context.Background())
		ctx, cancel := context.WithCancel(r.ctx)
		time.AfterFunc(time.Second, cancel)
		sent := 0
		err := Do(ctx, ec2Vpcs, always(&sent, nil), WithGovernor(g))
		if !errors.Is(err, context.Canceled) || sent != 0 {
			t.Fatalf("%v, %d sent", err, sent)
		}
		r.lost(t, g, LossCancelled, 1)
	})
}

// A call its context ends between its retries is cancelled (Do's backoff).
func TestLostCancelledBetweenRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		r := newRun(context.Background())
		ctx, cancel := context.WithCancel(r.ctx)
		sent := 0
		err := Do(ctx, iamUsers, func(context.Context) error {
			sent++
			time.AfterFunc(10*time.Millisecond, cancel) // during the backoff
			return transientErr()
		}, WithGovernor(g))
		if !errors.Is(err, context.Canceled) || sent != 1 {
			t.Fatalf("%v, %d sent", err, sent)
		}
		r.lost(t, g, LossCancelled, 1)
		// The ledger's reason says the last answer once (it used to say it
		// twice: "context canceled (last error: InternalError) after
		// InternalError").
		want := "degraded: 1 call(s) cancelled (context ended) (aws/123456789012/*/iam/ListUsers: context canceled after " + describe(Transient, transientErr()) + ")"
		if d := r.ledger.Describe(); d != want {
			t.Errorf("ledger %q\nwant   %q", d, want)
		}
	})
}

// A call of an SDK whose context ends after a throttle is cancelled: once
// when the SDK ends it (the Guard's End), and once when the answer comes
// after its context ended (After).
func TestLostCancelledAfterAThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for _, afterTheEnd := range []bool{false, true} {
			r := newRun(context.Background())
			ctx, cancel := context.WithCancel(r.ctx)
			gd, _ := g.Begin(ctx, ec2Subnets)
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			if afterTheEnd {
				cancel()
				gd.After(throttle())
			} else {
				gd.After(throttle())
				gd.Retry(0)
				cancel() // the SDK's backoff ends with the context
			}
			gd.End(ctx.Err())
			r.lost(t, g, LossCancelled, 1)
		}
	})
}

// A call that still fails with transient errors after its retries is
// lost as failed (it used to be in no ledger).
func TestLostFailedAfterRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		r := newRun(context.Background())
		sent := 0
		if err := Do(r.ctx, iamUsers, always(&sent, transientErr()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 3})); err == nil || sent != 3 {
			t.Fatalf("%v after %d", err, sent)
		}
		r.lost(t, g, LossFailed, 1)
		if d := r.ledger.Describe(); d != "degraded: 1 call(s) failed after retries (transient errors) (aws/123456789012/*/iam/ListUsers: InternalError)" {
			t.Errorf("ledger %q", d)
		}
	})
}

// A call that may not wait (WithMaxWait) is refused at once when its scope
// is paused: nothing sent, a throttling error that says when the scope can
// go, recorded as a refusal and not as a give-up.
func TestMaxWaitRefusesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		r := newRun(context.Background())
		start := time.Now()
		sent := 0
		err := Do(WithMaxWait(r.ctx, time.Second), ec2Vpcs, always(&sent, nil), WithGovernor(g))
		var ww *WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, ErrNoToken) || sent != 0 || time.Since(start) != 0 {
			t.Fatalf("%v after %v, %d sent", err, time.Since(start), sent)
		}
		if ra, ok := RetryAfter(err); !ok || ra < 59*time.Second || Classify(err) != Throttled {
			t.Fatalf("RetryAfter %v %v, %v", ra, ok, Classify(err))
		}
		r.lost(t, g, LossRefused, 1)

		// A wait within the bound is made.
		time.Sleep(59 * time.Second)
		if err := Do(WithMaxWait(context.Background(), 2*time.Second), ec2Vpcs, always(&sent, nil), WithGovernor(g)); err != nil || sent != 1 {
			t.Fatalf("within the bound: %v, %d sent", err, sent)
		}
	})
}

// The bound holds for a retry too: a throttled answer with a long
// Retry-After ends the call with a refusal wrapping the answer.
func TestMaxWaitRefusesARetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		r := newRun(context.Background())
		answer := throttleAfter(30 * time.Second)
		sent := 0
		err := Do(WithMaxWait(r.ctx, time.Second), ec2Vpcs, always(&sent, answer), WithGovernor(g))
		var ww *WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, answer) || sent != 1 || ww.Wait < 29*time.Second {
			t.Fatalf("%v (%+v), %d sent", err, ww, sent)
		}
		r.lost(t, g, LossRefused, 1)
		if f := g.Inspect(ec2Vpcs).Breaker.Failures; f != 0 {
			t.Fatalf("the refusal counted %d breaker failures; the caller, not the service, stopped it", f)
		}
	})
}

// A call that may not wait for a slot is refused once the bound passes.
func TestMaxWaitRefusesWithoutASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		hold := make(chan struct{})
		go Do(context.Background(), ec2Vpcs, func(context.Context) error { <-hold; return nil }, WithGovernor(g))
		synctest.Wait()
		r := newRun(context.Background())
		start := time.Now()
		err := Do(WithMaxWait(r.ctx, 3*time.Second), ec2Subnets, func(context.Context) error { return nil }, WithGovernor(g))
		if !errors.Is(err, ErrNoSlot) || time.Since(start) != 3*time.Second {
			t.Fatalf("%v after %v", err, time.Since(start))
		}
		r.lost(t, g, LossRefused, 1)
		if tk := g.Inspect(ec2Subnets).Leaf.Tokens; tk != 100 {
			t.Fatalf("the refused call kept its token: %v left", tk)
		}
		close(hold)
	})
}

// TryEnter records nothing; a caller that gives up on the call after it
// refused ends it with the refusal, which is then recorded once.
func TestTryEnterRefusalRecordedAtEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		r := newRun(context.Background())
		gd, _ := g.Begin(r.ctx, ec2Vpcs)
		var err error
		for range 3 {
			err = gd.TryEnter()
		}
		r.lost(t, g, LossRefused, 0)
		gd.End(err)
		r.lost(t, g, LossRefused, 1)
	})
}

// Each lost call is one observe event whose kind matches the counters.
func TestLostCallsAreEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		seen := map[string]int{}
		g := newGov(t, Config{}, WithObserver(observe.Func(func(e observe.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case observe.GaveUp:
				seen["gave_up"]++
			case observe.Rejected:
				seen["skipped"]++
			case observe.Lost:
				seen[e.Loss]++
			}
		})))
		sent := 0
		Do(context.Background(), iamUsers, always(&sent, transientErr()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 2}))
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		Do(WithMaxWait(context.Background(), 0), ec2Vpcs, always(&sent, nil), WithGovernor(g))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		Do(ctx, ec2Subnets, always(&sent, nil), WithGovernor(g))
		Do(context.Background(), iamUsers, always(&sent, errors.New("signing failed")), WithGovernor(g))
		func() {
			defer func() { recover() }()
			Do(context.Background(), iamUsers, func(context.Context) error { panic("bug") }, WithGovernor(g))
		}()
		tot := g.Summary(nil).Totals
		mu.Lock()
		defer mu.Unlock()
		if seen["failed"] != int(tot.Failed) || seen["refused"] != int(tot.Refused) || seen["cancelled"] != int(tot.Cancelled) ||
			seen["gave_up"] != int(tot.GaveUp) || tot.Failed != 1 || tot.Refused != 1 || tot.Cancelled != 1 || tot.GaveUp != 1 {
			t.Fatalf("events %v, totals %v", seen, tot)
		}
		if seen["errored"] != int(tot.Errored) || seen["panicked"] != int(tot.Panicked) || tot.Errored != 1 || tot.Panicked != 1 {
			t.Fatalf("events %v, totals %v", seen, tot)
		}
	})
}

// Ledger.Record counts a loss outside a governed call, in Describe's
// counts and lines.
func TestLedgerRecord(t *testing.T) {
	var l Ledger
	l.Record(LossFailed, "listing of buckets failed: AccessDenied on ListBuckets")
	l.Record(LossCancelled, "")
	if l.Lost() != 2 || l.Count(LossFailed) != 1 || !l.Degraded() {
		t.Fatalf("lost %d", l.Lost())
	}
	want := "degraded: 1 call(s) failed after retries (transient errors), 1 call(s) cancelled (context ended) (listing of buckets failed: AccessDenied on ListBuckets)"
	if got := l.Describe(); got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
}

// A ledger whose losses were all recorded without a reason describes them
// without an empty pair of parentheses.
func TestLedgerDescribeWithoutReasons(t *testing.T) {
	var l Ledger
	l.Record(LossGaveUp, "")
	want := "throttled: 1 call(s) gave up after retries"
	if got := l.Describe(); got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
}

// A dead scope (every answer throttling, for more than breaker_dead_seconds,
// from at least breaker_threshold calls) opens its breaker at once: its
// calls end within seconds, not after each spent its retries, and the
// calls waiting for its tokens are woken to be refused. Every one of them
// is in the ledger.
func TestDeadScopeOpensItsBreakerInSeconds(t *testing.T) {
	for _, dead := range []*float64{nil, new(0.0)} {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{AWS: ProviderConfig{BreakerDeadSeconds: dead}})
			r := newRun(context.Background())
			var sent atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			ended := make([]time.Duration, 16)
			for i := range ended {
				wg.Go(func() {
					Do(r.ctx, ec2Vpcs, func(context.Context) error { sent.Add(1); return throttle() }, WithGovernor(g))
					ended[i] = time.Since(start)
				})
			}
			wg.Wait()
			last := time.Duration(0)
			for _, d := range ended {
				last = max(last, d)
			}
			tot := g.Summary(r.stats).Totals
			if dead != nil { // the spec's rule alone: each call spends its retries
				if last < 2*time.Minute || tot.Lost() != 16 {
					t.Fatalf("breaker_dead_seconds 0: the calls ended by %v, %d lost", last, tot.Lost())
				}
				return
			}
			if last > 12*time.Second || tot.BreakerTrips != 1 || tot.Lost() != 16 || r.ledger.Lost() != 16 {
				t.Fatalf("the dead scope's 16 calls ended by %v (%d sent), %d trips, %d lost, ledger %q", last, sent.Load(), tot.BreakerTrips, tot.Lost(), r.ledger.Describe())
			}
			// The next call is refused at once.
			if err := Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g)); !errors.Is(err, ErrCircuitOpen) {
				t.Fatalf("after the trip: %v", err)
			}
		})
	}
}

// One call's own retries never make a scope dead: the spec's rule counts
// that call when its retries end.
func TestOneCallsRetriesDoNotMakeAScopeDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		sent := 0
		err := Do(context.Background(), iamUsers, always(&sent, throttle()), WithGovernor(g))
		if sent != 9 || errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("%d attempts, %v", sent, err)
		}
		if f := g.Inspect(iamUsers).Breaker; f.Failures != 1 || f.State.String() != "closed" {
			t.Fatalf("breaker %+v", f)
		}
	})
}

// Delay says how long a call would wait and why, and makes nothing.
func TestDelayIsAPureRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		other := Scope{Provider: "github", Account: "org", Service: "rest"}
		for _, s := range []Scope{ec2Vpcs, other} {
			if d, err := g.Delay(s); d != 0 || err != nil {
				t.Fatalf("%v: %v %v for a scope never called", s, d, err)
			}
		}
		if n := g.liveScopes(); n != 0 {
			t.Fatalf("Delay made %d scopes", n)
		}
		if g.existing("github") != nil {
			t.Fatal("Delay made a provider")
		}
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		if d, err := g.Delay(ec2Vpcs); !errors.Is(err, ErrNoToken) || d < 59*time.Second {
			t.Fatalf("paused: %v %v", d, err)
		}
		openBreaker(t, g)
		if d, err := g.Delay(ec2Subnets); !errors.Is(err, ErrCircuitOpen) || d != 60*time.Second {
			t.Fatalf("open: %v %v", d, err)
		}
		hold := make(chan struct{})
		go Do(context.Background(), iamUsers, func(context.Context) error { <-hold; return nil }, WithGovernor(g))
		synctest.Wait()
		if d, err := g.Delay(Scope{Provider: "aws", Account: "123456789012", Service: "sts"}); !errors.Is(err, ErrNoSlot) || d != 0 {
			t.Fatalf("cap full: %v %v", d, err)
		}
		close(hold)
	})
}

// The bound holds for a retry an SDK makes on its own (Guard.Retry): a
// throttled answer whose Retry-After is longer than the call may wait
// ends the call at once, with a refusal wrapping the answer. Otherwise the
// SDK (gax, cloudghttp's Transport) sleeps the hint before its next
// attempt, whose Enter then finds the pause over: the call waits the whole
// hint and the bound does not hold.
func TestMaxWaitRefusesAnSDKRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for i, answer := range []error{throttleAfter(30 * time.Second), &apiErr{code: "InternalError", status: 500, msg: "busy", header: http.Header{"Retry-After": {"30"}}}} {
			r := newRun(context.Background())
			ctx := WithMaxWait(r.ctx, time.Second)
			gd, _ := g.Begin(ctx, []Scope{iamUsers, ec2Vpcs}[i])
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			gd.After(answer)
			delay, err := gd.Retry(0)
			var ww *WouldWaitError
			if !errors.As(err, &ww) || !errors.Is(err, answer) || !errors.Is(err, ErrNoToken) || ww.Wait < 29*time.Second || Classify(err) != Throttled {
				t.Fatalf("%v: Retry = %v, %v; want a refusal wrapping the answer", answer, delay, err)
			}
			gd.End(err)
			r.lost(t, g, LossRefused, 1)
		}
		// A hint within the bound is waited out.
		r := newRun(context.Background())
		ctx := WithMaxWait(r.ctx, time.Minute)
		gd, _ := g.Begin(ctx, ec2Subnets)
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.After(throttleAfter(30 * time.Second))
		if d, err := gd.Retry(0); err != nil || d != 30*time.Second {
			t.Fatalf("within the bound: %v, %v", d, err)
		}
		gd.End(nil)
	})
}

// A snapshot says what a person needs of a scope in trouble: the callers
// queued for its tokens, whether it is dead, and why its breaker opened.
func TestSnapshotTellsWhyAScopeIsInTrouble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		for range 3 {
			go Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g))
		}
		synctest.Wait()
		if s := g.Inspect(ec2Vpcs); s.Queued != 3 || s.Dead != "" || s.OpenReason != "" {
			t.Fatalf("paused with 3 callers: %+v", s)
		}
		time.Sleep(2 * time.Minute)
		openBreaker(t, g)
		if s := g.Inspect(ec2Subnets); s.OpenReason != "throttling" || s.Dead != "" {
			t.Fatalf("five calls gave up: %+v", s)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				Do(context.Background(), iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g))
			})
		}
		wg.Wait()
		if s := g.Inspect(iamUsers); s.OpenReason != "throttled for good" || s.Dead != "throttled for good" {
			t.Fatalf("a dead scope: %+v", s)
		}
		// Through its breaker's cooldown it is still dead: nothing answered.
		time.Sleep(30 * time.Second)
		if s := g.Inspect(iamUsers); s.Dead != "throttled for good" {
			t.Fatalf("30 s into the cooldown: %+v", s)
		}
	})
}

// A burst of throttling followed by quiet is no dead scope: five calls
// throttled once and then cancelled, and a call twenty seconds later goes
// through a closed breaker (the streak's last failure is long past).
func TestABurstThenQuietIsNotDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		var wg sync.WaitGroup
		for range 5 {
			ctx, cancel := context.WithCancel(context.Background())
			wg.Go(func() {
				Do(ctx, iamUsers, func(context.Context) error {
					time.AfterFunc(10*time.Millisecond, cancel) // during the backoff
					return throttle()
				}, WithGovernor(g))
			})
		}
		wg.Wait()
		time.Sleep(20 * time.Second)
		if err := Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatalf("the call after the quiet: %v", err)
		}
		if s := g.Inspect(iamUsers); s.Breaker.State.String() != "closed" || s.Dead != "" {
			t.Fatalf("%+v", s)
		}
	})
}

// A snapshot names the leaf a scope's state is kept under.
func TestSnapshotNamesItsLeaf(t *testing.T) {
	g := newGov(t, Config{})
	if s := g.Inspect(iamUsers); s.Scope != iamUsers.ServiceScope() {
		t.Fatalf("iam is one leaf: %v", s.Scope)
	}
	if s := g.Inspect(ec2Vpcs); s.Scope != ec2Vpcs {
		t.Fatalf("ec2 is paced per operation: %v", s.Scope)
	}
	Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
	if s := g.Inspect(iamUsers); s.Scope != iamUsers.ServiceScope() {
		t.Fatalf("a live iam scope: %v", s.Scope)
	}
}

// A call that ends with a local error, one no provider answered (the
// request could not be built, signed or sent, and was not retried), is
// lost: Call and Do's, and an SDK's, whether After saw the error or only
// End did, and one whose SDK retry of it the empty budget refused. A
// provider's fatal answer is not (the caller has the answer), nor a local
// error an SDK retried into a success.
func TestLostErroredByALocalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		signing := errors.New("signing failed")
		const reason = "aws/123456789012/*/iam/ListUsers: signing failed"
		check := func(how string, r run, want int) {
			t.Helper()
			r.lost(t, g, LossErrored, want)
			if want > 0 && !slices.Equal(r.ledger.Reasons(), []string{reason}) {
				t.Errorf("%s: the ledger's reasons %q, want %q", how, r.ledger.Reasons(), reason)
			}
		}

		r := newRun(context.Background())
		sent := 0
		if err := Do(r.ctx, iamUsers, always(&sent, signing), WithGovernor(g)); err != signing || sent != 1 {
			t.Fatalf("Do: %v after %d attempts, want the local error after 1", err, sent)
		}
		check("Do", r, 1)

		r = newRun(context.Background())
		gd, _ := g.Begin(r.ctx, iamUsers)
		gd.Enter(r.ctx)
		gd.After(signing)
		gd.End(signing)
		check("an SDK's call, After and End", r, 1)

		r = newRun(context.Background())
		gd, _ = g.Begin(r.ctx, iamUsers)
		gd.Enter(r.ctx)
		gd.End(signing)
		check("an SDK's call, End alone", r, 1)

		r = newRun(context.Background())
		gd, _ = g.Begin(r.ctx, iamUsers)
		gd.Enter(r.ctx)
		gd.After(signing)
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		gd.Enter(r.ctx)
		gd.After(nil)
		gd.End(nil)
		check("a local error the SDK retried into a success", r, 0)

		// The SDK retries it, and ends with its retry's answer, which After
		// never saw.
		r = newRun(context.Background())
		gd, _ = g.Begin(r.ctx, iamUsers)
		gd.Enter(r.ctx)
		gd.After(signing)
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		gd.End(signing)
		check("a local error the SDK retried, and whose retry ended with one", r, 1)

		r = newRun(context.Background())
		Do(r.ctx, iamUsers, always(&sent, accessDenied()), WithGovernor(g))
		check("a provider's fatal answer", r, 0)

		// The empty budget refuses the SDK's third retry of the local error.
		nob := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}})
		r = newRun(context.Background())
		gd, _ = nob.Begin(r.ctx, iamUsers)
		gd.Enter(r.ctx)
		var err error
		for range 3 {
			gd.After(signing)
			if _, err = gd.Retry(0); err != nil {
				break
			}
			gd.Enter(r.ctx)
		}
		if !errors.Is(err, ErrBudgetExhausted) {
			t.Fatalf("the third retry: %v, want the budget's refusal", err)
		}
		gd.End(err)
		r.lost(t, nob, LossErrored, 1)
		if d := r.ledger.Describe(); d != "degraded: 1 call(s) errored (local errors, no provider answer) (aws/123456789012/*/iam/ListUsers: retry budget exhausted after signing failed)" {
			t.Errorf("budget: ledger %q", d)
		}

		// The SDK's retry of the local error comes after the call's
		// deadline: Enter stops it, and the call is lost all the same,
		// listed as stopped by the deadline as the budget's stop is.
		r = newRun(context.Background())
		gd, _ = g.Begin(r.ctx, iamUsers, WithPolicy(RetryPolicy{Deadline: 5 * time.Second}))
		gd.Enter(r.ctx)
		gd.After(signing)
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		err = gd.Enter(r.ctx)
		if err == nil {
			t.Fatal("a retry past the deadline was let through")
		}
		gd.End(err)
		r.lost(t, g, LossErrored, 1)
		if d := r.ledger.Describe(); d != "degraded: 1 call(s) errored (local errors, no provider answer) (aws/123456789012/*/iam/ListUsers: deadline exceeded after signing failed)" {
			t.Errorf("deadline: ledger %q", d)
		}
	})
}

// A call whose function panics is lost, and gives its slot back; the
// panic goes on to the caller as it was.
func TestLostPanicked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		for i := range 2 {
			r := newRun(context.Background())
			var escaped any
			func() {
				defer func() { escaped = recover() }()
				if i == 0 {
					Do(r.ctx, iamUsers, func(context.Context) error { panic("bug") }, WithGovernor(g))
				} else {
					b, _ := g.Bind(iamUsers)
					b.Do(r.ctx, func(context.Context) error { panic("bug") })
				}
			}()
			if escaped != "bug" {
				t.Fatalf("the panic reached the caller as %v", escaped)
			}
			r.lost(t, g, LossPanicked, 1)
			if d := r.ledger.Describe(); d != "degraded: 1 call(s) panicked (aws/123456789012/*/iam/ListUsers: function panicked)" {
				t.Errorf("call %d: ledger %q", i+1, d)
			}
			if s := g.Inspect(iamUsers); s.InFlight != 0 {
				t.Fatalf("call %d: %d slots held after the panic", i+1, s.InFlight)
			}
		}
	})
}

// panicOnThrottle is a log handler of the caller's that panics on the
// governor's line for a throttled answer (which After writes) and drops
// every other line.
type panicOnThrottle struct{}

func (panicOnThrottle) Enabled(context.Context, slog.Level) bool { return true }

func (panicOnThrottle) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cloudg: throttled" {
		panic("handler")
	}
	return nil
}

func (h panicOnThrottle) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panicOnThrottle) WithGroup(string) slog.Handler      { return h }

// A call of Do (or of a Bound's Do) whose answer's record panics (the
// governor's log handler, on a throttled answer) is lost, and gives its
// slot back; the panic goes on to the caller as it was.
func TestLostPanickedRecordingTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithLogger(slog.New(panicOnThrottle{})))
		throttled := func(context.Context) error { return throttle() }
		for i := range 2 {
			r := newRun(context.Background())
			var escaped any
			func() {
				defer func() { escaped = recover() }()
				if i == 0 {
					Do(r.ctx, iamUsers, throttled, WithGovernor(g))
				} else {
					b, _ := g.Bind(iamUsers)
					b.Do(r.ctx, throttled)
				}
			}()
			if escaped != "handler" {
				t.Fatalf("call %d: the panic reached the caller as %v", i+1, escaped)
			}
			if s := g.Inspect(iamUsers); s.InFlight != 0 {
				t.Fatalf("call %d: %d slots held after the panic", i+1, s.InFlight)
			}
			r.lost(t, g, LossPanicked, 1)
		}
	})
}

// A scope found dead stays dead while nothing answers, an hour of quiet
// after its breaker's cooldown included: it is what the process last saw
// of it. The next call goes as its breaker's probe, and its success ends
// it.
func TestADeadScopeStaysDeadUntilASuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				Do(context.Background(), iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g))
			})
		}
		wg.Wait()
		if s := g.Inspect(iamUsers); s.Dead != "throttled for good" {
			t.Fatalf("a dead scope: %+v", s)
		}
		time.Sleep(time.Hour)
		if s := g.Inspect(iamUsers); s.Dead != "throttled for good" || s.Breaker.State != state.Open {
			t.Fatalf("an hour of quiet later: %+v", s)
		}
		if err := Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatalf("the probe: %v", err)
		}
		if s := g.Inspect(iamUsers); s.Dead != "" || s.Breaker.State != state.Closed {
			t.Fatalf("after a success: %+v", s)
		}
	})
}

// The calls a paused scope refuses for their deadline, one a second over
// a few seconds, are one reason in the ledger: each is told a wait a
// second shorter ("a wait of 59.1s would overrun it"), and five of them
// used to take every place, hiding the reason of the task's other loss.
func TestLedgerReasonsOfDeadlineRefusalsAreOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		r := newRun(context.Background())
		for range 6 {
			ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
			sent := 0
			var de *DeadlineExceededError
			if err := Do(ctx, ec2Vpcs, always(&sent, nil), WithGovernor(g)); !errors.As(err, &de) || sent != 0 {
				t.Fatalf("%v, %d sent; want a refusal for the deadline", err, sent)
			}
			cancel()
			time.Sleep(time.Second)
		}
		sent := 0
		Do(r.ctx, iamUsers, always(&sent, transientErr()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		want := []string{
			"deadline exceeded for aws/123456789012/us-east-1/ec2/DescribeVpcs: a wait of 60.1s would overrun it",
			"aws/123456789012/*/iam/ListUsers: " + describe(Transient, transientErr()),
		}
		if got := r.ledger.Reasons(); !slices.Equal(got, want) {
			t.Errorf("reasons %q\nwant    %q", got, want)
		}
	})
}

// A retry TryEnter refuses, which the caller then ends the call with, was
// never sent: it is no retry, and the call is lost as Enter would lose it,
// as WouldWaitError says: refused for a wait (no breaker failure: the
// caller, not the service, stopped it), failed after its retries for an
// open breaker. End used to count the refused retry as one the SDK sent
// without telling After, and the refusal for a wait as a give-up (or a
// failure) that the breaker counted.
func TestTryEnterRetryRefusalRecordedAtEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		sts := Scope{Provider: "aws", Account: "123456789012", Service: "sts", Operation: "GetCallerIdentity"}
		for scope, answer := range map[Scope]error{iamUsers: throttleAfter(30 * time.Second), sts: transientErr()} {
			r := newRun(context.Background())
			gd, _ := g.Begin(r.ctx, scope)
			if err := gd.TryEnter(); err != nil {
				t.Fatal(err)
			}
			gd.After(answer)
			gd.Release()
			if _, err := gd.Retry(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			err := gd.TryEnter()
			if !errors.Is(err, ErrNoToken) || !errors.Is(err, answer) {
				t.Fatalf("TryEnter before the retry's wait: %v, want no token", err)
			}
			gd.End(err)
			r.lost(t, g, LossRefused, 1)
			if tot := g.Summary(r.stats).Totals; tot.Calls != 1 || tot.Retries != 0 {
				t.Errorf("%v: %d calls, %d retries; want 1 call, no retry", answer, tot.Calls, tot.Retries)
			}
			if f := g.Inspect(scope).Breaker.Failures; f != 0 {
				t.Errorf("%v: the breaker counted %d failures, want none", answer, f)
			}
		}

		// An open breaker refuses the retry: the call failed after its
		// retries, as Enter records it.
		r := newRun(context.Background())
		gd := throttledRetry(t, g, r.ctx, ec2Subnets)
		err := retryOpenBreakerRefuses(t, g, gd)
		gd.End(err)
		r.lost(t, g, LossGaveUp, 1)
		if tot := g.Summary(r.stats).Totals; tot.Calls != 1 || tot.Retries != 0 {
			t.Errorf("open breaker: %d calls, %d retries; want 1 call, no retry", tot.Calls, tot.Retries)
		}
	})
}

// Inspect says a scope is dead when the next call would find it dead: its
// five calls throttled over six seconds, their outcomes still open, and
// four seconds of quiet after. The next call's admission opens its
// breaker as throttled for good and is refused, nothing sent; Inspect
// said Dead "" just before, since it asked that the failures themselves
// span the ten seconds, where the admission asks that the streak does by
// now.
func TestInspectSaysDeadWhatTheNextCallFindsDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		endStreak := throttledStreak(t, g, iamUsers)
		time.Sleep(4 * time.Second) // 10 s after the first throttle, 4 s after the last
		before := g.Inspect(iamUsers)
		sent := 0
		err := Do(context.Background(), iamUsers, always(&sent, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || coe.Reason != "throttled for good" || sent != 0 {
			t.Fatalf("the next call: %v, %d sent; want refused as throttled for good", err, sent)
		}
		if before.Dead != "throttled for good" {
			t.Errorf("Inspect before the call: Dead %q, want %q, as the call found it", before.Dead, "throttled for good")
		}
		endStreak()
	})
}

// A provider's fatal answer (AccessDenied) that comes once the call's
// context is done is no lost call, as After has it, whether the
// integration reports it to After or only to End: End used to record it
// as cancelled when no After saw it, and the task's ledger went PARTIAL
// for an answer the caller has.
func TestEndOfAFatalAnswerAfterTheContextLosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for _, viaAfter := range []bool{true, false} {
			r := newRun(context.Background())
			ctx, cancel := context.WithCancel(r.ctx)
			gd, _ := g.Begin(ctx, iamUsers)
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
			if viaAfter {
				gd.After(accessDenied())
			}
			gd.End(accessDenied())
			if d := r.ledger.Describe(); d != "" {
				t.Errorf("After told too: %v; ledger %q, want nothing lost", viaAfter, d)
			}
			r.lost(t, g, LossCancelled, 0)
		}
	})
}

// Delay says what the next call's admission finds: of a scope found dead
// without a new answer (its breaker still closed, five calls throttled
// over six seconds and not yet ended), that it cannot go, for the
// breaker's cooldown; it used to say the scope could go at once, and a
// scheduler gave a worker a task the call then refused.
func TestDelaySaysOfADeadScopeThatItCannotGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		endStreak := throttledStreak(t, g, iamUsers)
		if d, why := g.Delay(iamUsers); errors.Is(why, ErrCircuitOpen) {
			t.Fatalf("Delay 6 s after the first throttle: %v, %v; want no open breaker (not dead yet)", d, why)
		}
		time.Sleep(4 * time.Second) // 10 s after the first throttle, 4 s after the last
		d, why := g.Delay(iamUsers)
		if st := g.Inspect(iamUsers).Breaker.State; st != state.Closed {
			t.Fatalf("breaker %v after Delay, want closed: Delay is a read", st)
		}
		sent := 0
		err := Do(context.Background(), iamUsers, always(&sent, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || sent != 0 {
			t.Fatalf("the next call: %v, %d sent; want refused", err, sent)
		}
		if !errors.Is(why, ErrCircuitOpen) || d != coe.Wait {
			t.Errorf("Delay before the call: %v, %v; want %v, ErrCircuitOpen, as the call found it", d, why, coe.Wait)
		}
		endStreak()
	})
}
