//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestMaxRetriesThenOriginalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "iam")
		ctx, stats := WithStats(ctx)
		n := 0
		orig := throttle()
		err := Do(ctx, iamUsers, always(&n, orig), WithGovernor(g))
		if err != orig {
			t.Fatalf("err %v, want the original error itself", err)
		}
		if n != 9 {
			t.Fatalf("%d attempts, want 9 (8 retries)", n)
		}
		s := g.Summary(stats).Scopes[sk("aws/123456789012/*/iam")]
		if s.Calls != 9 || s.Throttled != 9 || s.Retries != 8 || s.GaveUp != 1 {
			t.Fatalf("stats %+v", s)
		}
		if !ledger.Degraded() {
			t.Fatal("ledger not degraded after a give-up")
		}
		want := "throttled: 1 call(s) gave up after retries (aws/123456789012/*/iam/ListUsers: throttled: Throttling: Rate exceeded)"
		if got := ledger.Describe(); got != want {
			t.Fatalf("ledger %q\nwant   %q", got, want)
		}
	})
}

func TestNoRetriesAndPolicyMaxRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for _, c := range []struct {
			policy RetryPolicy
			want   int
		}{{RetryPolicy{MaxAttempts: 1}, 1}, {RetryPolicy{MaxAttempts: 3}, 3}, {RetryPolicy{}, 9}} {
			g.Reset()
			n := 0
			Do(context.Background(), iamUsers, always(&n, transientErr()), WithGovernor(g), WithPolicy(c.policy))
			if n != c.want {
				t.Fatalf("policy %+v: %d attempts, want %d", c.policy, n, c.want)
			}
		}
	})
}

func TestConfiguredMaxRetriesZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxRetries: new(0)}})
		n := 0
		Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g))
		if n != 1 {
			t.Fatalf("%d attempts with max_retries 0", n)
		}
	})
}

func TestRetryTransientFalseRetriesThrottlingOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		Do(context.Background(), iamUsers, always(&n, transientErr()), WithGovernor(g), WithPolicy(RetryPolicy{ThrottlingOnly: true}))
		if n != 1 {
			t.Fatalf("%d attempts of a transient error with RetryTransient false", n)
		}
		n = 0
		Do(context.Background(), iamUsers, failing(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{ThrottlingOnly: true}))
		if n != 2 {
			t.Fatalf("%d attempts of a throttle with RetryTransient false", n)
		}
	})
}

func TestBackoffIsDecorrelatedJitterAndHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		var times []time.Time
		fn := func(context.Context) error {
			times = append(times, time.Now())
			return transientErr()
		}
		Do(context.Background(), iamUsers, fn, WithGovernor(g))
		prev := 500 * time.Millisecond
		for i := 1; i < len(times); i++ {
			d := times[i].Sub(times[i-1])
			if d < 500*time.Millisecond || d > min(60*time.Second, 3*prev) {
				t.Fatalf("sleep %d = %v, outside [0.5s, min(60s, 3 x %v)]", i, d, prev)
			}
			prev = d
		}
		// A Retry-After longer than the jitter wins.
		g.Reset()
		times = nil
		n := 0
		Do(context.Background(), iamUsers, func(ctx context.Context) error {
			times = append(times, time.Now())
			return failing(&n, throttleAfter(7*time.Second))(ctx)
		}, WithGovernor(g))
		// 7 s of Retry-After, then 0.2 s for the first token of the drained
		// bucket at 5 rps (IAM's 10 rps halved).
		if d := times[1].Sub(times[0]); d != 7200*time.Millisecond {
			t.Fatalf("retried after %v, want 7.2s (Retry-After, then a token of the drained bucket)", d)
		}
	})
}

func TestBackoffCap(t *testing.T) {
	var g Governor
	for range 1000 {
		if d := g.backoff(50*time.Second, &retryLimits{base: 500 * time.Millisecond, maxBackoff: 60 * time.Second}); d > 60*time.Second || d < 500*time.Millisecond {
			t.Fatalf("backoff %v", d)
		}
	}
}

func TestDeadlineStopsBackoffWithOriginalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		orig := throttleAfter(20 * time.Second)
		start := time.Now()
		err := Do(context.Background(), iamUsers, always(&n, orig), WithGovernor(g), WithPolicy(RetryPolicy{Deadline: 30 * time.Second}))
		if err != orig {
			t.Fatalf("err %v, want the original", err)
		}
		if n != 2 || time.Since(start) != 20200*time.Millisecond {
			t.Fatalf("%d attempts in %v; want 2 in 20.2s (a third would overrun 30 s)", n, time.Since(start))
		}
	})
}

func TestRateWaitOverrunningDeadlineIsDeadlineExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 0.1, MinRPS: 0.1, Burst: 1}}}})
		ok := func(context.Context) error { return nil }
		if err := Do(context.Background(), iamUsers, ok, WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		err := Do(context.Background(), iamUsers, ok, WithGovernor(g), WithPolicy(RetryPolicy{Deadline: 5 * time.Second}))
		var de *DeadlineExceededError
		if !errors.As(err, &de) || de.Wait != 10*time.Second || de.ErrorCode() != "RequestTimeout" {
			t.Fatalf("err %v, want DeadlineExceededError with a 10s wait", err)
		}
		if Classify(err) != Transient {
			t.Fatal("deadline error is not TRANSIENT")
		}
		// The token came back: the next call waits 10 s, not 20 s.
		start := time.Now()
		Do(context.Background(), iamUsers, ok, WithGovernor(g))
		if w := time.Since(start); w != 10*time.Second {
			t.Fatalf("waited %v, want 10s", w)
		}
	})
}

func TestContextDeadlineNeverSleptPast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 0.1, MinRPS: 0.1, Burst: 1}}}})
		ok := func(context.Context) error { return nil }
		Do(context.Background(), iamUsers, ok, WithGovernor(g))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		err := Do(ctx, iamUsers, ok, WithGovernor(g))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want one that Is context.DeadlineExceeded", err)
		}
		var de *DeadlineExceededError
		if !errors.As(err, &de) {
			t.Fatalf("err %T, want *DeadlineExceededError", err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("slept %v before giving up", time.Since(start))
		}
		// A backoff that would pass the context's deadline is not taken.
		n := 0
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		orig := throttleAfter(20 * time.Second)
		g.Reset()
		err = Do(ctx2, iamUsers, always(&n, orig), WithGovernor(g))
		if err != orig || n != 1 || time.Since(start) != 0 {
			t.Fatalf("err %v after %d attempts and %v", err, n, time.Since(start))
		}
	})
}

func TestCancelledDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		orig := throttleAfter(10 * time.Second)
		go func() {
			time.Sleep(5 * time.Second)
			cancel()
		}()
		n := 0
		err := Do(ctx, iamUsers, always(&n, orig), WithGovernor(g))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		var ae *apiErr
		if !errors.As(err, &ae) || ae != orig {
			t.Fatalf("err %v does not carry the provider error", err)
		}
	})
}

func TestBudgetStopsRetriesAfterTwoFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(1)}})
		ctx, ledger := WithLedger(context.Background(), "t")
		n := 0
		orig := throttle()
		err := Do(ctx, iamUsers, always(&n, orig), WithGovernor(g))
		if err != orig {
			t.Fatalf("err %v, want the original", err)
		}
		// 1 attempt + 2 free retries + 1 paid by the budget.
		if n != 4 {
			t.Fatalf("%d attempts, want 4", n)
		}
		if g, _ := ledger.Counts(); g != 1 {
			t.Fatal("budget stop not recorded as a give-up")
		}
		// The budget stop is not a breaker failure.
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatalf("breakers %+v after a budget stop", b)
		}
		// A fresh call still gets its two free retries.
		n = 0
		Do(context.Background(), iamUsers, always(&n, orig), WithGovernor(g))
		if n != 3 {
			t.Fatalf("%d attempts with an empty budget, want 3", n)
		}
		// UseBudget false.
		n = 0
		Do(context.Background(), iamUsers, always(&n, orig), WithGovernor(g), WithPolicy(RetryPolicy{SkipBudget: true, MaxAttempts: 6}))
		if n != 6 {
			t.Fatalf("%d attempts ignoring the budget, want 6", n)
		}
	})
}

func TestBudgetRefundsOneTenthPerSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(1)}})
		n := 0
		Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g)) // spends the token
		for range 9 {
			Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
		}
		n = 0
		Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g))
		if n != 3 {
			t.Fatalf("0.9 refunded token paid a retry: %d attempts", n)
		}
		Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
		if g.provider("aws").budget.Remaining() != 1 {
			t.Fatalf("remaining %v", g.provider("aws").budget.Remaining())
		}
	})
}

// TestDeadlineDuringATokenWaitIsAGiveUp: a throttled call whose retry
// would wait past the deadline for its token stops with the provider's
// error, recorded as given up, with a breaker failure; the retry it never
// sent is not counted.
func TestDeadlineDuringATokenWaitIsAGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}})
		ctx, ledger := WithLedger(context.Background(), "t")
		ctx, stats := WithStats(ctx)
		n := 0
		orig := throttle()
		err := Do(ctx, iamUsers, always(&n, orig), WithGovernor(g),
			WithPolicy(RetryPolicy{Deadline: 1600 * time.Millisecond, BaseDelay: time.Second, MaxBackoff: time.Second}))
		if err != orig || n != 1 {
			t.Fatalf("err %v after %d attempts", err, n)
		}
		s := g.Summary(stats).Scopes[sk("aws/123456789012/*/iam")]
		if s.GaveUp != 1 || s.Retries != 0 {
			t.Fatalf("stats %+v: want a give-up and no retry", s)
		}
		if !ledger.Degraded() {
			t.Fatal("the lost call is not in the ledger")
		}
		if f := g.Summary(nil).Breakers[sk("aws/123456789012/*/iam")].Failures; f != 1 {
			t.Fatalf("breaker failures %d, want 1", f)
		}
	})
}

// A throttled call the empty retry budget stops gives up, and its
// ledger's reason says the budget ended it, not the throttle alone (a
// call whose retries ran out gives up on the throttle): the task's
// coverage line tells a provider whose budget ran dry, which stops every
// call's third retry, from a scope that throttled a call through all its
// attempts. Do returns the provider's error, as when its attempts run out;
// the SDK's loop gets a *RetryBudgetExhaustedError, which is both
// ErrBudgetExhausted and the throttle.
func TestABudgetGiveUpSaysTheBudgetEndedIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}})
		orig := throttle()
		want := "aws/123456789012/*/iam/ListUsers: retry budget exhausted after throttled: " + orig.Error()
		ctx, ledger := WithLedger(context.Background(), "t")
		n := 0
		if err := Do(ctx, iamUsers, always(&n, orig), WithGovernor(g)); err != orig || n != 3 {
			t.Fatalf("Do: %v after %d attempts, want the provider's error after 3", err, n)
		}
		if r := ledger.Reasons(); ledger.Count(LossGaveUp) != 1 || len(r) != 1 || r[0] != want {
			t.Fatalf("Do: ledger %q, reasons %q; want one give-up, %q", ledger.Describe(), r, want)
		}
		// The report says so too, of the scope the call gave up in.
		sum := g.Summary(nil)
		if len(sum.Skipped) != 1 || !strings.HasSuffix(sum.Skipped[iamUsers.ServiceScope()], "retry budget exhausted after throttled: "+orig.Error()) {
			t.Fatalf("Do: Summary's Skipped %q; want the budget named for %v", sum.Skipped, iamUsers.ServiceScope())
		}
		ctx, ledger = WithLedger(context.Background(), "t")
		_, err := sdkLoop(ctx, g, iamUsers, 11, func() error { return orig })
		if !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, orig) {
			t.Fatalf("the SDK's loop: %v; want ErrBudgetExhausted and the throttle", err)
		}
		if r := ledger.Reasons(); ledger.Count(LossGaveUp) != 1 || len(r) != 1 || r[0] != want {
			t.Fatalf("the SDK's loop: ledger %q, reasons %q; want one give-up, %q", ledger.Describe(), r, want)
		}
	})
}

