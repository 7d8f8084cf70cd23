package test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// refusedShape checks that err is a refusal as a scheduler reads it: a
// *resilience.WouldWaitError matching check, inside a *ThrottlingError
// (a smithy API error coded Throttling, which no retryer retries), that
// classifies as Throttled and says when the scope can go.
func refusedShape(t *testing.T, err, check error, retryAfter time.Duration) *resilience.WouldWaitError {
	t.Helper()
	var ww *resilience.WouldWaitError
	if !errors.As(err, &ww) || !errors.Is(err, check) {
		t.Fatalf("err = %v, want a *resilience.WouldWaitError matching %v", err, check)
	}
	var te *cloudgaws.ThrottlingError
	var apiErr smithy.APIError
	if !errors.As(err, &te) || te.RetryableError() || !errors.As(err, &apiErr) || apiErr.ErrorCode() != "Throttling" {
		t.Fatalf("err = %v, want a *cloudgaws.ThrottlingError coded Throttling", err)
	}
	if resilience.Classify(err) != resilience.Throttled {
		t.Fatalf("%v classifies as %v", err, resilience.Classify(err))
	}
	if ra, _ := resilience.RetryAfter(err); ra < retryAfter || te.RetryAfter() != ra {
		t.Fatalf("RetryAfter %v (the error's %v), want at least %v", ra, te.RetryAfter(), retryAfter)
	}
	return ww
}

// lostOnly checks that the run lost want calls of kind, and no other, in
// its stats and its ledger.
func lostOnly(t *testing.T, g *resilience.Governor, stats *resilience.Stats, ledger *resilience.Ledger, kind resilience.Loss, want int) {
	t.Helper()
	tot := g.Summary(stats).Totals
	byKind := map[resilience.Loss]int64{
		resilience.LossGaveUp: tot.GaveUp, resilience.LossSkipped: tot.Rejected, resilience.LossFailed: tot.Failed,
		resilience.LossRefused: tot.Refused, resilience.LossCancelled: tot.Cancelled,
		resilience.LossErrored: tot.Errored, resilience.LossPanicked: tot.Panicked, resilience.LossDenied: tot.Denied,
	}
	if k := resilience.Loss(len(byKind)); !strings.HasPrefix(k.String(), "resilience.Loss(") {
		t.Fatalf("loss %v is not looked at", k)
	}
	for k, n := range byKind {
		w := 0
		if k == kind {
			w = want
		}
		if n != int64(w) || ledger.Count(k) != w {
			t.Errorf("%v: stats %d, ledger %d; want %d (ledger %q)", k, n, ledger.Count(k), w, ledger.Describe())
		}
	}
	if tot.Lost() != int64(want) || ledger.Lost() != want {
		t.Errorf("lost: stats %d, ledger %d; want %d", tot.Lost(), ledger.Lost(), want)
	}
}

// A call whose context carries resilience.WithMaxWait is refused at once,
// before sending, when its scope is paused, over loopback TCP: the
// scheduler gets a throttling error that says when the scope can go, the
// SDK does not retry it, and the run counts one refusal, not a give-up.
// Governor.Delay, on the scope Scope computes, said so beforehand, and
// asking changed nothing.
func TestMaxWaitRefusesAPausedScopeOverTCP(t *testing.T) {
	f := newFake(t)
	f.script("GetSecretValue", tooManyRequests("60"), ok)
	cfg, g := tcpGoverned(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(0))
	client := secretsmanager.NewFromConfig(cfg)
	scope, err := cloudgaws.Scope(cfg, secretsmanager.ServiceID, "GetSecretValue")
	if err != nil || scope.String() != "aws/"+testAccount+"/"+testRegion+"/secretsmanager/GetSecretValue" {
		t.Fatalf("Scope = %v, %v", scope, err)
	}
	if d, why := g.Delay(scope); d != 0 || why != nil {
		t.Fatalf("before any call: Delay = %v, %v", d, why)
	}
	_ = getSecret(context.Background(), client) // 429, Retry-After: 60
	d, why := g.Delay(scope)
	if !errors.Is(why, resilience.ErrNoToken) || d < 55*time.Second {
		t.Fatalf("paused: Delay = %v, %v", d, why)
	}

	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "secrets")
	start := time.Now()
	err = getSecret(resilience.WithMaxWait(ctx, time.Second), client)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
	if n := f.count("GetSecretValue"); n != 1 {
		t.Fatalf("sent %d requests, want the first call's alone", n)
	}
	refusedShape(t, err, resilience.ErrNoToken, 55*time.Second)
	lostOnly(t, g, stats, ledger, resilience.LossRefused, 1)
	if d2, why2 := g.Delay(scope); why2 != why || d2 > d {
		t.Fatalf("after the refusal: Delay = %v, %v", d2, why2)
	}
}

