package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// typedNilChain is an error whose chain holds a nil *smithy.OperationError,
// whose Unwrap reads its receiver: what an application's helper returns
// when it wraps the error errors.As did not find (var oe
// *smithy.OperationError; errors.As(err, &oe); return fmt.Errorf("...: %w",
// oe)).
func typedNilChain(what string) error {
	return fmt.Errorf("%s: %w", what, (*smithy.OperationError)(nil))
}

// A governed call reads the errors of its stack outside the classifier
// too (whether the SDK's loop ended on its attempts, on a cut sleep, on a
// refused retry token). An error whose chain holds a typed nil that
// panics as it is unwrapped must not crash cloudgaws's middleware or
// retryer: the call ends, lost as errored (the error, local and
// unreadable, ended it) or as failed (the refused retry's 500 did), not
// as lost to a panic. The SDK's client then panics on it all
// the same, as it reads the call's error (invokeOperation's errors.As for
// its span), which no middleware can prevent: the test recovers that
// panic.
func TestAnErrorWithATypedNilInItsChainEndsTheCall(t *testing.T) {
	helper := func(s *middleware.Stack) error {
		return s.Build.Add(middleware.BuildMiddlewareFunc("appHelper", func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (
			middleware.BuildOutput, middleware.Metadata, error,
		) {
			return middleware.BuildOutput{}, middleware.Metadata{}, typedNilChain("app helper")
		}), middleware.After)
	}
	for name, tc := range map[string]struct {
		opts    []cloudgaws.Option
		api     func(*middleware.Stack) error
		sent    int
		errored int64 // else lost as failed, after the 500 the retry was refused for
	}{
		// An application's middleware returns it: nothing is sent.
		"from a middleware": {api: helper, errored: 1},
		// A caller's base retryer, which retries every error without
		// reading it, refuses a retry token with it.
		"from the base retryer": {opts: []cloudgaws.Option{cloudgaws.WithBaseRetryer(func() aws.Retryer {
			return nilRefusalRetryer{retryAll{quickRetryer().(aws.RetryerV2)}, typedNilChain("no retry token")}
		})}, sent: 1},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			f.always("DescribeVpcs", ec2Internal)
			cfg, g := tcpGoverned(t, f, fastEC2, tc.opts...)
			if tc.api != nil {
				cfg.APIOptions = append(cfg.APIOptions, tc.api)
			}
			ctx, st := resilience.WithStats(context.Background())
			func() {
				defer func() { _ = recover() }() // the SDK's, after the call ended
				_ = describeVpcs(ctx, ec2.NewFromConfig(cfg))
			}()
			if n := f.count("DescribeVpcs"); n != tc.sent {
				t.Errorf("%d requests sent, want %d", n, tc.sent)
			}
			if c := scopeStats(g, st, "aws/"+testAccount+"/us-east-1/ec2"); c.Calls != 1 || c.Lost() != 1 || c.Errored != tc.errored || c.Panicked != 0 {
				t.Errorf("stats %+v, want 1 call lost, %d as errored, none to a panic", c, tc.errored)
			}
		})
	}
}

// The retryer Install sets (cfg.Retryer) answers for an error whose chain
// holds a typed nil that panics as it is unwrapped as its base retryer
// does, without panicking.
func TestTheRetryerReadsAnErrorWithATypedNilInItsChain(t *testing.T) {
	f := newFake(t)
	cfg, _ := tcpGoverned(t, f, fastEC2, cloudgaws.WithBaseRetryer(func() aws.Retryer {
		return retryAll{quickRetryer().(aws.RetryerV2)}
	}))
	r, ok := cfg.Retryer().(aws.RetryerV2)
	if !ok {
		t.Fatalf("cfg.Retryer() is %T, no aws.RetryerV2", cfg.Retryer())
	}
	opErr := typedNilChain("attempt")
	try := func(what string, f func()) {
		t.Helper()
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("%s panicked: %v", what, p)
			}
		}()
		f()
	}
	try("IsErrorRetryable", func() {
		if !r.IsErrorRetryable(opErr) {
			t.Error("IsErrorRetryable = false, want the base retryer's true")
		}
	})
	try("RetryDelay", func() {
		if d, err := r.RetryDelay(1, opErr); err != nil || d != time.Millisecond {
			t.Errorf("RetryDelay = %v, %v, want the base retryer's 1ms", d, err)
		}
	})
}

// nilRefusalRetryer is retryAll refusing every retry token with refusal.
type nilRefusalRetryer struct {
	retryAll
	refusal error
}

func (r nilRefusalRetryer) GetRetryToken(context.Context, error) (func(error) error, error) {
	return nil, r.refusal
}

// A nil *ThrottlingError is a ThrottlingError (its godoc: it reads
// "throttled by the governor", and its RetryableError is false), so the
// retryer Install sets never retries an error that holds one, as it never
// retries the governor's own: not even over a base retryer that retries
// every "Throttling" code (retry.AddWithErrorCodes), which would read the
// nil's ErrorCode.
func TestTheRetryerNeverRetriesANilThrottlingError(t *testing.T) {
	f := newFake(t)
	cfg, _ := tcpGoverned(t, f, fastEC2, cloudgaws.WithBaseRetryer(func() aws.Retryer {
		return retry.AddWithErrorCodes(retry.NewStandard(), "Throttling")
	}))
	err := fmt.Errorf("app: %w", (*cloudgaws.ThrottlingError)(nil))
	if cfg.Retryer().IsErrorRetryable(err) {
		t.Errorf("IsErrorRetryable(%v) = true, want false: a nil *ThrottlingError is the governor's", err)
	}
}
