//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// sdkLoop drives a Guard the way an SDK middleware does: one guard per
// call holding its slot across the SDK's retries, the SDK deciding which
// errors to retry and how often, the governor vetoing through Retry and
// pacing a throttled retry through Pace.
func sdkLoop(ctx context.Context, g *Governor, sc Scope, maxAttempts int, send func() error) (attempts int, err error) {
	gd, err := g.Begin(ctx, sc, WithPolicy(RetryPolicy{MaxAttempts: 1 << 30}))
	if err != nil {
		return 0, err
	}
	if err := gd.Enter(ctx); err != nil {
		gd.End(err)
		return 0, err
	}
	for {
		attempts++
		err = send()
		kind := gd.After(err)
		if err == nil || kind == Fatal || attempts >= maxAttempts {
			gd.End(err)
			return attempts, err
		}
		if _, rerr := gd.Retry(0); rerr != nil {
			gd.End(rerr)
			return attempts, rerr
		}
		if perr := gd.Pace(ctx); perr != nil {
			gd.End(perr)
			return attempts, perr
		}
	}
}

func TestGuardBudgetEndsTheSDKLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(1)}})
		ctx, ledger := WithLedger(context.Background(), "sweep")
		attempts, err := sdkLoop(ctx, g, ec2Vpcs, 11, func() error { return throttle() })
		var rbe *RetryBudgetExhaustedError
		if !errors.As(err, &rbe) || rbe.ErrorCode() != "Throttling" || Classify(err) != Throttled {
			t.Fatalf("err %v, want RetryBudgetExhaustedError", err)
		}
		if !errors.Is(err, state.ErrBudgetExhausted) {
			t.Fatal("errors.Is(err, state.ErrBudgetExhausted) does not hold")
		}
		var ae *apiErr
		if !errors.As(err, &ae) {
			t.Fatal("budget error does not wrap the provider error")
		}
		if attempts != 4 {
			t.Fatalf("%d attempts, want 4 (1 + 2 free + 1 budgeted)", attempts)
		}
		if gu, _ := ledger.Counts(); gu != 1 {
			t.Fatalf("ledger gave up %d, want 1 (recorded once)", gu)
		}
		if len(g.Summary(nil).Breakers) != 0 {
			t.Fatal("budget stop counted as a breaker failure")
		}
		// A fresh call gets its two free retries again.
		attempts, _ = sdkLoop(ctx, g, ec2Vpcs, 11, func() error { return throttle() })
		if attempts != 3 {
			t.Fatalf("%d attempts for a fresh call with an empty budget, want 3", attempts)
		}
	})
}

func TestGuardFinalErrorsAndBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		for range 5 {
			sdkLoop(ctx, g, ec2Subnets, 1, func() error { return throttle() })
		}
		sent := 0
		_, err := sdkLoop(ctx, g, ec2Subnets, 1, func() error { sent++; return nil })
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || sent != 0 || !errors.Is(err, state.ErrCircuitOpen) {
			t.Fatalf("err %v, %d sent; want rejected, nothing sent", err, sent)
		}
		s := g.Summary(stats).Scopes[sk("aws/123456789012/us-east-1/ec2")]
		if s.Calls != 5 || s.GaveUp != 5 || s.Rejected != 1 || s.BreakerTrips != 1 || s.Throttled != 5 {
			t.Fatalf("stats %+v (a rejected call must not be recorded twice)", s)
		}
	})
}

func TestGuardFatalAnswerAndLocalErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for range 4 {
			sdkLoop(context.Background(), g, iamUsers, 1, func() error { return transientErr() })
		}
		gd, _ := g.Begin(context.Background(), iamUsers)
		gd.End(errors.New("local"))
		gd.End(&DeadlineExceededError{Scope: iamUsers})
		if f := g.Summary(nil).Breakers[sk("aws/123456789012/*/iam")].Failures; f != 4 {
			t.Fatalf("failures %d, want 4", f)
		}
		sdkLoop(context.Background(), g, iamUsers, 1, func() error { return accessDenied() })
		if len(g.Summary(nil).Breakers) != 0 {
			t.Fatal("FATAL answer did not reset the breaker")
		}
		// The caller's own cancelled context is not a failure.
		ctx, cancel := context.WithCancel(context.Background())
		gd, _ = g.Begin(ctx, iamUsers)
		cancel()
		gd.End(transientErr())
		if len(g.Summary(nil).Breakers) != 0 {
			t.Fatal("a cancelled call counted toward the breaker")
		}
	})
}

func TestGuardSlotReleasedExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
		inUse := func() (int, int) {
			s := g.Inspect(iamUsers)
			return s.InFlight, s.Waiting
		}
		gd, _ := g.Begin(context.Background(), iamUsers)
		gd.Enter(context.Background())
		gd.After(nil)
		gd.Enter(context.Background()) // the next request: the slot is still held
		if used, _ := inUse(); used != 1 {
			t.Fatalf("%d used, want 1", used)
		}
		// Another call holds the second slot: a second release of the
		// first would free a slot it holds (or panic in the bulkhead).
		other, _ := g.Begin(context.Background(), iamUsers)
		other.Enter(context.Background())
		gd.Release()
		gd.Release()
		gd.End(nil)
		gd.End(nil)
		if used, _ := inUse(); used != 1 {
			t.Fatalf("%d used after the guard's releases, want 1 (the other call's)", used)
		}
		other.End(nil)
		if used, _ := inUse(); used != 0 {
			t.Fatalf("%d used after release", used)
		}
		// End releases a slot still held (a cancelled call).
		gd, _ = g.Begin(context.Background(), iamUsers)
		gd.Enter(context.Background())
		gd.End(context.Canceled)
		if used, _ := inUse(); used != 0 {
			t.Fatalf("%d used after End", used)
		}
		// A call cancelled while queued holds nothing.
		a, _ := g.Begin(context.Background(), iamUsers)
		b, _ := g.Begin(context.Background(), iamUsers)
		a.Enter(context.Background())
		b.Enter(context.Background())
		c, _ := g.Begin(context.Background(), iamUsers)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Enter(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("queued enter: %v", err)
		}
		c.End(nil)
		a.End(nil)
		b.End(nil)
		if used, waiting := inUse(); used != 0 || waiting != 0 {
			t.Fatalf("%d used %d waiting", used, waiting)
		}
	})
}

func TestGuardThrottlePausesAndPauseAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		net1 := Scope{Provider: "azure", Account: "sub-1", Service: "network"}
		cmp1 := Scope{Provider: "azure", Account: "sub-1", Service: "compute"}
		cmp2 := Scope{Provider: "azure", Account: "sub-2", Service: "compute"}
		gd, _ := g.Begin(context.Background(), net1)
		gd.After(&apiErr{status: 429, header: http.Header{"Retry-After": {"4"}}})
		gd.End(nil)
		s := g.Summary(nil).SlowedBuckets[sk("azure/sub-1/*/network")]
		if s.Rate != 15 || s.Ceiling != 30 || s.Paused != 4*time.Second {
			t.Fatalf("network bucket %+v, want 15 of 30 rps paused 4s", s)
		}
		gd, _ = g.Begin(context.Background(), cmp1)
		gd.PauseAccount(time.Second)
		gd.End(nil)
		if a := g.Inspect(cmp1).Account; a.Rate != 20 || a.Ceiling != 20 || a.Paused != time.Second {
			t.Fatalf("account bucket %+v", a)
		}
		if (g.Inspect(iamUsers).Account != state.BucketSnapshot{}) {
			t.Fatal("AWS has no account bucket by default")
		}
		wait := func(sc Scope) time.Duration {
			start := time.Now()
			gd, _ := g.Begin(context.Background(), sc)
			gd.Enter(context.Background())
			gd.End(nil)
			return time.Since(start)
		}
		if w := wait(cmp1); w != time.Second+time.Second/20 {
			t.Fatalf("sub-1 compute waited %v, want the 1s subscription pause and a token at 20 rps", w)
		}
		if w := wait(cmp2); w != 0 {
			t.Fatalf("sub-2 waited %v for sub-1's pause", w)
		}
		gd, _ = g.Begin(context.Background(), cmp2)
		gd.Pause(2 * time.Second)
		gd.End(nil)
		if w := wait(cmp2); w != 2*time.Second+time.Second/15 {
			t.Fatalf("leaf pause %v, want 2s and a token at 15 rps", w)
		}
	})
}

func TestGuardTryEnterAndDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}})
		gd, _ := g.Begin(context.Background(), iamUsers)
		if err := gd.TryEnter(); err != nil {
			t.Fatalf("TryEnter refused the burst token: %v", err)
		}
		gd.After(nil)
		var ww *WouldWaitError
		if err := gd.TryEnter(); !errors.As(err, &ww) || ww.Wait != time.Second || !errors.Is(err, ErrNoToken) ||
			errors.Is(err, context.DeadlineExceeded) || Classify(err) != Throttled {
			t.Fatalf("TryEnter gave a token that needs a wait: %v", err)
		}
		var de *DeadlineExceededError
		gd.End(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		gd, _ = g.Begin(ctx, iamUsers)
		err := gd.Enter(ctx)
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Enter past the deadline: %v", err)
		}
		gd.End(err)
		start := time.Now()
		gd, _ = g.Begin(context.Background(), iamUsers)
		if err := gd.Enter(context.Background()); err != nil || time.Since(start) != time.Second {
			t.Fatalf("Enter: %v after %v", err, time.Since(start))
		}
		gd.End(nil)
	})
}

func TestGuardDisabledProviderIsNoOp(t *testing.T) {
	g := newGov(t, Config{Azure: ProviderConfig{Enabled: new(false)}})
	gd, err := g.Begin(context.Background(), Scope{Provider: "azure", Account: "s", Service: "network"})
	if err != nil {
		t.Fatal(err)
	}
	if gd.Enter(context.Background()) != nil || gd.TryEnter() != nil {
		t.Fatal("disabled guard refused an attempt")
	}
	gd.After(throttleAfter(3 * time.Second))
	if d, err := gd.Retry(time.Second); err != nil || d != 3*time.Second {
		t.Fatalf("disabled guard's Retry: %v, %v; want the hint's 3s", d, err)
	}
	if gd.Pace(context.Background()) != nil {
		t.Fatal("Pace")
	}
	gd.After(transientErr())
	gd.Pause(time.Second)
	gd.PauseAccount(time.Second)
	gd.Release()
	gd.End(throttle())
	if g.Summary(nil).Totals.Calls != 0 || len(g.Summary(nil).SlowedBuckets) != 0 {
		t.Fatal("disabled guard recorded")
	}
}

func TestGuardAfterReadsHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gd, _ := g.Begin(context.Background(), iamUsers)
		gd.After(&apiErr{code: "Throttling", header: http.Header{"Retry-After": {"6"}}})
		gd.End(nil)
		if p := g.Summary(nil).SlowedBuckets[sk("aws/123456789012/*/iam")].Paused; p != 6*time.Second {
			t.Fatalf("paused %v, want 6s", p)
		}
	})
}

// A listing's pages are requests of one operation: each success gives the
// next page its own free retries, and the budget pays only past them.
func TestGuardEachPageHasItsFreeRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{GCP: ProviderConfig{RetryBudget: new(1)}})
		sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		gd, _ := g.Begin(context.Background(), sc)
		defer gd.End(nil)
		err := &apiErr{code: "ResourceExhausted"}
		retry := func() error {
			gd.After(err)
			_, rerr := gd.Retry(0)
			return rerr
		}
		for page := range 3 {
			if e := gd.Enter(context.Background()); e != nil {
				t.Fatalf("page %d: %v", page, e)
			}
			for i := range 2 {
				if retry() != nil {
					t.Fatalf("page %d: free retry %d refused", page, i+1)
				}
			}
			gd.After(nil)
		}
		if b := g.Inspect(sc).RetryBudget; b != 1 {
			t.Fatalf("budget %v: free retries spent it", b)
		}
		gd.Enter(context.Background())
		retry()
		retry()
		if retry() != nil {
			t.Fatal("the budgeted third retry was refused")
		}
		var rbe *RetryBudgetExhaustedError
		if e := retry(); !errors.As(e, &rbe) {
			t.Fatalf("fourth retry: %v", e)
		}
	})
}

