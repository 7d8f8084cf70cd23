package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestWorkedExample is the spec's paced_calls.py: a throttled-twice EC2
// call and six concurrent calls at 2 rps burst 2.
func TestWorkedExample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{
			"secretsmanager": {MaxRPS: 2, Burst: 2},
		}}})
		ctx, stats := WithStats(context.Background())
		attempts := 0
		vpcs, err := Call(ctx, ec2Vpcs, func(context.Context) (string, error) {
			attempts++
			if attempts <= 2 {
				return "", &apiErr{code: "RequestLimitExceeded", status: 503, msg: "Rate exceeded"}
			}
			return "vpc-0a1b2c3d", nil
		}, WithGovernor(g))
		if err != nil || vpcs != "vpc-0a1b2c3d" || attempts != 3 {
			t.Fatalf("Call = %q, %v after %d attempts; want the VPC after 3", vpcs, err, attempts)
		}
		secret := Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "secretsmanager", Operation: "DescribeSecret"}
		start := time.Now()
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				if err := Do(ctx, secret, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("6 calls at 2 rps burst 2 took %v, want 2.0s", el)
		}
		sum := g.Summary(stats)
		want := Totals{Calls: 9, Throttled: 2, Retries: 2, Wait: 5 * time.Second}
		if sum.Totals != want {
			t.Fatalf("totals %+v, want %+v", sum.Totals, want)
		}
		// The throttles were a second or more apart (10 rps, then 5) or
		// closer (one congestion event: 10 rps), as the spec explains.
		r := sum.SlowedBuckets["aws/123456789012/us-east-1/ec2/DescribeVpcs"].RateRPS
		if r != 5 && r != 10 {
			t.Fatalf("DescribeVpcs at %v rps, want 5 or 10", r)
		}
		msgs := stats.Messages()
		if len(msgs) != 2 || msgs[1] != "aws/123456789012/us-east-1/secretsmanager: waited 5.0s for rate limit" {
			t.Fatalf("messages %q", msgs)
		}
	})
}

func TestTwoThrottlesASecondApartEndAtFiveRPS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BaseDelaySeconds: 1.2}})
		n := 0
		if err := Do(context.Background(), ec2Vpcs, failing(&n, throttle(), throttle()), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if r := rate(g, ec2Vpcs); r != 5 {
			t.Fatalf("rate %v, want 5", r)
		}
		if got := g.Summary(nil).Messages; len(got) != 1 || got[0] != "aws/123456789012/us-east-1/ec2: throttled 2x, slowed to 5.0 rps, 2 retries" {
			t.Fatalf("messages %q", got)
		}
	})
}

func TestRecoveryBackToCeilingAfter75s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BaseDelaySeconds: 1.2}})
		n := 0
		Do(context.Background(), ec2Vpcs, failing(&n, throttle(), throttle()), WithGovernor(g))
		last := time.Now() // just after the second throttle... plus the backoff
		ok := func(context.Context) error { return nil }
		for rate(g, ec2Vpcs) < 20 {
			time.Sleep(100 * time.Millisecond)
			Do(context.Background(), ec2Vpcs, ok, WithGovernor(g))
			if time.Since(last) > 120*time.Second {
				t.Fatal("not back at 20 rps after 120 s")
			}
		}
		if el := time.Since(last); el < 70*time.Second || el > 76*time.Second {
			t.Fatalf("back at 20 rps after %v, want about 75s", el)
		}
	})
}

func TestFortySimultaneousThrottlesHalveOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		var wg sync.WaitGroup
		release := make(chan struct{})
		for range 40 {
			wg.Go(func() {
				Do(context.Background(), ec2Vpcs, func(context.Context) error {
					<-release
					return throttle()
				}, WithGovernor(g), WithPolicy(RetryPolicy{MaxRetries: NoRetries}))
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if r := rate(g, ec2Vpcs); r != 10 {
			t.Fatalf("rate %v after 40 simultaneous throttles, want 10", r)
		}
	})
}

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
		s := g.Summary(stats).Scopes["aws/123456789012/*/iam"]
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
		}{{RetryPolicy{MaxRetries: NoRetries}, 1}, {RetryPolicy{MaxRetries: 2}, 3}, {RetryPolicy{}, 9}} {
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

func TestFatalReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		err := Do(context.Background(), iamUsers, always(&n, accessDenied()), WithGovernor(g))
		if n != 1 || err.Error() != "AccessDenied" {
			t.Fatalf("%d attempts, err %v", n, err)
		}
	})
}

