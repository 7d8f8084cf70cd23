package cloudggcp

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// With the gcp provider disabled (ratelimit.gcp.enabled: false, or
// ratelimit.enabled: false) a call is made once, directly, with no pacing
// and no retries of cloudggcp's, as the core's Do calls its function once:
// Do, the listings and the Retry option (on a client with the
// interceptor or without) leave the call to the client's own retry
// settings, which do not retry ResourceExhausted. Before, each of them
// still ran the GCP retry, the throttled call sent again after its
// RetryInfo delay.
func TestADisabledProviderMakesTheCallOnce(t *testing.T) {
	off := false
	for _, cfg := range []struct {
		name string
		cfg  resilience.Config
	}{
		{"gcp disabled", resilience.Config{GCP: resilience.ProviderConfig{Enabled: &off}}},
		{"all disabled", resilience.Config{Enabled: &off}},
	} {
		flavours := append(getFeedFlavours()[1:],
			getFeedFlavour{"Retry option alone", retryOptionCall},
			getFeedFlavour{"listing", func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
				_, err := ListAssets(ctx, c, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
				return err
			}})
		for i, tc := range flavours {
			t.Run(cfg.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := newFake(3)
					srv.fail("GetFeed", "", throttled(2*time.Second))
					srv.fail("ListAssets", "", throttled(2*time.Second))
					gov := newGov(t, cfg.cfg)
					var client assetClient
					if tc.name == "Retry option alone" {
						client = startBuf(t, srv)
					} else {
						client = startBuf(t, srv, ClientOption(WithGovernor(gov)))
					}
					ctx, stats := resilience.WithStats(context.Background())
					start := time.Now()
					err := tc.call(ctx, gov, client)
					if status.Code(err) != codes.ResourceExhausted || time.Since(start) != 0 {
						t.Errorf("%s: err %v after %v, want the throttle at once", tc.name, err, time.Since(start))
					}
					rpc := "GetFeed"
					if i == len(flavours)-1 {
						rpc = "ListAssets"
					}
					if n := len(srv.reqs(rpc)); n != 1 {
						t.Errorf("%s: %d requests, want one: a disabled provider's call is made once, with no retries", tc.name, n)
					}
					if tot := gov.Summary(stats).Totals; tot.Calls != 0 || tot.Throttled != 0 || tot.Retries != 0 {
						t.Errorf("%s: totals %+v, want nothing recorded", tc.name, tot)
					}
				})
			})
		}
	}
}
