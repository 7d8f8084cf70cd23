package cloudggcp

import (
	"context"
	"testing"
	"testing/synctest"

	"cloud.google.com/go/asset/apiv1/assetpb"
	gax "github.com/googleapis/gax-go/v2"

	"github.com/cloudg/cloudg/resilience"
)

// A call that two of the package's retry options reach (a client whose
// CallOptions carry the Retry option, given it again by the call, or
// Do's options) is governed by one of them: its attempts are counted,
// and its answers and retries recorded, once. Do's (or a listing's)
// governs, since it has counted the call already; of two Retry options
// the later, as gax lets a later option override an earlier one.
// Before, with the interceptor, each recorded every answer and retry:
// "calls 3, throttled 4, retries 4" for two throttles retried (two Retry
// options), "calls 4, throttled 4, retries 4" under Do.
func TestACallGovernedTwiceIsRecordedOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		interceptor bool
		do          bool
		calls       int64
	}{
		{"two retry options, interceptor", true, false, 3},
		{"two retry options", false, false, 0}, // the option alone counts no calls
		{"do and a retry option, interceptor", true, true, 1},
		{"do and a retry option", false, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(0)
				srv.fail("GetFeed", "", unavailable(), unavailable())
				gov := newGov(t, resilience.Config{})
				var client = startBuf(t, srv)
				if tc.interceptor {
					client = startBuf(t, srv, ClientOption(WithGovernor(gov)))
				}
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "feeds")
				// The client's own options for the method carry the option.
				client.CallOptions.GetFeed = append(client.CallOptions.GetFeed[:len(client.CallOptions.GetFeed):len(client.CallOptions.GetFeed)],
					Retry(ctx, feedScope(), WithGovernor(gov)))
				get := func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
					return client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
				}
				var f *assetpb.Feed
				var err error
				if tc.do {
					f, err = Do(ctx, feedScope(), get, WithGovernor(gov))
				} else {
					f, err = get(ctx, Retry(ctx, feedScope(), WithGovernor(gov)))
				}
				if err != nil || f.GetName() != feed {
					t.Fatalf("%v %v, want the feed after two retries", f, err)
				}
				if n := len(srv.reqs("GetFeed")); n != 3 {
					t.Fatalf("%d attempts, want 3", n)
				}
				sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
				if sc.Calls != tc.calls || sc.Throttled != 2 || sc.Retries != 2 || ledger.Degraded() {
					t.Fatalf("stats %+v (ledger %q), want %d calls, 2 throttled, 2 retries, nothing lost", sc, ledger.Describe(), tc.calls)
				}
				if n := gov.Inspect(feedScope()).InFlight; n != 0 {
					t.Fatalf("%d slots held, want none", n)
				}
			})
		})
	}
}