func TestRetryTransientFalseRetriesThrottlingOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		Do(context.Background(), iamUsers, always(&n, transientErr()), WithGovernor(g), WithPolicy(RetryPolicy{RetryTransient: new(false)}))
		if n != 1 {
			t.Fatalf("%d attempts of a transient error with RetryTransient false", n)
		}
		n = 0
		Do(context.Background(), iamUsers, failing(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{RetryTransient: new(false)}))
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
		if d := g.backoff(int64(50*time.Second), int64(500*time.Millisecond), int64(60*time.Second)); d > int64(60*time.Second) || d < int64(500*time.Millisecond) {
			t.Fatalf("backoff %v", time.Duration(d))
		}
	}
}

func TestRetryAfterPausesTheScopeForEveryCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		Do(context.Background(), iamUsers, func(context.Context) error { return throttleAfter(30 * time.Second) },
			WithGovernor(g), WithPolicy(RetryPolicy{MaxRetries: NoRetries}))
		start := time.Now()
		Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
		// The 30 s pause, then the first token of the drained bucket at 5 rps.
		if w := time.Since(start); w != 30200*time.Millisecond {
			t.Fatalf("next caller waited %v, want 30.2s", w)
		}
	})
}

func TestRetryAfterCappedAt300s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		Do(context.Background(), iamUsers, func(context.Context) error { return throttleAfter(1e6 * time.Second) },
			WithGovernor(g), WithPolicy(RetryPolicy{MaxRetries: NoRetries}))
		start := time.Now()
		Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
		if w := time.Since(start); w != 300200*time.Millisecond {
			t.Fatalf("waited %v, want the 300s cap (and 0.2 s for a token)", w)
		}
	})
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
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 0.1, Burst: 1}}}})
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
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 0.1, Burst: 1}}}})
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
		Do(context.Background(), iamUsers, always(&n, orig), WithGovernor(g), WithPolicy(RetryPolicy{UseBudget: new(false), MaxRetries: 5}))
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

func TestBreakerOpensAfterFiveGiveUpsAndRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "ec2")
		ctx, stats := WithStats(ctx)
		pol := WithPolicy(RetryPolicy{MaxRetries: NoRetries})
		n := 0
		for range 5 {
			Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), pol)
		}
		err := Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), pol)
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("err %v, want CircuitOpenError", err)
		}
		if n != 5 {
			t.Fatalf("%d calls sent, want 5 (the sixth rejected)", n)
		}
		want := "circuit open for aws/123456789012/us-east-1/ec2/DescribeSubnets after repeated throttling; retry in 60s"
		if err.Error() != want {
			t.Fatalf("message %q\nwant    %q", err, want)
		}
		if coe.RetryAfter() != 60*time.Second || coe.ErrorCode() != "Throttling" || Classify(err) != Throttled {
			t.Fatal("CircuitOpenError: wrong retry-after, code or kind")
		}
		if IsProviderAnswer(err) {
			t.Fatal("CircuitOpenError is a provider answer")
		}
		// Per operation: DescribeVpcs in the same account and region flows.
		if err := Do(ctx, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatalf("DescribeVpcs blocked by DescribeSubnets' breaker: %v", err)
		}
		s := g.Summary(stats)
		sc := s.Scopes["aws/123456789012/us-east-1/ec2"]
		if sc.Rejected != 1 || sc.BreakerTrips != 1 || sc.GaveUp != 5 {
			t.Fatalf("stats %+v", sc)
		}
		if s.Breakers["aws/123456789012/us-east-1/ec2/DescribeSubnets"].State != "open" {
			t.Fatalf("breakers %+v", s.Breakers)
		}
		if s.Skipped["aws/123456789012/us-east-1/ec2"] == "" {
			t.Fatal("no skipped entry")
		}
		if gu, sk := ledger.Counts(); gu != 5 || sk != 1 {
			t.Fatalf("ledger %d gave up, %d skipped", gu, sk)
		}
	})
}

