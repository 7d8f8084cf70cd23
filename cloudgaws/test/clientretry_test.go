package test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/resilience"
)

// A client's own retry settings over an installed config (the SDK's
// per-client options: RetryMaxAttempts, which the SDK applies with
// retry.AddWithMaxAttempts, or a Retryer wrapping the config's) bound the
// governed call's attempts as they say: a call whose every answer is a
// 500 sends that many attempts, counts each retry once, and is lost once.
func TestAClientsOwnRetrySettingsBoundTheGovernedCall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opt      func(*ec2.Options)
		attempts int
	}{
		{"RetryMaxAttempts", func(o *ec2.Options) { o.RetryMaxAttempts = 2 }, 2},
		{"AddWithMaxAttempts", func(o *ec2.Options) { o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 3) }, 3},
		{"AddWithMaxBackoffDelay", func(o *ec2.Options) {
			o.Retryer = retry.AddWithMaxAttempts(retry.AddWithMaxBackoffDelay(o.Retryer, 100*time.Millisecond), 4)
		}, 4},
		{"a retryer of its own wrapping the config's", func(o *ec2.Options) {
			o.Retryer = retry.AddWithMaxAttempts(ownWrapper{o.Retryer.(aws.RetryerV2)}, 2)
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("DescribeVpcs", ec2Internal)
				cfg, g := governed(t, f, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				if err := describeVpcs(ctx, ec2.NewFromConfig(cfg, tc.opt)); err == nil {
					t.Fatal("no error")
				}
				if n := f.count("DescribeVpcs"); n != tc.attempts {
					t.Errorf("%d attempts sent, want %d", n, tc.attempts)
				}
				if st := scopeStats(g, stats, ec2Key); st.Calls != 1 || st.Retries != int64(tc.attempts-1) || st.Lost() != 1 {
					t.Errorf("stats %+v, want 1 call, %d retries, lost once", st, tc.attempts-1)
				}
			})
		})
	}
}

// ownWrapper is a retryer of a program's own around another.
type ownWrapper struct{ aws.RetryerV2 }
