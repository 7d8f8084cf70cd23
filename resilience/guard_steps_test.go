//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/errread"
)

// TestGuardRetryRefusedByTheBreaker: an SDK's retry after a throttled
// attempt, refused because the breaker opened meanwhile, ends a call that
// was sent: it is a give-up, not a skip, and the error carries the answer.
func TestGuardRetryRefusedByTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "t")
		gd, _ := g.Begin(ctx, ec2Subnets)
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		first := throttle()
		gd.After(first)
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			sdkLoop(context.Background(), g, ec2Subnets, 1, func() error { return throttle() })
		}
		err := gd.Enter(ctx)
		var coe *CircuitOpenError
		if !errors.As(err, &coe) || !errors.Is(err, first) {
			t.Fatalf("retry: %v, want a CircuitOpenError wrapping the last answer", err)
		}
		gd.End(err) // the integration reports the final error: no double count
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
			t.Fatalf("ledger %d gave up, %d skipped; want 1, 0", gu, sk)
		}
		// A probe's retries go through its own half-open breaker.
		time.Sleep(time.Minute)
		probe, _ := g.Begin(context.Background(), ec2Subnets)
		if err := probe.Enter(context.Background()); err != nil {
			t.Fatalf("probe: %v", err)
		}
		probe.Release()
		probe.After(throttle())
		probe.Retry(0)
		if err := probe.Enter(context.Background()); err != nil {
			t.Fatalf("the probe's retry was refused by its own breaker: %v", err)
		}
		probe.After(nil)
		probe.End(nil)
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatalf("breakers %+v after the probe succeeded", b)
		}
	})
}

// A listing's later pages are not checked against the breaker again: a
// listing that is the half-open breaker's probe is not refused on page 2,
// even if other calls reopened the breaker meanwhile.
func TestGuardLaterRequestsAreNotCheckedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gd, _ := g.Begin(context.Background(), ec2Subnets)
		defer gd.End(nil)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		gd.After(nil)
		for range 5 {
			sdkLoop(context.Background(), g, ec2Subnets, 1, func() error { return throttle() })
		}
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatalf("page 2 refused by the breaker: %v", err)
		}
	})
}

// A call made inside another call's attempt, whose context leads back to
// the outer call's guard, never waits for the slot its caller holds.
func TestGuardNestedCallGoesWithoutASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		outer, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := outer.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		attemptCtx := context.WithValue(context.Background(), g, outer)
		inner, _ := g.Begin(attemptCtx, Scope{Provider: "aws", Account: "123456789012", Service: "sts"})
		done := make(chan error, 1)
		go func() { done <- inner.Enter(attemptCtx) }()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("the nested call waits for the slot its caller holds")
		}
		inner.After(nil)
		inner.End(nil)
		// Without the outer guard in its context a call waits in line.
		stranger, _ := g.Begin(context.Background(), iamUsers)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := stranger.Enter(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a call of the same account went past the cap: %v", err)
		}
		outer.End(nil)
		if s := g.Inspect(ec2Vpcs); s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("%d in flight, %d waiting", s.InFlight, s.Waiting)
		}
	})
}

// countedErr counts how often the classifier reads it.
type countedErr struct{ reads *atomic.Int64 }

func (e countedErr) Error() string { return "Throttling: Rate exceeded" }

var countingReaderOnce atomic.Bool

// TestEachAttemptIsClassifiedOnce: a throttled attempt that ends a call
// (throttle, give-up, ledger, last error) walks its error chain once.
func TestEachAttemptIsClassifiedOnce(t *testing.T) {
	if countingReaderOnce.CompareAndSwap(false, true) {
		errread.Register(func(err error) (errread.Details, bool) {
			ce, ok := err.(countedErr)
			if !ok {
				return errread.Details{}, false
			}
			ce.reads.Add(1)
			return errread.Details{Code: "Throttling", Status: 400}, true
		})
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, ledger := WithLedger(context.Background(), "t")
		ctx, stats := WithStats(ctx)
		var reads atomic.Int64
		err := Do(ctx, iamUsers, func(context.Context) error { return countedErr{&reads} },
			WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 3}))
		if !errors.As(err, new(countedErr)) {
			t.Fatalf("err %v", err)
		}
		if n := reads.Load(); n != 3 {
			t.Fatalf("3 attempts read the error chain %d times, want 3", n)
		}
		if s := g.Summary(stats).Scopes[sk("aws/123456789012/*/iam")]; s.Throttled != 3 || s.GaveUp != 1 || s.LastError != "throttled: Throttling: Rate exceeded" {
			t.Fatalf("stats %+v", s)
		}
		if gu, _ := ledger.Counts(); gu != 1 || ledger.Reasons()[0] != "aws/123456789012/*/iam/ListUsers: throttled: Throttling: Rate exceeded" {
			t.Fatalf("ledger %q", ledger.Reasons())
		}
	})
}