// A call that may not wait is refused at once when its account's
// concurrency cap is full, over loopback TCP; the slot's holder is not
// disturbed.
func TestMaxWaitRefusesAFullBulkheadOverTCP(t *testing.T) {
	f := newFake(t)
	entered, release := make(chan struct{}), make(chan struct{})
	f.hold = func(r *http.Request) {
		if r.Form.Get("Action") == "DescribeVpcs" {
			close(entered)
			<-release
		}
	}
	rc := fastEC2
	rc.AWS.MaxConcurrency = 1
	cfg, g := tcpGoverned(t, f, rc)
	client := ec2.NewFromConfig(cfg)
	var wg sync.WaitGroup
	var once sync.Once
	t.Cleanup(func() { // before the server closes, even when the test fails
		once.Do(func() { close(release) })
		wg.Wait()
	})
	wg.Go(func() {
		if err := describeVpcs(context.Background(), client); err != nil {
			t.Error(err)
		}
	})
	<-entered
	scope, _ := cloudgaws.Scope(cfg, ec2.ServiceID, "DescribeSubnets")
	if d, why := g.Delay(scope); !errors.Is(why, resilience.ErrNoSlot) || d != 0 {
		t.Fatalf("cap full: Delay = %v, %v", d, why)
	}

	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "subnets")
	start := time.Now()
	_, err := client.DescribeSubnets(resilience.WithMaxWait(ctx, 0), &ec2.DescribeSubnetsInput{})
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
	refusedShape(t, err, resilience.ErrNoSlot, 0)
	if n := f.count("DescribeSubnets"); n != 0 {
		t.Fatalf("sent %d DescribeSubnets", n)
	}
	lostOnly(t, g, stats, ledger, resilience.LossRefused, 1)
}

// A throttled answer whose Retry-After is longer than the call may wait
// ends the SDK's loop at once, at the retry it was about to make: one
// request sent, a refusal wrapping the provider's answer, no give-up and
// no breaker failure.
func TestMaxWaitRefusesTheSDKRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("GetSecretValue", tooManyRequests("30"), ok)
		cfg, g := governed(t, f, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "secrets")
		start := time.Now()
		err := getSecret(resilience.WithMaxWait(ctx, time.Second), secretsmanager.NewFromConfig(cfg))
		if took := time.Since(start); took != 0 {
			t.Fatalf("refused after %v, want at once", took)
		}
		if n := f.count("GetSecretValue"); n != 1 {
			t.Fatalf("sent %d requests, want 1", n)
		}
		ww := refusedShape(t, err, resilience.ErrNoToken, 29*time.Second)
		var apiErr smithy.APIError
		if !errors.As(ww.Last, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" {
			t.Fatalf("the refusal wraps %v, want the provider's answer", ww.Last)
		}
		lostOnly(t, g, stats, ledger, resilience.LossRefused, 1)
		if b, ok := g.Summary(nil).Breakers[mustScope("aws/"+testAccount+"/"+testRegion+"/secretsmanager/GetSecretValue")]; ok && b.Failures != 0 {
			t.Fatalf("the refusal counted a breaker failure: %+v", b)
		}
	})
}

// A call its context ends is lost once, as cancelled, wherever it was:
// waiting for a token before its first attempt, in the SDK's backoff
// after a throttle, waiting for the scope's pause before its retry, or
// with its attempt out. The SDK's End does not count it again.
func TestCancelledCallsCountedOnce(t *testing.T) {
	once := func(o *secretsmanager.Options) { o.RetryMaxAttempts = 1 }
	for _, tc := range []struct {
		name  string
		setup func(f *fakeAWS, c *secretsmanager.Client)
		wait  time.Duration // after the call blocked, before the cancel
		sent  int           // requests the call sent
	}{
		{"waiting for a token", func(f *fakeAWS, c *secretsmanager.Client) {
			f.script("GetSecretValue", tooManyRequests("60"), ok)
			_, _ = c.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: ptr("db")}, once) // pauses the scope
		}, 0, 0},
		{"in the SDK's backoff", func(f *fakeAWS, _ *secretsmanager.Client) {
			f.always("GetSecretValue", jsonThrottle) // no hint: the SDK's backoff alone holds the retry
		}, 0, 1},
		{"waiting for the pause before its retry", func(f *fakeAWS, _ *secretsmanager.Client) {
			f.always("GetSecretValue", tooManyRequests("30"))
		}, 5 * time.Second, 1}, // past the SDK's first backoff (at most 1 s)
		{"with its attempt out", func(f *fakeAWS, _ *secretsmanager.Client) {
			f.hold = func(r *http.Request) { <-r.Context().Done() }
		}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				// A leaf fast enough that a retry waits for no token but
				// the pause's.
				cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
					"secretsmanager": {MaxRPS: 1000, Burst: 1000},
				}}})
				client := secretsmanager.NewFromConfig(cfg)
				tc.setup(f, client)
				before := f.count("GetSecretValue")
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "secrets")
				ctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- getSecret(ctx, client) }()
				synctest.Wait()
				time.Sleep(tc.wait)
				synctest.Wait()
				cancelEndsWaitAtOnce(t, done, cancel)
				if n := f.count("GetSecretValue") - before; n != tc.sent {
					t.Fatalf("sent %d, want %d", n, tc.sent)
				}
				lostOnly(t, g, stats, ledger, resilience.LossCancelled, 1)
			})
		})
	}
}

// cancelEndsWaitAtOnce cancels a call that is still waiting (its goroutine
// sends its error on done) and fails the test unless the call had not
// ended before, returns at once after cancel, and returns an error that
// is context.Canceled.
func cancelEndsWaitAtOnce(t *testing.T, done <-chan error, cancel context.CancelFunc) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("the call ended before the cancel: %v", err)
	default:
	}
	cancelled := time.Now()
	cancel()
	err := <-done
	if d := time.Since(cancelled); d != 0 {
		t.Errorf("the call returned %v after its context was cancelled, want at once", d)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