func TestHalfOpenProbeClosesOrReopensDoubled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pol := WithPolicy(RetryPolicy{MaxRetries: NoRetries})
		n := 0
		for range 5 {
			Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), pol)
		}
		time.Sleep(60 * time.Second)
		// The probe fails: open again for 120 s.
		Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), pol)
		err := Do(context.Background(), ec2Subnets, always(&n, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || coe.Wait != 120*time.Second {
			t.Fatalf("err %v, want open for 120s", err)
		}
		time.Sleep(120 * time.Second)
		if err := Do(context.Background(), ec2Subnets, always(&n, nil), WithGovernor(g)); err != nil {
			t.Fatalf("probe: %v", err)
		}
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatalf("breakers after a successful probe: %+v", b)
		}
	})
}

func TestProbeSeesOtherCallersRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pol := WithPolicy(RetryPolicy{MaxRetries: NoRetries})
		n := 0
		for range 5 {
			Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), pol)
		}
		time.Sleep(60 * time.Second)
		probing := make(chan struct{})
		done := make(chan struct{})
		go func() {
			Do(context.Background(), ec2Subnets, func(context.Context) error {
				close(probing)
				<-done
				return nil
			}, WithGovernor(g))
		}()
		<-probing
		err := Do(context.Background(), ec2Subnets, always(&n, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("second caller during the probe: %v", err)
		}
		close(done)
	})
}

func TestFatalAnswerResetsBreakerLocalErrorDoesNot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pol := WithPolicy(RetryPolicy{MaxRetries: NoRetries})
		n := 0
		for range 4 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), pol)
		}
		// A local error (no code, no status) leaves the count at 4.
		Do(context.Background(), iamUsers, always(&n, errors.New("bad input")), WithGovernor(g), pol)
		if f := g.Summary(nil).Breakers["aws/123456789012/*/iam"].Failures; f != 4 {
			t.Fatalf("failures %d after a local error, want 4", f)
		}
		// AccessDenied proves the service is reachable.
		Do(context.Background(), iamUsers, always(&n, accessDenied()), WithGovernor(g), pol)
		if _, ok := g.Summary(nil).Breakers["aws/123456789012/*/iam"]; ok {
			t.Fatal("AccessDenied did not reset the breaker")
		}
		// An AccessDenied storm never opens it.
		for range 20 {
			Do(context.Background(), iamUsers, always(&n, accessDenied()), WithGovernor(g), pol)
		}
		if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFatalAnswerClosesHalfOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pol := WithPolicy(RetryPolicy{MaxRetries: NoRetries})
		n := 0
		for range 5 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), pol)
		}
		time.Sleep(time.Minute)
		Do(context.Background(), iamUsers, always(&n, accessDenied()), WithGovernor(g), pol)
		if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); err != nil {
			t.Fatalf("breaker still open after a FATAL probe answer: %v", err)
		}
	})
}

func TestCircuitOpeningDuringRetriesReturnsCircuitErrorWithCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		pol := WithPolicy(RetryPolicy{MaxRetries: NoRetries})
		orig := throttle()
		started := make(chan struct{})
		var once sync.Once
		errc := make(chan error)
		go func() {
			errc <- Do(context.Background(), ec2Subnets, func(context.Context) error {
				once.Do(func() { close(started) })
				return orig
			}, WithGovernor(g))
		}()
		<-started
		n := 0
		for range 5 {
			Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), pol)
		}
		err := <-errc
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || !errors.Is(err, orig) {
			t.Fatalf("err %v, want a CircuitOpenError wrapping the provider error", err)
		}
	})
}

func TestDisabledProviderCallsFnOnceDirectly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, cfg := range []Config{{Enabled: new(false)}, {AWS: ProviderConfig{Enabled: new(false)}}} {
			g := newGov(t, cfg)
			ctx, stats := WithStats(context.Background())
			n := 0
			orig := throttle()
			if err := Do(ctx, iamUsers, always(&n, orig), WithGovernor(g)); err != orig || n != 1 {
				t.Fatalf("disabled: err %v after %d calls", err, n)
			}
			if stats.Messages() != nil || g.Summary(stats).Totals.Calls != 0 {
				t.Fatal("disabled provider recorded stats")
			}
		}
		// Only the disabled provider is off.
		g := newGov(t, Config{AWS: ProviderConfig{Enabled: new(false)}})
		if !g.Enabled("azure") || g.Enabled("aws") {
			t.Fatal("Enabled wrong")
		}
	})
}

