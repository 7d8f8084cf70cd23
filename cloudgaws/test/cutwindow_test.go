package test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/tracing"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// The breaker may open as the SDK's backoff sleep ends, before its next
// attempt: the SDK then ends its loop with the context's error (its check
// before an attempt, or its adaptive mode's wait for an attempt token),
// not a cancelled request. The retry is refused as after a whole sleep, a
// *resilience.CircuitOpenError, and not reported to the caller as a
// cancellation of a context that is live.

// slowRetryer is the standard retryer with a 20 s backoff and attempts
// attempts.
func slowRetryer(attempts int) cloudgaws.Option {
	return cloudgaws.WithBaseRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 20 * time.Second, nil })
		})
	})
}

// hookTracer runs hook when the SDK starts an attempt's span: after its
// backoff sleep, before the attempt's own check of the context.
type hookTracer struct {
	hook func(ctx context.Context, attempt any)
}

func (h hookTracer) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return h }
func (h hookTracer) StartSpan(ctx context.Context, name string, opts ...tracing.SpanOption) (context.Context, tracing.Span) {
	if name == "Attempt" {
		var o tracing.SpanOptions
		for _, fn := range opts {
			fn(&o)
		}
		h.hook(ctx, o.Properties.Get("operation.attempt"))
	}
	return tracing.NopTracerProvider{}.Tracer("").StartSpan(ctx, name)
}

// The cut comes after the sleep, before the attempt's check of the context.
func TestACutAsTheSDKsSleepEndsRefusesTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		slow, g := governed(t, f, resilience.Config{}, slowRetryer(3))
		once, _ := governedWith(t, f, g)
		once.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
		others := ec2.NewFromConfig(once)
		client := ec2.NewFromConfig(slow, func(o *ec2.Options) {
			o.TracerProvider = hookTracer{hook: func(ctx context.Context, attempt any) {
				if attempt != 2 {
					return
				}
				for range 5 {
					_ = describeVpcs(context.Background(), others) // the breaker opens
				}
				synctest.Wait() // the watch cancels the cut context
			}}
		})
		ctx, ledger := resilience.WithLedger(context.Background(), "t")
		err := describeVpcs(ctx, client)
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || errors.Is(err, context.Canceled) {
			t.Errorf("want a CircuitOpenError (the retry refused); got %v (errors.Is Canceled: %v)", err, errors.Is(err, context.Canceled))
		}
		if ledger.Count(resilience.LossGaveUp) != 1 {
			t.Errorf("ledger: %s, want the call given up once", ledger.Describe())
		}
	})
}

// waitingRetryer is the standard retryer with a client-side wait before
// each retry's send, as the adaptive retryer (cloudgaws' default mode)
// makes after throttling: GetAttemptToken sleeps on the attempt's context.
type waitingRetryer struct {
	*retry.Standard
	n int
}

func (w *waitingRetryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	w.n++
	if w.n > 1 {
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return nil, fmt.Errorf("failed to wait for token to be available, %w", ctx.Err()) // as aws/retry's AdaptiveMode
		}
	}
	return w.Standard.GetAttemptToken(ctx)
}

// The cut comes during the adaptive mode's wait for an attempt token.
func TestACutDuringTheAdaptiveModesTokenWaitRefusesTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		slow, g := governed(t, f, resilience.Config{}, cloudgaws.WithBaseRetryer(func() aws.Retryer {
			return &waitingRetryer{Standard: retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.RateLimiter = ratelimit.None
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Second, nil })
			})}
		}))
		once, _ := governedWith(t, f, g)
		once.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
		start := time.Now()
		done := make(chan error)
		var at time.Duration
		go func() {
			err := describeVpcs(context.Background(), ec2.NewFromConfig(slow))
			at = time.Since(start)
			done <- err
		}()
		time.Sleep(2 * time.Second) // backoff (1 s) over; in the 5 s token wait
		others := ec2.NewFromConfig(once)
		for range 5 {
			_ = describeVpcs(context.Background(), others)
		}
		opened := time.Since(start) // the fifth throttle opened the breaker
		err := <-done
		if at != opened {
			t.Errorf("ended at %v, want %v (the breaker's opening)", at, opened)
		}
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) {
			t.Errorf("want a CircuitOpenError; got %v", err)
		}
	})
}
