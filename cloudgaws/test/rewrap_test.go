package test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// A retryer of the user's wrapped around an installed config's (a shorter
// maximum backoff), on a copy installed again after an AssumeRole, governs
// each retry once: one retry counted, and no watch of the SDK's sleep left
// running once the call is over (synctest fails a bubble whose goroutines
// outlive it).
func TestReinstallOverAWrappedGovernedRetryer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, ok)
		g, _ := resilience.NewGovernor(resilience.Config{})
		base := awsConfig(f, nil)
		if err := cloudgaws.Install(&base, "*", cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard)); err != nil {
			t.Fatal(err)
		}
		governedRetryer := base.Retryer
		base.Retryer = func() aws.Retryer { return retry.AddWithMaxBackoffDelay(governedRetryer(), 2*time.Second) }

		assumed := base.Copy()
		if err := cloudgaws.Install(&assumed, testAccount, cloudgaws.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(assumed)); err != nil {
			t.Fatal(err)
		}
		if st := scopeStats(g, stats, ec2Key); st.Calls != 1 || st.Retries != 1 || st.Throttled != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}
