package resilience

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// sdkLoop drives a Guard the way an SDK middleware does: one guard per
// call, attempts inside, the SDK deciding to retry, the governor able to
// veto through Retry.
func sdkLoop(ctx context.Context, g *Governor, sc Scope, maxAttempts int, send func() error) (attempts int, err error) {
	gd, err := g.Begin(ctx, sc)
	if err != nil {
		return 0, err
	}
	defer gd.End()
	if err := gd.Admit(); err != nil {
		gd.Failed(err)
		return 0, err
	}
	gd.Count()
	if err := gd.Wait(ctx); err != nil {
		return 0, err
	}
	if err := gd.Acquire(ctx); err != nil {
		return 0, err
	}
	defer gd.Release()
	for {
		attempts++
		err = send()
		if err == nil {
			gd.Succeeded()
			return attempts, nil
		}
		switch Classify(err) {
		case Throttled:
			gd.Throttled(err)
		case Transient:
			gd.Transient(err)
		default:
			gd.Failed(err)
			return attempts, err
		}
		if attempts >= maxAttempts {
			gd.Failed(err)
			return attempts, err
		}
		if verr := gd.Retry(err); verr != nil {
			gd.Failed(verr)
			return attempts, verr
		}
		if Classify(err) == Throttled {
			if werr := gd.Wait(ctx); werr != nil {
				return attempts, werr
			}
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
		if !errors.As(err, &coe) || sent != 0 {
			t.Fatalf("err %v, %d sent; want rejected, nothing sent", err, sent)
		}
		s := g.Summary(stats).Scopes["aws/123456789012/us-east-1/ec2"]
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
		gd.Failed(errors.New("local"))
		gd.Failed(&DeadlineExceededError{Scope: iamUsers})
		gd.End()
		if f := g.Summary(nil).Breakers["aws/123456789012/*/iam"].Failures; f != 4 {
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
		gd.Failed(transientErr())
		gd.End()
		if len(g.Summary(nil).Breakers) != 0 {
			t.Fatal("a cancelled call counted toward the breaker")
		}
	})
}

func TestGuardSlotReleasedExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
		bh := func() (int, int) {
			return g.provider("aws").lim.lookup(iamUsers, g.now()).acct.bulkhead.InUse()
		}
		gd, _ := g.Begin(context.Background(), iamUsers)
		gd.Acquire(context.Background())
		gd.Acquire(context.Background()) // holds at most one
		if used, _ := bh(); used != 1 {
			t.Fatalf("%d used, want 1", used)
		}
		// Another call holds the second slot: a second release of the
		// first would free a slot it holds (or panic in the bulkhead).
		other, _ := g.Begin(context.Background(), iamUsers)
		other.Acquire(context.Background())
		gd.Release()
		gd.Release()
		gd.End()
		gd.End()
		if used, _ := bh(); used != 1 {
			t.Fatalf("%d used after the guard's releases, want 1 (the other call's)", used)
		}
		other.End()
		if used, _ := bh(); used != 0 {
			t.Fatalf("%d used after release", used)
		}
		// End releases a slot still held (a cancelled call).
		gd, _ = g.Begin(context.Background(), iamUsers)
		gd.Acquire(context.Background())
		gd.End()
		if used, _ := bh(); used != 0 {
			t.Fatalf("%d used after End", used)
		}
		// A call cancelled while queued holds nothing.
		a, _ := g.Begin(context.Background(), iamUsers)
		b, _ := g.Begin(context.Background(), iamUsers)
		a.Acquire(context.Background())
		b.Acquire(context.Background())
		c, _ := g.Begin(context.Background(), iamUsers)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("queued acquire: %v", err)
		}
		c.End()
		a.End()
		b.End()
		if used, waiting := bh(); used != 0 || waiting != 0 {
			t.Fatalf("%d used %d waiting", used, waiting)
		}
		// An ended guard takes nothing.
		if c.Enabled() || !c.TryAcquire() {
			t.Fatal("ended guard still governs")
		}
		if used, _ := bh(); used != 0 {
			t.Fatalf("ended guard took a slot")
		}
	})
}

func TestGuardThrottledForPausesAndPauseAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		net1 := Scope{Provider: "azure", Account: "sub-1", Service: "network"}
		cmp1 := Scope{Provider: "azure", Account: "sub-1", Service: "compute"}
		cmp2 := Scope{Provider: "azure", Account: "sub-2", Service: "compute"}
		gd, _ := g.Begin(context.Background(), net1)
		gd.ThrottledFor(&apiErr{status: 429}, 4*time.Second, true)
		gd.End()
		s := g.Summary(nil).SlowedBuckets["azure/sub-1/*/network"]
		if s.RateRPS != 15 || s.CeilingRPS != 30 || s.PausedFor != 4*time.Second {
			t.Fatalf("network bucket %+v, want 15 of 30 rps paused 4s", s)
		}
		gd, _ = g.Begin(context.Background(), cmp1)
		gd.PauseAccount(time.Second)
		gd.End()
		wait := func(sc Scope) time.Duration {
			start := time.Now()
			gd, _ := g.Begin(context.Background(), sc)
			defer gd.End()
			gd.Wait(context.Background())
			return time.Since(start)
		}
		if w := wait(cmp1); w != time.Second {
			t.Fatalf("sub-1 compute waited %v, want the 1s subscription pause", w)
		}
		if w := wait(cmp2); w != 0 {
			t.Fatalf("sub-2 waited %v for sub-1's pause", w)
		}
		gd, _ = g.Begin(context.Background(), cmp2)
		gd.Pause(2 * time.Second)
		gd.End()
		if w := wait(cmp2); w != 2*time.Second {
			t.Fatalf("leaf pause %v", w)
		}
	})
}

func TestGuardWaitAllowAndDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}})
		gd, _ := g.Begin(context.Background(), iamUsers)
		defer gd.End()
		if !gd.Allow() {
			t.Fatal("Allow refused the burst token")
		}
		if gd.Allow() {
			t.Fatal("Allow gave a token that needs a wait")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		err := gd.Wait(ctx)
		var de *DeadlineExceededError
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait past the deadline: %v", err)
		}
		start := time.Now()
		if err := gd.Wait(context.Background()); err != nil || time.Since(start) != time.Second {
			t.Fatalf("Wait: %v after %v", err, time.Since(start))
		}
	})
}

func TestGuardDisabledProviderIsNoOp(t *testing.T) {
	g := newGov(t, Config{Azure: ProviderConfig{Enabled: new(false)}})
	gd, err := g.Begin(context.Background(), Scope{Provider: "azure", Account: "s", Service: "network"})
	if err != nil || gd.Enabled() {
		t.Fatal("disabled guard")
	}
	if gd.Admit() != nil || gd.Wait(context.Background()) != nil || gd.Acquire(context.Background()) != nil || gd.Retry(throttle()) != nil || !gd.Allow() || !gd.TryAcquire() {
		t.Fatal("disabled guard steps not no-ops")
	}
	gd.Throttled(throttle())
	gd.Transient(transientErr())
	gd.Succeeded()
	gd.Failed(throttle())
	gd.Pause(time.Second)
	gd.PauseAccount(time.Second)
	gd.Release()
	gd.End()
	if g.Summary(nil).Totals.Calls != 0 {
		t.Fatal("disabled guard recorded")
	}
}

func TestGuardThrottledReadsHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gd, _ := g.Begin(context.Background(), iamUsers)
		gd.Throttled(&apiErr{code: "Throttling", header: http.Header{"Retry-After": {"6"}}})
		gd.End()
		if p := g.Summary(nil).SlowedBuckets["aws/123456789012/*/iam"].PausedFor; p != 6*time.Second {
			t.Fatalf("paused %v, want 6s", p)
		}
	})
}

