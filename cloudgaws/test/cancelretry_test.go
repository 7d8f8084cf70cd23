package test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/resilience"
)

// A call whose context is cancelled while it waits for the fresh rate
// token its throttled retry needs (the throttle halved EC2's 0.5 rps to
// 0.25 and drained the bucket: the token is 4 s away, the SDK's backoff
// at most 1 s) ends at once, with context.Canceled, lost once as
// cancelled, the retry unsent; and a paginator's page so cancelled ends
// the listing the same way. synctest fails a bubble whose goroutines
// outlive it: no watch of the wait is left.
func TestACallCancelledWaitingForItsRetrysToken(t *testing.T) {
	for _, paged := range []bool{false, true} {
		name := "a call"
		if paged {
			name = "a paginator's page"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("DescribeVpcs", ec2Throttle)
				cfg, g := governed(t, f, slowEC2)
				client := ec2.NewFromConfig(cfg)
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "vpcs")
				ctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() {
					if paged {
						_, err := ec2.NewDescribeVpcsPaginator(client, &ec2.DescribeVpcsInput{}).NextPage(ctx)
						done <- err
						return
					}
					done <- describeVpcs(ctx, client)
				}()
				time.Sleep(2 * time.Second) // past the SDK's backoff, before the token
				synctest.Wait()
				if n := f.count("DescribeVpcs"); n != 1 {
					t.Fatalf("sent %d before the cancel, want 1", n)
				}
				cancelEndsWaitAtOnce(t, done, cancel)
				if n := f.count("DescribeVpcs"); n != 1 {
					t.Errorf("sent %d, want the first attempt only", n)
				}
				lostOnly(t, g, stats, ledger, resilience.LossCancelled, 1)
			})
		})
	}
}