// Credentials fetched through a chain of roles: a call nested two levels
// deep does not wait for the slot its caller's caller holds.
func TestGuardNestedTwoLevelsDeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		outer, _ := g.Begin(context.Background(), ec2Vpcs)
		outer.Enter(context.Background())
		ctx1 := context.WithValue(context.Background(), g, outer)
		mid, _ := g.Begin(ctx1, Scope{Provider: "aws", Account: "123456789012", Service: "sts"})
		if err := mid.Enter(ctx1); err != nil {
			t.Fatal(err)
		}
		ctx2 := context.WithValue(ctx1, g, mid) // mid holds no slot
		inner, _ := g.Begin(ctx2, Scope{Provider: "aws", Account: "123456789012", Service: "sts"})
		done := make(chan error, 1)
		go func() { done <- inner.Enter(ctx2) }()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("the call two levels deep waits for its grandparent's slot")
		}
		inner.End(nil)
		mid.End(nil)
		outer.End(nil)
	})
}

// A call that holds its slot across requests (a listing) is one call: its
// success is recorded when it ends, so a probe listing holds the breaker's
// lease through its pages and other calls stay rejected meanwhile.
func TestGuardProbeListingHoldsTheLeaseUntilItEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		for range 5 {
			sdkLoop(context.Background(), g, ec2Subnets, 1, func() error { return throttle() })
		}
		time.Sleep(time.Minute)
		listing, _ := g.Begin(context.Background(), ec2Subnets)
		if err := listing.Enter(context.Background()); err != nil {
			t.Fatalf("probe: %v", err)
		}
		listing.After(nil) // page 1
		other, _ := g.Begin(context.Background(), ec2Subnets)
		var coe *CircuitOpenError
		if err := other.Enter(context.Background()); !errors.As(err, &coe) {
			t.Fatalf("a call during the probe listing: %v, want rejected", err)
		}
		other.End(nil)
		listing.Enter(context.Background()) // page 2, not checked again
		listing.After(nil)
		listing.End(nil)
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatalf("breakers %+v after the probe listing ended", b)
		}
	})
}

// An SDK may retry an answer the governor reads as final (a connection
// closed before any answer): the retry is counted and paid from the budget,
// and nothing is learned from the answer.
func TestGuardSDKRetryOfAFinalAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}})
		ctx, stats := WithStats(context.Background())
		gd, _ := g.Begin(ctx, iamUsers, WithPolicy(RetryPolicy{MaxAttempts: 1 << 30}))
		gd.Enter(ctx)
		local := errors.New("connection closed")
		for i := range 2 {
			gd.After(local)
			if _, err := gd.Retry(0); err != nil {
				t.Fatalf("free retry %d: %v", i+1, err)
			}
		}
		gd.After(local)
		var rbe *RetryBudgetExhaustedError
		if _, err := gd.Retry(0); !errors.As(err, &rbe) {
			t.Fatalf("third retry with an empty budget: %v", err)
		}
		gd.End(rbe)
		s := g.Summary(stats).Scopes[sk("aws/123456789012/*/iam")]
		if s.Retries != 2 || s.Throttled != 0 || s.TransientErrors != 0 || s.GaveUp != 0 {
			t.Fatalf("stats %+v", s)
		}
		if len(g.Summary(nil).Breakers) != 0 {
			t.Fatal("a final answer counted toward the breaker")
		}
		// Do itself never retries a final answer.
		n := 0
		Do(ctx, iamUsers, always(&n, local), WithGovernor(g))
		if n != 1 {
			t.Fatalf("Do retried a local error %d times", n-1)
		}
	})
}

// A retry the SDK sent after Retry allowed it, whose answer only End sees,
// is counted.
func TestGuardEndCountsARetrySent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		gd, _ := g.Begin(ctx, iamUsers)
		gd.Enter(ctx)
		gd.After(throttle())
		gd.Retry(0)
		gd.End(nil)
		if s := g.Summary(stats).Scopes[sk("aws/123456789012/*/iam")]; s.Retries != 1 || s.Throttled != 1 || s.GaveUp != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}