func TestGuardResetRetriesGivesEachPageItsFreeRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{GCP: ProviderConfig{RetryBudget: new(1)}})
		sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		gd, _ := g.Begin(context.Background(), sc)
		defer gd.End()
		err := &apiErr{code: "ResourceExhausted"}
		for page := range 3 {
			for i := range 2 {
				if gd.Retry(err) != nil {
					t.Fatalf("page %d: free retry %d refused", page, i+1)
				}
			}
			gd.ResetRetries()
		}
		if g.RetryBudget("gcp") != 1 {
			t.Fatal("free retries spent the budget")
		}
		gd.Retry(err)
		gd.Retry(err)
		if gd.Retry(err) != nil || gd.Retries() != 3 {
			t.Fatal("the budgeted third retry was refused")
		}
		var rbe *RetryBudgetExhaustedError
		if e := gd.Retry(err); !errors.As(e, &rbe) {
			t.Fatalf("fourth retry: %v", e)
		}
	})
}

func TestRetrySettingsAndBucketState(t *testing.T) {
	g := newGov(t, Config{Azure: ProviderConfig{MaxRetries: new(3), DeadlineSeconds: 120}})
	if r := g.RetrySettings("azure"); r != (RetrySettings{MaxRetries: 3, BaseDelay: 500 * time.Millisecond, MaxBackoff: 60 * time.Second, Deadline: 120 * time.Second, Budget: 500}) {
		t.Fatalf("%+v", r)
	}
	if r := g.RetrySettings("gcp"); r.MaxRetries != 8 || r.Deadline != 900*time.Second {
		t.Fatalf("%+v", r)
	}
	if b := g.BucketState(Scope{Provider: "azure", Account: "s", Service: "storage"}); b.RateRPS != 0.33 || b.CeilingRPS != 0.33 {
		t.Fatalf("%+v", b)
	}
	if (g.BucketState(Scope{}) != BucketState{}) {
		t.Fatal("empty scope")
	}
}

func TestInFlight(t *testing.T) {
	g := newGov(t, Config{})
	gd, _ := g.Begin(context.Background(), iamUsers)
	gd.Acquire(context.Background())
	if held, waiting := g.InFlight(iamUsers); held != 1 || waiting != 0 {
		t.Fatalf("%d held, %d waiting", held, waiting)
	}
	gd.End()
	if held, _ := g.InFlight(iamUsers); held != 0 {
		t.Fatal("slot not released")
	}
	if h, w := g.InFlight(Scope{}); h != 0 || w != 0 {
		t.Fatal("empty scope")
	}
}

func TestAccountState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		sc := Scope{Provider: "azure", Account: "sub", Service: "compute"}
		gd, _ := g.Begin(context.Background(), sc)
		gd.PauseAccount(time.Second)
		gd.End()
		if a := g.AccountState(sc); a.RateRPS != 20 || a.CeilingRPS != 20 || a.PausedFor != time.Second {
			t.Fatalf("%+v", a)
		}
		if (g.AccountState(iamUsers) != BucketState{}) {
			t.Fatal("AWS has no account bucket by default")
		}
	})
}

// TestGuardRetryRefusedByTheBreaker: an SDK's retry after a throttled
// attempt, refused because the breaker opened meanwhile, ends a call that
// was sent: it is a give-up, not a skip, and the error carries the answer.
func TestGuardRetryRefusedByTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "t")
		gd, _ := g.Begin(ctx, ec2Subnets)
		defer gd.End()
		if err := gd.Admit(); err != nil {
			t.Fatal(err)
		}
		first := throttle()
		gd.Throttled(first)
		for range 5 {
			sdkLoop(context.Background(), g, ec2Subnets, 1, func() error { return throttle() })
		}
		err := gd.Admit()
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || !errors.Is(err, first) {
			t.Fatalf("retry: %v, want a CircuitOpenError wrapping the last answer", err)
		}
		gd.Failed(err) // the integration reports the final error: no double count
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
			t.Fatalf("ledger %d gave up, %d skipped; want 1, 0", gu, sk)
		}
		// A probe's retries go through its own half-open breaker.
		time.Sleep(time.Minute)
		probe, _ := g.Begin(context.Background(), ec2Subnets)
		defer probe.End()
		if err := probe.Admit(); err != nil {
			t.Fatalf("probe: %v", err)
		}
		probe.Throttled(throttle())
		if err := probe.Admit(); err != nil {
			t.Fatalf("the probe's retry was refused by its own breaker: %v", err)
		}
		probe.Succeeded()
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatalf("breakers %+v after the probe succeeded", b)
		}
	})
}
