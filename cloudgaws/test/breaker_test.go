package test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Five calls that give up after their retries open the scope's breaker;
// the next call fails at once with an error that is both the core's
// CircuitOpenError and a smithy API error coded Throttling, and sends
// nothing. The rejection is counted and goes to the ledger as skipped.
func TestBreakerOpensAfterGiveUps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(1))
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "ec2 vpcs")
		client := ec2.NewFromConfig(cfg)

		for i := range 5 {
			err := describeVpcs(ctx, client)
			var coe *resilience.CircuitOpenError
			if err == nil || errors.As(err, &coe) {
				t.Fatalf("call %d: err = %v, want the provider's throttling", i+1, err)
			}
		}
		if got := f.count("DescribeVpcs"); got != 10 {
			t.Fatalf("sent %d requests for 5 calls of 2 attempts", got)
		}

		err := describeVpcs(ctx, client)
		if got := f.count("DescribeVpcs"); got != 10 {
			t.Fatalf("the call after the breaker opened sent a request (%d in all)", got)
		}
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("err = %v, want a *resilience.CircuitOpenError", err)
		}
		if got := coe.Scope.String(); got != ec2Key+"/DescribeVpcs" {
			t.Fatalf("breaker scope %s, want the operation's", got)
		}
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "Throttling" || apiErr.ErrorFault() != smithy.FaultClient {
			t.Fatalf("err = %v: want a smithy.APIError with code Throttling", err)
		}
		var te *cloudgaws.ThrottlingError
		if !errors.As(err, &te) || te.RetryAfter() <= 0 {
			t.Fatalf("err = %v: want a *cloudgaws.ThrottlingError with the breaker's wait", err)
		}
		var oe *smithy.OperationError
		if !errors.As(err, &oe) || oe.Operation() != "DescribeVpcs" {
			t.Fatalf("err = %v: want the SDK's operation error around it", err)
		}
		if !strings.Contains(err.Error(), "circuit open for "+ec2Key+"/DescribeVpcs after repeated throttling") {
			t.Fatalf("message %q", err.Error())
		}
		if resilience.Classify(err) != resilience.Throttled {
			t.Fatalf("classified %v", resilience.Classify(err))
		}

		st := scopeStats(g, stats, ec2Key)
		if st.Calls != 5 || st.Rejected != 1 || st.BreakerTrips != 1 || st.GaveUp != 5 || st.Throttled != 10 || st.Retries != 5 {
			t.Fatalf("stats = %+v", st)
		}
		gaveUp, skipped := ledger.Counts()
		if gaveUp != 5 || skipped != 1 || !ledger.Degraded() {
			t.Fatalf("ledger gave up %d, skipped %d, degraded %v", gaveUp, skipped, ledger.Degraded())
		}
		if d := ledger.Describe(); !strings.HasPrefix(d, "throttled: 5 call(s) gave up after retries, 1 call(s) skipped (circuit open)") {
			t.Fatalf("ledger message %q", d)
		}
		if bs, ok := g.Summary(nil).Breakers[mustScope(ec2Key+"/DescribeVpcs")]; !ok || bs.State != state.Open {
			t.Fatalf("breakers = %+v", g.Summary(nil).Breakers)
		}
	})
}

// EC2 throttles each API action separately, so its breakers are per
// operation: a DescribeSubnets whose breaker is open does not block
// DescribeVpcs in the same account and region.
func TestPerOperationBreakersEC2(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeSubnets", ec2Throttle)
		cfg, _ := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(0))
		client := ec2.NewFromConfig(cfg)
		ctx := context.Background()
		for range 6 {
			_, _ = client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		}
		if got := f.count("DescribeSubnets"); got != 5 {
			t.Fatalf("DescribeSubnets sent %d times; the breaker should have stopped the 6th", got)
		}
		_, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("DescribeSubnets: %v, want its breaker open", err)
		}
		if err := describeVpcs(ctx, client); err != nil {
			t.Fatalf("DescribeVpcs blocked by DescribeSubnets' breaker: %v", err)
		}
		if got := f.count("DescribeVpcs"); got != 1 {
			t.Fatalf("DescribeVpcs sent %d times", got)
		}
	})
}

