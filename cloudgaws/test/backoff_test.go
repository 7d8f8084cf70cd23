package test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/resilience"
)

// The SDK's own backoff sleeps are counted as the scope's backoff
// (backoff_seconds), apart from its waits for the rate limit: between two
// attempts of a call the governed client spends backoff plus waits, and
// nothing else, in virtual time.
func TestSDKBackoffIsCounted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		first     reply
		throttled bool
	}{
		{"transient", ec2Internal, false}, // the SDK's sleep only
		{"throttled", ec2Throttle, true},  // the SDK's sleep, then a fresh token of the halved rate
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.script("DescribeVpcs", tc.first, tc.first, ok)
				cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxRPS: 1, Burst: 1}})
				ctx, stats := resilience.WithStats(context.Background())
				if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
					t.Fatal(err)
				}
				sent := f.sentAt("DescribeVpcs")
				if len(sent) != 3 {
					t.Fatalf("%d attempts, want 3", len(sent))
				}
				between := sent[2].Sub(sent[0])
				c := scopeStats(g, stats, ec2Key)
				if c.Backoff <= 0 || c.Retries != 2 {
					t.Fatalf("backoff %v after %d retries: the SDK's sleeps are not counted", c.Backoff, c.Retries)
				}
				// The first attempt's token came from the burst; the
				// retries' waits and the SDK's sleeps fill the gap.
				if c.Backoff+c.Wait != between {
					t.Fatalf("backoff %v + wait %v = %v, want the %v between the first and the last attempt", c.Backoff, c.Wait, c.Backoff+c.Wait, between)
				}
				if !tc.throttled && c.Wait != 0 {
					t.Fatalf("a transient retry waited %v for a token", c.Wait)
				}
				if life := g.Summary(nil).Scopes[mustScope(ec2Key)].Backoff; life != c.Backoff {
					t.Fatalf("lifetime backoff %v, the run's %v", life, c.Backoff)
				}
			})
		})
	}
}