func TestPolicyAndInspect(t *testing.T) {
	g := newGov(t, Config{Azure: ProviderConfig{MaxRetries: new(3), DeadlineSeconds: 120}})
	if p := g.Policy("azure"); p != (RetryPolicy{MaxAttempts: 4, BaseDelay: 500 * time.Millisecond, MaxBackoff: 60 * time.Second, Deadline: 120 * time.Second}) {
		t.Fatalf("%+v", p)
	}
	if p := g.Policy("gcp"); p.MaxAttempts != 9 || p.Deadline != 900*time.Second {
		t.Fatalf("%+v", p)
	}
	s := g.Inspect(Scope{Provider: "azure", Account: "s", Service: "storage"})
	if s.Leaf.Rate != 0.33 || s.Leaf.Ceiling != 0.33 || s.MaxInFlight != 16 || s.RetryBudget != 500 || s.Breaker.State != state.Closed {
		t.Fatalf("%+v", s)
	}
	if (g.Inspect(Scope{}) != state.ScopeSnapshot{}) {
		t.Fatal("empty scope")
	}
	gd, _ := g.Begin(context.Background(), iamUsers)
	gd.Enter(context.Background())
	if s := g.Inspect(iamUsers); s.InFlight != 1 || s.Waiting != 0 {
		t.Fatalf("%d in flight, %d waiting", s.InFlight, s.Waiting)
	}
	gd.End(nil)
	if s := g.Inspect(iamUsers); s.InFlight != 0 {
		t.Fatal("slot not released")
	}
}

func TestGuardAfterReturnsTheKindItRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gd, err := g.Begin(context.Background(), ec2Vpcs)
		if err != nil {
			t.Fatal(err)
		}
		defer gd.End(nil)
		for _, c := range []struct {
			err  error
			want Kind
		}{{throttle(), Throttled}, {transientErr(), Transient}, {accessDenied(), Fatal}, {nil, Fatal}} {
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := gd.After(c.err); got != c.want {
				t.Errorf("After(%v) = %v, want %v", c.err, got, c.want)
			}
			gd.End(c.err)
		}
		if st := g.Summary(nil).Totals; st.Throttled != 1 || st.TransientErrors != 1 {
			t.Errorf("totals %+v, want one throttle and one transient error recorded", st)
		}
	})
}

// A disabled provider's Guard still applies the policy's attempts: a
// retry past them ends the call with its answer, recording nothing. (It
// used to dereference the missing scope entry to count a breaker failure,
// and panic.)
func TestGuardDisabledProviderOutOfAttempts(t *testing.T) {
	g := newGov(t, Config{Azure: ProviderConfig{Enabled: new(false)}})
	gd, _ := g.Begin(context.Background(), Scope{Provider: "azure", Account: "s", Service: "network"}, WithPolicy(RetryPolicy{MaxAttempts: 1}))
	if err := gd.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	answer := throttle()
	gd.After(answer)
	if _, err := gd.Retry(0); err != answer {
		t.Fatalf("Retry past the attempts: %v, want the answer", err)
	}
	gd.End(answer)
	if s := g.Summary(nil); s.Totals.Calls != 0 || s.Totals.GaveUp != 0 {
		t.Fatalf("a disabled provider recorded %+v", s.Totals)
	}
}

// A call whose token wait outlives a Reset gives its token back to the
// bucket it reserved it from, and waits for the live bucket's: the live
// bucket gains nothing from the retired one. (It once gained a token, and
// let two requests through a bucket of 1 rps, burst 1, at once; since the
// waiting call moves to the live bucket, it takes the live bucket's one
// token, and goes at once.)
func TestAWaitMovedByAResetTakesTheLiveBucketsTokenOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}})
		n := 0
		if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		waiting := make(chan error)
		go func() { waiting <- Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)) }()
		synctest.Wait() // it waits a second for the next token
		start := time.Now()
		g.Reset()
		if err := <-waiting; err != nil || time.Since(start) != 0 {
			t.Fatalf("the waiting call: %v after %v; want a success at the Reset, on the live bucket's token", err, time.Since(start))
		}
		gd, _ := g.Begin(context.Background(), iamUsers)
		if err := gd.TryEnter(); err == nil {
			t.Fatal("a second request went at once through the new bucket of 1 rps, burst 1")
		}
		gd.End(nil)
	})
}