// The empty budget's stop of a transient error is not a throttled
// give-up, but the call is lost: it failed after its retries.
func TestBudgetStopOfATransientErrorIsNotAThrottledGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}})
		ctx, ledger := WithLedger(context.Background(), "t")
		n := 0
		Do(ctx, iamUsers, always(&n, transientErr()), WithGovernor(g))
		tot := g.Summary(nil).Totals
		if n != 3 || tot.GaveUp != 0 || tot.Failed != 1 || ledger.Count(LossFailed) != 1 ||
			ledger.Describe() != "degraded: 1 call(s) failed after retries (transient errors) (aws/123456789012/*/iam/ListUsers: retry budget exhausted after InternalError)" {
			t.Fatalf("%d attempts, ledger %q, totals %v", n, ledger.Describe(), tot)
		}
		// The scope's last error says so too (Counters.LastError).
		if le := g.Summary(nil).Scopes[iamUsers.ServiceScope()].LastError; le != "retry budget exhausted after InternalError" {
			t.Fatalf("the scope's LastError %q; want the budget named", le)
		}
	})
}

// A retry budget too large to count in units saturates: a call still gets
// its nine attempts, and the budget reads positive.
func TestHugeRetryBudgetSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(math.MaxInt64)}})
		n := 0
		Do(context.Background(), iamUsers, always(&n, transientErr()), WithGovernor(g))
		if n != 9 {
			t.Fatalf("%d attempts, want 9", n)
		}
		if b := g.Inspect(iamUsers).RetryBudget; b <= 0 {
			t.Fatalf("budget %v", b)
		}
	})
}

// A wait given to Retry too long to add to the time, as an SDK's backoff
// may compute one, passes the deadline like any wait longer than what is
// left of it: the call ends with a *DeadlineExceededError, recorded as
// failed, and is never let through at once.
func TestRetryOfAnEndlessWaitIsPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for _, wait := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Second, 1 << 62} {
			ctx, ledger := WithLedger(context.Background(), "iam")
			gd, _ := g.Begin(ctx, iamUsers)
			time.Sleep(time.Minute) // the governor's time is well past 0
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			gd.After(transientErr())
			delay, err := gd.Retry(wait)
			var de *DeadlineExceededError
			if !errors.As(err, &de) || ledger.Count(LossFailed) != 1 {
				t.Fatalf("Retry(%v): delay %v, err %v, %d failed in the ledger; want past the 900 s deadline", wait, delay, err, ledger.Count(LossFailed))
			}
			gd.End(err)
		}
	})
}

// A call whose retries its deadline (the policy's or the context's) or an
// opened breaker stopped says so, in the ledger and in its scope's last
// error, in the grammar of the empty budget's stop: what stopped the
// retries, "after" the last answer. The last answer alone reads as if the
// provider's answer had ended the call, as when its attempts run out.
func TestARetryStopSaysWhatStoppedIt(t *testing.T) {
	throttled := "throttled: " + throttle().Error()
	for _, c := range []struct {
		name string
		sc   Scope
		stop string // what the ledger says stopped the retries
		run  func(t *testing.T, g *Governor, ctx context.Context) error
	}{
		{"the policy's deadline", iamUsers, "deadline exceeded", func(t *testing.T, g *Governor, ctx context.Context) error {
			n := 0
			return Do(ctx, iamUsers, always(&n, throttleAfter(30*time.Second)), WithGovernor(g), WithPolicy(RetryPolicy{Deadline: 10 * time.Second}))
		}},
		{"the context's deadline", iamUsers, "deadline exceeded", func(t *testing.T, g *Governor, ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			n := 0
			return Do(ctx, iamUsers, always(&n, throttleAfter(30*time.Second)), WithGovernor(g))
		}},
		{"a breaker opened between attempts", ec2Subnets, "circuit open", func(t *testing.T, g *Governor, ctx context.Context) error {
			gd, _ := g.Begin(ctx, ec2Subnets)
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			gd.After(throttle())
			if _, err := gd.Retry(0); err != nil {
				t.Fatalf("Retry: %v", err)
			}
			openBreaker(t, g)
			err := gd.Pace(ctx)
			gd.End(err)
			if !errors.Is(err, ErrCircuitOpen) {
				t.Fatalf("Pace: %v, want the open breaker's refusal", err)
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ctx, ledger := WithLedger(context.Background(), "t")
				if err := c.run(t, g, ctx); err == nil {
					t.Fatal("the call succeeded")
				}
				want := c.sc.String() + ": " + c.stop + " after " + throttled
				if r := ledger.Reasons(); ledger.Count(LossGaveUp) != 1 || len(r) != 1 || r[0] != want {
					t.Fatalf("ledger %q, reasons %q; want one give-up, %q", ledger.Describe(), r, want)
				}
				if le := g.Summary(nil).Scopes[c.sc.ServiceScope()].LastError; le != c.stop+" after "+throttled {
					t.Fatalf("the scope's LastError %q; want %q", le, c.stop+" after "+throttled)
				}
			})
		})
	}
}

