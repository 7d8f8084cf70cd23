package test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// An operation the service throttles for good is dead, and costs a scan
// seconds: sixteen concurrent DescribeVpcs at the defaults (11 attempts
// each in the SDK's standard mode, the core's breaker, budget and rates)
// all end when the breaker opens, within its dead time, each lost call in
// the ledger once; once the breaker opens, the retries of the calls
// already in the SDK's loop stop, those asleep in its backoff at once: the
// fake gets no request after it. (Each call spending its retries instead took minutes,
// and the SDK's loops went on sending after the breaker opened.)
func TestDeadOperationEndsInSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		var mu sync.Mutex
		var opened []time.Time
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.BreakerChange && e.To == state.Open {
				mu.Lock()
				opened = append(opened, e.Time)
				mu.Unlock()
			}
		})))
		if err != nil {
			t.Fatal(err)
		}
		cfg := awsConfig(f, nil)
		if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard)); err != nil {
			t.Fatal(err)
		}
		client := ec2.NewFromConfig(cfg)
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "ec2 vpcs")

		const calls = 16
		start := time.Now()
		var wg sync.WaitGroup
		ended := make([]time.Duration, calls)
		errs := make([]error, calls)
		for i := range calls {
			wg.Go(func() {
				errs[i] = describeVpcs(ctx, client)
				ended[i] = time.Since(start)
			})
		}
		wg.Wait()

		last := time.Duration(0)
		for i, err := range errs {
			if err == nil {
				t.Fatalf("call %d succeeded against a dead operation", i)
			}
			if resilience.Classify(err) != resilience.Throttled {
				t.Errorf("call %d: %v classifies as %v", i, err, resilience.Classify(err))
			}
			last = max(last, ended[i])
		}
		mu.Lock()
		defer mu.Unlock()
		if len(opened) != 1 {
			t.Fatalf("the breaker opened %d times, want once", len(opened))
		}
		// The calls asleep in the SDK's backoff when the breaker opened
		// were woken by it: none ended later (no virtual time passes in
		// between).
		if at := opened[0].Sub(start); last != at {
			t.Errorf("the last call ended at %v, the breaker opened at %v", last, at)
		}
		sent := f.sentAt("DescribeVpcs")
		after := 0
		for _, at := range sent {
			if at.After(opened[0]) {
				after++
			}
		}
		if after != 0 {
			t.Errorf("%d of %d requests were sent after the breaker opened at %v", after, len(sent), opened[0].Sub(start))
		}
		if len(sent) >= calls*11 {
			t.Errorf("%d requests: the calls spent all their attempts", len(sent))
		}

		// Every call lost once: gave up (sent, then stopped by the breaker
		// or its attempts) or skipped (refused before sending).
		tot := g.Summary(stats).Totals
		gaveUp, skipped := ledger.Counts()
		if tot.GaveUp+tot.Rejected != calls || gaveUp+skipped != calls || int64(gaveUp) != tot.GaveUp {
			t.Errorf("lost: stats gave up %d + skipped %d, ledger %d + %d; want %d in all (ledger %q)",
				tot.GaveUp, tot.Rejected, gaveUp, skipped, calls, ledger.Describe())
		}
		if tot.Lost() != calls || ledger.Lost() != calls {
			t.Errorf("lost %d in the stats, %d in the ledger; want %d, each once (ledger %q)", tot.Lost(), ledger.Lost(), calls, ledger.Describe())
		}
		if tot.Calls+tot.Rejected != calls {
			t.Errorf("stats count %d calls and %d rejected for %d calls", tot.Calls, tot.Rejected, calls)
		}

		// The next call sends nothing.
		err = describeVpcs(context.Background(), client)
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || len(f.sentAt("DescribeVpcs")) != len(sent) {
			t.Fatalf("after the trip: %v", err)
		}
		t.Logf("%d calls ended by %v after %d requests; the breaker opened at %v", calls, last, len(sent), opened[0].Sub(start))
	})
}

// A call asleep in the SDK's backoff when its scope's breaker opens ends
// then, not when the backoff would have: its retry is refused, as a retry
// the breaker refuses after the sleep is, and sends nothing.
func TestBreakerOpeningEndsTheSDKBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		slow, g := governed(t, f, resilience.Config{}, cloudgaws.WithBaseRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.RateLimiter = ratelimit.None
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 20 * time.Second, nil })
			})
		}))
		once, _ := governedWith(t, f, g)
		once.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
		ctx, ledger := resilience.WithLedger(context.Background(), "ec2 vpcs")
		start := time.Now()
		var at time.Duration
		done := make(chan error)
		go func() {
			err := describeVpcs(ctx, ec2.NewFromConfig(slow))
			at = time.Since(start)
			done <- err
		}()
		synctest.Wait() // throttled once, asleep in the SDK's 20 s backoff
		time.Sleep(time.Second)
		others := ec2.NewFromConfig(once)
		for range 5 {
			_ = describeVpcs(context.Background(), others) // each gives up: the breaker opens
		}
		opened := time.Since(start)
		if s := g.Inspect(mustScope(ec2Key + "/DescribeVpcs")).Breaker.State; s != state.Open {
			t.Fatalf("the breaker is %v, want open", s)
		}
		err := <-done
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || at != opened {
			t.Fatalf("the call ended at %v with %v; the breaker opened at %v: want a CircuitOpenError then", at, err, opened)
		}
		if n := f.count("DescribeVpcs"); n != 6 {
			t.Fatalf("%d requests, want 6 (the call's first, and the five that opened the breaker)", n)
		}
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
			t.Fatalf("ledger: %d gave up, %d skipped; want 1, 0 (%s)", gu, sk, ledger.Describe())
		}
	})
}

// endlessContext can be cancelled, but never is: a context derived from
// it (not a type the context package knows) that is never cancelled
// leaves a goroutine behind, blocked on both, which the bubble reports.
type endlessContext struct {
	context.Context
	done chan struct{}
}

func (c endlessContext) Done() <-chan struct{} { return c.done }

// A call whose SDK slept before a retry leaves nothing behind once it
// returns: the context its sleep watched is cancelled with the call.
func TestAWatchedSleepLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, reply{})
		cfg, _ := governed(t, f, resilience.Config{})
		ctx := endlessContext{context.Background(), make(chan struct{})}
		if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil || f.count("DescribeVpcs") != 2 {
			t.Fatalf("%v after %d requests, want a success after 2", err, f.count("DescribeVpcs"))
		}
	})
}

// panickyRetryer panics where the SDK asks it for the backoff, after the
// governor's retryer began to watch the sleep.
type panickyRetryer struct{ aws.Retryer }

func (panickyRetryer) RetryDelay(int, error) (time.Duration, error) { panic("RetryDelay") }

// A panic out of the SDK's retry loop leaves no watch of its sleep behind.
func TestAPanicInTheSDKsLoopLeavesNoWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		cfg, _ := governed(t, f, resilience.Config{}, cloudgaws.WithBaseRetryer(func() aws.Retryer {
			return panickyRetryer{retry.NewStandard()}
		}))
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the retryer's panic did not reach the caller")
				}
			}()
			_ = describeVpcs(context.Background(), ec2.NewFromConfig(cfg))
		}()
		// The bubble fails the test if the watch is left blocked.
	})
}
