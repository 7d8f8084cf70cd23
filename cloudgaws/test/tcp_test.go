package test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// The same behaviours over real sockets: the fake endpoint on a loopback
// httptest server, the SDK's own HTTP client, the wall clock. These run
// outside a synctest bubble (sockets cannot be inside one), so they keep
// their waits short: fast leaf rates, and a quick base retryer where the
// SDK's throttle backoff (1 s doubling) would only add seconds.

// tcpGoverned returns a config for a loopback server of f, installed with a
// fresh governor at rc.
func tcpGoverned(t *testing.T, f *fakeAWS, rc resilience.Config, opts ...cloudgaws.Option) (aws.Config, *resilience.Governor) {
	t.Helper()
	g, err := resilience.NewGovernor(rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loopbackConfig(t, f)
	if err := cloudgaws.Install(&cfg, testAccount, append([]cloudgaws.Option{cloudgaws.WithGovernor(g)}, opts...)...); err != nil {
		t.Fatal(err)
	}
	return cfg, g
}

// quickRetryer is the SDK's standard retryer with a 1 ms backoff.
func quickRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	})
}

var fastEC2 = resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
	"ec2": {MaxRPS: 1000, Burst: 1000},
}}}

// The adaptive retry mode (aws.retry_mode: adaptive) with max_retries 3:
// a permanently throttled operation is sent exactly four times over the
// wire.
func TestAdaptiveModeOverTCP(t *testing.T) {
	f := newFake(t)
	f.always("DescribeVpcs", ec2Throttle)
	cfg, g := tcpGoverned(t, f, fastEC2, cloudgaws.WithMaxRetries(3), cloudgaws.WithRetryMode(aws.RetryModeAdaptive))
	if cfg.RetryMode != aws.RetryModeAdaptive {
		t.Fatalf("retry mode %q, want adaptive", cfg.RetryMode)
	}
	ctx, stats := resilience.WithStats(context.Background())
	err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
	var maxErr *retry.MaxAttemptsError
	if !errors.As(err, &maxErr) || f.count("DescribeVpcs") != 4 {
		t.Fatalf("err = %v, sent %d, want 4 attempts", err, f.count("DescribeVpcs"))
	}
	if st := scopeStats(g, stats, ec2Key); st.Calls != 1 || st.Throttled != 4 || st.Retries != 3 || st.GaveUp != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// Breaker, budget and the three protocols over loopback TCP.
func TestBreakerAndBudgetOverTCP(t *testing.T) {
	f := newFake(t)
	f.always("DescribeSubnets", ec2Throttle)
	f.always("GetCallerIdentity", stsThrottle)
	f.script("GetSecretValue", jsonThrottle, ok)
	rc := fastEC2
	rc.AWS.RetryBudget = ptr(1)
	rc.AWS.BreakerThreshold = 2
	cfg, g := tcpGoverned(t, f, rc, cloudgaws.WithBaseRetryer(quickRetryer), cloudgaws.WithMaxRetries(2))
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "tcp")

	// The budget (1) cuts a throttled call allowed 11 attempts at 1 + 2 + 1.
	_, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.Options) { o.RetryMaxAttempts = 11 })
	var rbe *resilience.RetryBudgetExhaustedError
	if !errors.As(err, &rbe) || f.count("GetCallerIdentity") != 4 {
		t.Fatalf("sts: err = %v, sent %d", err, f.count("GetCallerIdentity"))
	}

	// Two give-ups after 3 attempts (free retries: the empty budget does
	// not stop them) open DescribeSubnets' breaker (threshold 2); the
	// third call sends nothing.
	client := ec2.NewFromConfig(cfg)
	for range 3 {
		_, err = client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	}
	var coe *resilience.CircuitOpenError
	var apiErr smithy.APIError
	if !errors.As(err, &coe) || !errors.As(err, &apiErr) || apiErr.ErrorCode() != "Throttling" {
		t.Fatalf("ec2: err = %v", err)
	}
	if got := f.count("DescribeSubnets"); got != 6 {
		t.Fatalf("DescribeSubnets sent %d, want 2 calls x 3 attempts and nothing for the third", got)
	}
	if err := describeVpcs(ctx, client); err != nil {
		t.Fatalf("DescribeVpcs: %v", err)
	}

	// JSON protocol: one throttle, then success (a free retry).
	if err := getSecret(ctx, secretsmanager.NewFromConfig(cfg)); err != nil || f.count("GetSecretValue") != 2 {
		t.Fatalf("secretsmanager: %v, sent %d", err, f.count("GetSecretValue"))
	}

	if st := scopeStats(g, stats, ec2Key); st.Calls != 3 || st.Throttled != 6 || st.Retries != 4 || st.GaveUp != 2 || st.Rejected != 1 || st.BreakerTrips != 1 {
		t.Fatalf("ec2 stats = %+v", st)
	}
	if gaveUp, skipped := ledger.Counts(); gaveUp != 3 || skipped != 1 || !ledger.Degraded() {
		t.Fatalf("ledger %d gave up, %d skipped", gaveUp, skipped)
	}
}

// Sixty-four goroutines over real sockets hold the cap.
func TestConcurrencyCapOverTCP(t *testing.T) {
	f := newFake(t)
	f.hold = func(*http.Request) { time.Sleep(5 * time.Millisecond) }
	rc := fastEC2
	rc.AWS.MaxConcurrency = 4
	cfg, _ := tcpGoverned(t, f, rc)
	client := ec2.NewFromConfig(cfg)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := describeVpcs(context.Background(), client); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := f.maxInFlight(); got > 4 || got < 2 {
		t.Fatalf("max in flight %d, want at most the cap of 4", got)
	}
	if f.count("DescribeVpcs") != 64 {
		t.Fatalf("sent %d", f.count("DescribeVpcs"))
	}
}