// With a retry budget of 1 the SDK's loop is cut after 1 + 2 free + 1
// budgeted attempts, well before its 11: the error is the core's
// RetryBudgetExhaustedError (wrapping the provider's) and a smithy API
// error coded Throttling. The give-up is recorded without a breaker
// failure.
func TestRetryBudgetCutsTheSDKLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: ptr(1)}})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "vpcs")
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))

		if got := f.count("DescribeVpcs"); got != 4 {
			t.Fatalf("sent %d times, want 4 (1 + 2 free retries + 1 budgeted)", got)
		}
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) {
			t.Fatalf("err = %v, want a *resilience.RetryBudgetExhaustedError", err)
		}
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "Throttling" {
			t.Fatalf("err = %v, want a smithy.APIError with code Throttling first", err)
		}
		var provider smithy.APIError
		if !errors.As(rbe.Err, &provider) || provider.ErrorCode() != "RequestLimitExceeded" {
			t.Fatalf("the budget error wraps %v, want the provider's RequestLimitExceeded", rbe.Err)
		}
		var maxErr *retry.MaxAttemptsError
		if errors.As(err, &maxErr) {
			t.Fatalf("err = %v: the SDK ran out of attempts instead of the budget ending it", err)
		}
		if left := g.Inspect(vpcsScope).RetryBudget; left >= 1 {
			t.Fatalf("budget left %v", left)
		}
		st := scopeStats(g, stats, ec2Key)
		if st.Calls != 1 || st.Throttled != 4 || st.Retries != 3 || st.GaveUp != 1 || st.BreakerTrips != 0 {
			t.Fatalf("stats = %+v", st)
		}
		if _, ok := g.Summary(nil).Breakers[mustScope(ec2Key+"/DescribeVpcs")]; ok {
			t.Fatalf("a budget give-up counted toward the breaker: %+v", g.Summary(nil).Breakers)
		}
		if g, _ := ledger.Counts(); g != 1 {
			t.Fatalf("ledger gave up %d", g)
		}

		// Every later call of the budget's provider gets its two free
		// retries, then stops: 3 attempts.
		f.always("DescribeSubnets", ec2Throttle)
		_, err = ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		if got := f.count("DescribeSubnets"); got != 3 || !errors.As(err, &rbe) {
			t.Fatalf("with the budget empty: sent %d times, err %v", got, err)
		}
	})
}

// A final transient error counts toward the breaker without a give-up; a
// FATAL provider answer (403 UnauthorizedOperation) proves the service
// reachable and resets the failure count.
func TestFinalOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(2))
		ctx, stats := resilience.WithStats(context.Background())
		client := ec2.NewFromConfig(cfg)
		breaker := func() state.BreakerSnapshot { return g.Summary(nil).Breakers[mustScope(ec2Key+"/DescribeVpcs")] }

		f.always("DescribeVpcs", ec2Internal)
		for range 4 {
			_ = describeVpcs(ctx, client)
		}
		st := scopeStats(g, stats, ec2Key)
		if st.TransientErrors != 12 || st.Retries != 8 || st.GaveUp != 0 || st.Throttled != 0 {
			t.Fatalf("after 4 transient failures: stats = %+v", st)
		}
		if b := breaker(); b.Failures != 4 || b.State != state.Closed {
			t.Fatalf("breaker = %+v, want 4 failures", b)
		}

		f.always("DescribeVpcs", ec2Unauthorized)
		err := describeVpcs(ctx, client)
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "UnauthorizedOperation" {
			t.Fatalf("err = %v", err)
		}
		if b, ok := g.Summary(nil).Breakers[mustScope(ec2Key+"/DescribeVpcs")]; ok {
			t.Fatalf("a FATAL answer left the breaker at %+v", b)
		}

		f.always("DescribeVpcs", ec2Internal)
		for range 4 {
			_ = describeVpcs(ctx, client)
		}
		if b := breaker(); b.State != state.Closed {
			t.Fatalf("breaker %+v after 4 more failures", b)
		}
		before := f.count("DescribeVpcs")
		_ = describeVpcs(ctx, client) // the 5th failure in a row
		if f.count("DescribeVpcs") != before+3 {
			t.Fatal("the 5th call was not sent")
		}
		if b := breaker(); b.State != state.Open {
			t.Fatalf("breaker %+v after 5 transient failures in a row", b)
		}
	})
}
