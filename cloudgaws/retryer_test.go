package cloudgaws

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// The retryer Install sets is the SDK's standard one by default, the
// adaptive one in adaptive mode, with max retries + 1 attempts, wrapped
// with the governor's veto.
func TestRetryerKinds(t *testing.T) {
	for _, tc := range []struct {
		opts     []Option
		prepare  func(*aws.Config)
		adaptive bool
		attempts int
	}{
		{nil, nil, false, 11},
		{[]Option{WithRetryMode(aws.RetryModeAdaptive)}, nil, true, 11},
		{[]Option{WithRetryMode(aws.RetryModeStandard)}, nil, false, 11},
		{nil, func(c *aws.Config) { c.RetryMode = aws.RetryModeAdaptive }, true, 11},
		{[]Option{WithMaxRetries(3)}, nil, false, 4},
		{[]Option{WithConfig(Config{RetryMode: aws.RetryModeStandard, MaxRetries: new(int)})}, nil, false, 1},
	} {
		cfg := aws.Config{}
		if tc.prepare != nil {
			tc.prepare(&cfg)
		}
		if err := Install(&cfg, "*", tc.opts...); err != nil {
			t.Fatal(err)
		}
		r, ok := cfg.Retryer().(*retryer)
		if !ok {
			t.Fatalf("retryer %T", cfg.Retryer())
		}
		_, isAdaptive := r.RetryerV2.(*retry.AdaptiveMode)
		_, isStandard := r.RetryerV2.(*retry.Standard)
		if isAdaptive != tc.adaptive || isStandard == tc.adaptive {
			t.Fatalf("%+v: base retryer %T", tc, r.RetryerV2)
		}
		if r.MaxAttempts() != tc.attempts {
			t.Fatalf("%+v: %d attempts", tc, r.MaxAttempts())
		}
		if want := map[bool]aws.RetryMode{true: aws.RetryModeAdaptive, false: aws.RetryModeStandard}[tc.adaptive]; cfg.RetryMode != want {
			t.Fatalf("%+v: cfg.RetryMode %q, want %q", tc, cfg.RetryMode, want)
		}
	}
}

// Reinstalling without options keeps the earlier installation's retry
// settings and base retryer, and replaces its middleware.
func TestReinstallKeepsSettings(t *testing.T) {
	cfg := aws.Config{}
	base := func() aws.Retryer { return retry.NewStandard() }
	if err := Install(&cfg, "*", WithBaseRetryer(base), WithMaxRetries(5)); err != nil {
		t.Fatal(err)
	}
	if err := Install(&cfg, "111122223333"); err != nil {
		t.Fatal(err)
	}
	r := cfg.Retryer().(*retryer)
	if r.inst.account != "111122223333" || r.MaxAttempts() != 6 {
		t.Fatalf("account %s, %d attempts", r.inst.account, r.MaxAttempts())
	}
	if len(cfg.APIOptions) != 1 {
		t.Fatalf("%d APIOptions", len(cfg.APIOptions))
	}
	// A ctx without a call's state: the retryer is the base one.
	if _, err := r.GetRetryToken(context.Background(), &ThrottlingError{Err: context.Canceled}); err != nil {
		t.Fatal(err)
	}
	if r.IsErrorRetryable(&ThrottlingError{Err: context.Canceled}) || r.IsErrorRetryable(&notRetryable{err: context.Canceled}) {
		t.Fatal("the governor's own errors are retryable")
	}
}