// A retry budget larger than a budget holds (budget.MaxSize tokens)
// saturates, and every read says so alike: Budget and Inspect of a
// provider no call has used, which show what its first call would find,
// read what they read once a call has made the budget, BudgetSize reads
// what Budget reads of it full, and a provider
// other than aws, azure and gcp whose huge budget is full is forgotten
// once its scopes are reclaimed, as any other.
func TestAHugeRetryBudgetReadsTheSameBeforeAndAfterACall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{Providers: map[string]ProviderConfig{"github": {RetryBudget: new(math.MaxInt)}}})
		ctx, gov := context.Background(), WithGovernor(g)
		ok := func(context.Context) error { return nil }
		before, inspected := g.Budget("github"), g.Inspect(githubRest).RetryBudget
		if err := Do(ctx, githubRest, ok, gov); err != nil {
			t.Fatal(err)
		}
		if after := g.Budget("github"); before != after || inspected != after || float64(g.BudgetSize("github")) != after {
			t.Errorf("retry_budget %d: before any call Budget %v and Inspect %v, after one Budget %v, BudgetSize %d; want one size", math.MaxInt, before, inspected, after, g.BudgetSize("github"))
		}
		for range 180 { // calls to aws take the reclaimer's steps
			time.Sleep(time.Second)
			Do(ctx, iamUsers, ok, gov)
		}
		if p := generic(g, "github"); p != nil {
			t.Errorf("github, its scopes reclaimed and its budget full (%v of retry_budget %d), is still held after three idle minutes", g.Budget("github"), math.MaxInt)
		}
	})
}

// A full retry budget reads its size, however large: a size that a
// float64 does not hold exactly (past 2^53 tokens, or units of a tenth of
// a token) is no exception, for a full budget read below its size is
// spent, shown by a status page and a gauge, and its provider never
// forgotten.
func TestALargeRetryBudgetReadsFullAtItsSize(t *testing.T) {
	for _, size := range []int{9007199254740999, 10000000000000007} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{Providers: map[string]ProviderConfig{"github": {RetryBudget: new(size)}}})
				ctx, gov := context.Background(), WithGovernor(g)
				ok := func(context.Context) error { return nil }
				if err := Do(ctx, githubRest, ok, gov); err != nil {
					t.Fatal(err)
				}
				if left, full := g.Budget("github"), g.BudgetSize("github"); left != float64(full) {
					t.Errorf("retry_budget %d, no retry taken: Budget %v, BudgetSize %d; want Budget to read the size", size, left, full)
				}
				for range 180 { // calls to aws take the reclaimer's steps
					time.Sleep(time.Second)
					Do(ctx, iamUsers, ok, gov)
				}
				if p := generic(g, "github"); p != nil {
					t.Errorf("github, its scopes reclaimed and its budget full (%v of retry_budget %d), is still held after three idle minutes", g.Budget("github"), size)
				}
			})
		})
	}
}

// BudgetSize is the size of a provider's retry budget, what Budget reads
// of it full: the configuration's retry_budget, 500 by default, for a
// provider a call has used and for one none has, and the new size once a
// Configure changes it.
func TestBudgetSizeIsWhatBudgetReadsFull(t *testing.T) {
	g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(10)}})
	Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
	for name, want := range map[string]int{"aws": 10, "azure": 500, "github": 500} {
		if got := g.BudgetSize(name); got != want || g.Budget(name) != float64(want) {
			t.Errorf("%s: BudgetSize %d, Budget %v; want %d", name, got, g.Budget(name), want)
		}
	}
	if err := g.Configure(Config{AWS: ProviderConfig{RetryBudget: new(7)}}); err != nil {
		t.Fatal(err)
	}
	if got := g.BudgetSize("aws"); got != 7 || g.Budget("aws") != 7 {
		t.Errorf("retry_budget 7 configured: BudgetSize %d, Budget %v; want 7", got, g.Budget("aws"))
	}
}
