package cloudggcp

import (
	"context"
	"testing"

	"cloud.google.com/go/asset/apiv1/assetpb"
	gax "github.com/googleapis/gax-go/v2"

	"github.com/cloudg/cloudg/resilience"
)

// A client given ClientOption twice (a helper that adds it to options
// that carry it already) is governed once: each attempt is one counted
// call, one token, one answer recorded, with the Retry option or without.
// Before, the second interceptor, chained after the first, governed the
// attempt again: "calls 4, throttled 2" for one throttled attempt and its
// retry, the scope's tokens spent twice.
func TestAClientGivenTheOptionTwiceIsGovernedOnce(t *testing.T) {
	for _, retry := range []bool{false, true} {
		name := "interceptor"
		if retry {
			name = "retry option"
		}
		t.Run(name, func(t *testing.T) {
			srv := newFake(0)
			srv.fail("GetFeed", "", unavailable())
			gov := newGov(t, resilience.Config{})
			client := startTCP(t, srv, ClientOption(WithGovernor(gov)), ClientOption(WithGovernor(gov)))
			ctx, stats := resilience.WithStats(context.Background())
			var opts []gax.CallOption
			if retry {
				opts = append(opts, Retry(ctx, feedScope(), WithGovernor(gov)))
			}
			f, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
			if err != nil || f.GetName() != feed {
				t.Fatalf("%v %v", f, err)
			}
			if n := len(srv.reqs("GetFeed")); n != 2 {
				t.Fatalf("%d attempts, want 2", n)
			}
			sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
			if sc.Calls != 2 || sc.Throttled != 1 {
				t.Fatalf("stats %+v, want 2 calls, 1 throttled: the two attempts governed once each", sc)
			}
			if n := gov.Inspect(feedScope()).InFlight; n != 0 {
				t.Fatalf("%d slots held, want none", n)
			}
		})
	}
}