func TestBadInput(t *testing.T) {
	if err := Do(context.Background(), Scope{}, func(context.Context) error { return nil }); !errors.Is(err, ErrNoProvider) {
		t.Fatalf("empty provider: %v", err)
	}
	if err := Do(context.Background(), iamUsers, nil); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("nil fn: %v", err)
	}
	var fn func(context.Context) (int, error)
	if _, err := Call(context.Background(), iamUsers, fn); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("nil fn: %v", err)
	}
	if _, err := Default().Begin(context.Background(), Scope{}); !errors.Is(err, ErrNoProvider) {
		t.Fatalf("Begin with an empty provider: %v", err)
	}
}

func TestBulkheadCapsConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{Azure: ProviderConfig{MaxConcurrency: 3}})
		sc := Scope{Provider: "azure", Account: "sub", Service: "compute"}
		var in, peak atomic.Int32
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				Do(context.Background(), sc, func(context.Context) error {
					n := in.Add(1)
					if n > peak.Load() {
						peak.Store(n)
					}
					time.Sleep(time.Second)
					in.Add(-1)
					return nil
				}, WithGovernor(g))
			})
		}
		wg.Wait()
		if p := peak.Load(); p != 3 {
			t.Fatalf("peak %d in flight, want 3", p)
		}
		used, waiting := g.provider("azure").lim.accountBulkhead("sub").InUse()
		if used != 0 || waiting != 0 {
			t.Fatalf("bulkhead %d used %d waiting after the calls", used, waiting)
		}
	})
}

func TestBulkheadSlotReleasedWhenContextCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 1}})
		sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		hold := make(chan struct{})
		go Do(context.Background(), sc, func(context.Context) error { <-hold; return nil }, WithGovernor(g))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := Do(ctx, sc, func(context.Context) error { return nil }, WithGovernor(g))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
		close(hold)
		synctest.Wait()
		used, waiting := g.provider("gcp").lim.accountBulkhead("projects/p1").InUse()
		if used != 0 || waiting != 0 {
			t.Fatalf("%d used %d waiting", used, waiting)
		}
	})
}

func TestUnknownProviderWorksAtGenericDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		sc := Scope{Provider: "github", Account: "my-org", Service: "rest"}
		start := time.Now()
		var wg sync.WaitGroup
		for range 60 {
			wg.Go(func() { Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)) })
		}
		wg.Wait()
		// 40 from the burst, 20 more at 20 rps: 1 s.
		if el := time.Since(start); el != time.Second {
			t.Fatalf("60 calls took %v, want 1s", el)
		}
		ps := g.provider("github")
		if ps.set.bulkhead != 64 || ps.set.retry.maxRetries != 8 || ps.set.leaf.Floor != 0.2 {
			t.Fatalf("generic settings %+v", ps.set)
		}
	})
}

func TestAzureAccountBucketHoldsEverySubscriptionCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{Azure: ProviderConfig{AccountMaxRPS: new(2.0), AccountBurst: 2}})
		var wg sync.WaitGroup
		start := time.Now()
		for _, svc := range []string{"compute", "network", "storage", "web"} {
			wg.Go(func() {
				Do(context.Background(), Scope{Provider: "azure", Account: "sub", Service: svc}, func(context.Context) error { return nil }, WithGovernor(g))
			})
		}
		wg.Wait()
		// Four calls to four providers share the subscription's 2 rps burst 2.
		if el := time.Since(start); el != time.Second {
			t.Fatalf("took %v, want 1s", el)
		}
	})
}

func TestWrapAndWrapArg(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		f := Wrap(iamUsers, func(context.Context) (int, error) {
			n++
			if n == 1 {
				return 0, throttle()
			}
			return 42, nil
		}, WithGovernor(g))
		if v, err := f(context.Background()); v != 42 || err != nil {
			t.Fatalf("Wrap: %v %v", v, err)
		}
		var scopes []Scope
		h := WrapArg(func(region string) Scope {
			s := Scope{Provider: "aws", Account: "1", Region: region, Service: "ec2", Operation: "DescribeVpcs"}
			scopes = append(scopes, s)
			return s
		}, func(_ context.Context, region string) (string, error) { return region, nil }, WithGovernor(g))
		if v, err := h(context.Background(), "eu-west-1"); v != "eu-west-1" || err != nil {
			t.Fatal(v, err)
		}
		if scopes[0].Region != "eu-west-1" {
			t.Fatal("scope not computed from the argument")
		}
	})
}

func TestCallerCancellationIsNotRetriedNorCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		err := Do(ctx, iamUsers, func(ctx context.Context) error {
			n++
			cancel()
			return ctx.Err()
		}, WithGovernor(g))
		if !errors.Is(err, context.Canceled) || n != 1 {
			t.Fatalf("err %v after %d calls", err, n)
		}
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatal("a cancelled call counted toward the breaker")
		}
	})
}

func TestDefaultGovernorAndConfigure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ResetDefault()
		defer ResetDefault()
		if err := Configure(Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range 3 {
			if err := Do(context.Background(), iamUsers, func(context.Context) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("3 calls at 1 rps burst 1 took %v", el)
		}
		if err := Configure(Config{AWS: ProviderConfig{MaxRPS: -1}}); err == nil {
			t.Fatal("invalid config accepted")
		}
		if Default().Config().AWS.Services["iam"].MaxRPS != 1 {
			t.Fatal("an invalid Configure changed the configuration")
		}
	})
}

// TestProbeWithRetries: a half-open breaker's probe is a whole call, its
// retries included. A probe that fails after its retries reopens the
// breaker with the cooldown doubled; one whose retry succeeds closes it.
func TestProbeWithRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		n := 0
		for range 5 {
			Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxRetries: NoRetries}))
		}
		time.Sleep(60 * time.Second)
		n = 0
		err := Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxRetries: 2}))
		var coe *CircuitOpenError
		if errors.As(err, &coe) || n != 3 {
			t.Fatalf("probe: %v after %d attempts; want the provider's error after 3 (its retries were let through)", err, n)
		}
		br := g.Summary(nil).Breakers["aws/123456789012/us-east-1/ec2/DescribeSubnets"]
		if br.State != "open" || br.Cooldown != 120*time.Second {
			t.Fatalf("after a failed probe: %+v, want open with a 120s cooldown", br)
		}
		if s := g.Summary(stats).Scopes["aws/123456789012/us-east-1/ec2"]; s.Rejected != 0 || s.GaveUp != 6 || s.Retries != 2 {
			t.Fatalf("stats %+v: a probe's retries are not rejections", s)
		}
		time.Sleep(120 * time.Second)
		n = 0
		if err := Do(ctx, ec2Subnets, failing(&n, throttle()), WithGovernor(g)); err != nil || n != 2 {
			t.Fatalf("second probe: %v after %d attempts", err, n)
		}
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatalf("breakers after a probe whose retry succeeded: %+v", b)
		}
	})
}

// TestRetryRefusedByAnOpenBreakerIsAFailedCall: another call opened the
// breaker while this one backed off: its retry is refused, and the call is
// recorded as failed (sent, throttled, given up), not as skipped.
func TestRetryRefusedByAnOpenBreakerIsAFailedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "t")
		done := make(chan error)
		go func() {
			n := 0
			done <- Do(ctx, ec2Subnets, always(&n, throttleAfter(10*time.Second)), WithGovernor(g))
		}()
		synctest.Wait()
		n := 0
		for range 5 {
			Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxRetries: NoRetries}))
		}
		err := <-done
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("err %v, want CircuitOpenError", err)
		}
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
			t.Fatalf("ledger: %d gave up, %d skipped; want 1, 0", gu, sk)
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
		s := g.Summary(stats).Scopes["aws/123456789012/*/iam"]
		if s.GaveUp != 1 || s.Retries != 0 {
			t.Fatalf("stats %+v: want a give-up and no retry", s)
		}
		if !ledger.Degraded() {
			t.Fatal("the lost call is not in the ledger")
		}
		if f := g.Summary(nil).Breakers["aws/123456789012/*/iam"].Failures; f != 1 {
			t.Fatalf("breaker failures %d, want 1", f)
		}
	})
}

// TestBudgetStopOfATransientErrorIsNotAThrottledGiveUp.
func TestBudgetStopOfATransientErrorIsNotAThrottledGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}})
		ctx, ledger := WithLedger(context.Background(), "t")
		n := 0
		Do(ctx, iamUsers, always(&n, transientErr()), WithGovernor(g))
		if n != 3 || ledger.Degraded() || g.Summary(nil).Totals.GaveUp != 0 {
			t.Fatalf("%d attempts, ledger %q, gave up %d", n, ledger.Describe(), g.Summary(nil).Totals.GaveUp)
		}
	})
}
