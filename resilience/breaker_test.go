//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

func TestBreakerOpensAfterFiveGiveUpsAndRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "ec2")
		ctx, stats := WithStats(ctx)
		pol := WithPolicy(RetryPolicy{MaxAttempts: 1})
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
		sc := s.Scopes[sk("aws/123456789012/us-east-1/ec2")]
		if sc.Rejected != 1 || sc.BreakerTrips != 1 || sc.GaveUp != 5 {
			t.Fatalf("stats %+v", sc)
		}
		if s.Breakers[sk("aws/123456789012/us-east-1/ec2/DescribeSubnets")].State != state.Open {
			t.Fatalf("breakers %+v", s.Breakers)
		}
		if s.Skipped[sk("aws/123456789012/us-east-1/ec2")] == "" {
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
		pol := WithPolicy(RetryPolicy{MaxAttempts: 1})
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
		pol := WithPolicy(RetryPolicy{MaxAttempts: 1})
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
		pol := WithPolicy(RetryPolicy{MaxAttempts: 1})
		n := 0
		for range 4 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), pol)
		}
		// A local error (no code, no status) leaves the count at 4.
		Do(context.Background(), iamUsers, always(&n, errors.New("bad input")), WithGovernor(g), pol)
		if f := g.Summary(nil).Breakers[sk("aws/123456789012/*/iam")].Failures; f != 4 {
			t.Fatalf("failures %d after a local error, want 4", f)
		}
		// AccessDenied proves the service is reachable.
		Do(context.Background(), iamUsers, always(&n, accessDenied()), WithGovernor(g), pol)
		if _, ok := g.Summary(nil).Breakers[sk("aws/123456789012/*/iam")]; ok {
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
		pol := WithPolicy(RetryPolicy{MaxAttempts: 1})
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
		pol := WithPolicy(RetryPolicy{MaxAttempts: 1})
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

// TestProbeWithRetries: a half-open breaker's probe is a whole call, its
// retries included. A probe that fails after its retries reopens the
// breaker with the cooldown doubled; one whose retry succeeds closes it.
func TestProbeWithRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		n := 0
		for range 5 {
			Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		time.Sleep(60 * time.Second)
		n = 0
		err := Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 3}))
		var coe *CircuitOpenError
		if errors.As(err, &coe) || n != 3 {
			t.Fatalf("probe: %v after %d attempts; want the provider's error after 3 (its retries were let through)", err, n)
		}
		br := g.Summary(nil).Breakers[sk("aws/123456789012/us-east-1/ec2/DescribeSubnets")]
		if br.State != state.Open || br.Cooldown != 120*time.Second {
			t.Fatalf("after a failed probe: %+v, want open with a 120s cooldown", br)
		}
		if s := g.Summary(stats).Scopes[sk("aws/123456789012/us-east-1/ec2")]; s.Rejected != 0 || s.GaveUp != 6 || s.Retries != 2 {
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

// While a half-open breaker's probe backs off before its retry, it still
// holds the probe (a probe is a whole call, its retries included, as
// TestProbeWithRetries has it; the spec's probe call holds a lease of one
// cooldown): another call of the scope is refused at once with a
// *CircuitOpenError whose Wait is what is left of the probe's lease, when
// the next call becomes the probe should the probe not report back, and
// which sends nothing. Once the probe's retry succeeds, the breaker
// closes and the next call goes.
func TestOtherCallsAreRefusedWhileTheProbeBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		for range 5 {
			Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		time.Sleep(60 * time.Second)
		leased := time.Now()
		backingOff := make(chan struct{})
		probed := make(chan error)
		go func() {
			attempts := 0
			probed <- Do(context.Background(), ec2Subnets, func(context.Context) error {
				if attempts++; attempts == 1 {
					defer close(backingOff)
					return throttle()
				}
				return nil
			}, WithGovernor(g))
		}()
		<-backingOff
		time.Sleep(100 * time.Millisecond) // the probe's backoff is at least 500ms
		sent := 0
		err := Do(context.Background(), ec2Subnets, always(&sent, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || sent != 0 || coe.Wait != 60*time.Second-time.Since(leased) {
			t.Fatalf("another call during the probe's backoff: %v (wait %v), %d sent; want a *CircuitOpenError with a wait of %v (the lease left), nothing sent",
				err, coe, sent, 60*time.Second-time.Since(leased))
		}
		if st := g.Inspect(ec2Subnets).Breaker.State; st != state.HalfOpen {
			t.Fatalf("breaker %v during the probe's backoff, want half-open", st)
		}
		if err := <-probed; err != nil {
			t.Fatalf("the probe: %v; want its retry's success", err)
		}
		if err := Do(context.Background(), ec2Subnets, always(&sent, nil), WithGovernor(g)); err != nil || sent != 1 {
			t.Fatalf("a call after the probe's success: %v, %d sent; want it sent", err, sent)
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
			Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
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

// A call an open breaker refuses says why the breaker opened, in its
// error and in the ledger's reason: calls gave up after repeated
// throttling, calls failed after repeated errors, or the scope was found
// dead (every answer throttling, or every answer failing, for
// breaker_dead_seconds). The message starts the same whatever the reason.
func TestCircuitOpenErrorSaysWhyTheBreakerOpened(t *testing.T) {
	once := WithPolicy(RetryPolicy{MaxAttempts: 1})
	for _, c := range []struct {
		reason string
		open   func(g *Governor) // opens iamUsers's breaker
		says   string
	}{
		{"throttling", func(g *Governor) {
			for range 5 {
				Do(context.Background(), iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g), once)
			}
		}, " after repeated throttling; retry in "},
		{"errors", func(g *Governor) {
			for range 5 {
				Do(context.Background(), iamUsers, func(context.Context) error { return transientErr() }, WithGovernor(g), once)
			}
		}, " after repeated errors; retry in "},
		{"throttled for good", func(g *Governor) {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					Do(context.Background(), iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g))
				})
			}
			wg.Wait()
		}, ": throttled for good; retry in "},
		{"down", func(g *Governor) {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					Do(context.Background(), iamUsers, func(context.Context) error { return transientErr() }, WithGovernor(g))
				})
			}
			wg.Wait()
		}, ": down; retry in "},
	} {
		t.Run(c.reason, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				c.open(g)
				if s := g.Inspect(iamUsers); s.Breaker.State != state.Open || s.OpenReason != c.reason {
					t.Fatalf("setup: breaker %v, opened for %q; want open for %q", s.Breaker.State, s.OpenReason, c.reason)
				}
				ctx, ledger := WithLedger(context.Background(), "iam")
				err := Do(ctx, iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
				if r, ok := openReason(err); !ok || r != c.reason {
					t.Fatalf("the call after: %T %v (reason %q), want a *CircuitOpenError for %q", err, err, r, c.reason)
				}
				prefix := "circuit open for " + iamUsers.String()
				if msg := err.Error(); msg[:min(len(prefix), len(msg))] != prefix || !strings.Contains(msg, prefix+c.says) {
					t.Fatalf("message %q, want it to start %q", msg, prefix+c.says)
				}
				if r := ledger.Reasons(); len(r) != 1 || r[0] != err.Error() {
					t.Fatalf("the ledger's reasons %q, want the error's message", r)
				}
				gd, _ := g.Begin(context.Background(), iamUsers)
				if err := gd.TryEnter(); func() bool { r, ok := openReason(err); return !ok || r != c.reason }() {
					t.Fatalf("TryEnter: %v, want a *CircuitOpenError for %q", err, c.reason)
				}
				gd.End(nil)
			})
		})
	}
}

// openReason returns the Reason of the *CircuitOpenError err is.
func openReason(err error) (string, bool) {
	var coe *CircuitOpenError
	if !errors.As(err, &coe) {
		return "", false
	}
	return coe.Reason, true
}

// A breaker opened where this process did not see why (one shared
// through a state store) says only that it is open.
func TestCircuitOpenErrorMessages(t *testing.T) {
	for reason, want := range map[string]string{
		"":                   "circuit open for aws/123456789012/*/iam/ListUsers; retry in 42s",
		"throttling":         "circuit open for aws/123456789012/*/iam/ListUsers after repeated throttling; retry in 42s",
		"errors":             "circuit open for aws/123456789012/*/iam/ListUsers after repeated errors; retry in 42s",
		"throttled for good": "circuit open for aws/123456789012/*/iam/ListUsers: throttled for good; retry in 42s",
		"down":               "circuit open for aws/123456789012/*/iam/ListUsers: down; retry in 42s",
	} {
		if got := (&CircuitOpenError{Scope: iamUsers, Wait: 41500 * time.Millisecond, Reason: reason}).Error(); got != want {
			t.Errorf("reason %q: %q, want %q", reason, got, want)
		}
	}
}
