package cloudggcp

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/internal/storetest"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
)

// A throttled attempt's slot goes back once its answer is recorded, so
// that a call waiting for the slot sees the pause the answer's RetryInfo
// set, and is held by it, as with resilience.Do: through the interceptor
// alone, with the Retry option on a client with the interceptor, and with
// Do (whose slot covers the call and its retries). Before, the
// interceptor gave the slot back as the attempt returned: with a store
// whose throttle takes a round trip (fleet mode's), the call waiting for
// the slot got it, found the scope not paused yet, and was sent at once
// into the 30 s pause (0.5 s; GetFeed's own timeout is 60 s).
func TestACallWaitingForTheSlotOfAThrottledOneIsHeldByItsPause(t *testing.T) {
	for _, tc := range getFeedFlavours() {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(0)
				srv.fail("GetFeed", "", throttled(30*time.Second))
				var n atomic.Int32
				srv.seen = func(string) {
					if n.Add(1) == 1 {
						time.Sleep(500 * time.Millisecond) // the first attempt holds the slot
					}
				}
				cfg := resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1, MaxRetries: intp(0)}}
				gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(storetest.SlowPauses(resilience.MemoryStore(), 5*time.Millisecond)))
				if err != nil {
					t.Fatal(err)
				}
				client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
				ctx := context.Background()
				start := time.Now()
				var wg sync.WaitGroup
				wg.Go(func() { _ = tc.call(ctx, gov, client) })
				synctest.Wait()
				if err := tc.call(ctx, gov, client); err != nil {
					t.Fatalf("the call waiting for the slot: %v", err)
				}
				wg.Wait()
				reqs := srv.reqs("GetFeed")
				if len(reqs) != 2 {
					t.Fatalf("%d requests, want the throttled one and the waiting one", len(reqs))
				}
				if sent := reqs[1].at.Sub(start); sent < 30*time.Second+505*time.Millisecond {
					t.Fatalf("the call waiting for the slot of one throttled at 500ms for 30s: sent at %v, want after the pause", sent)
				}
				if in := gov.Inspect(feedScope()).InFlight; in != 0 {
					t.Fatalf("%d slots held after the calls ended", in)
				}
			})
		})
	}
}

// A getFeedFlavour is one way of making a GetFeed call governed: name,
// and the call.
type getFeedFlavour struct {
	name string
	call func(ctx context.Context, gov *resilience.Governor, c assetClient) error
}

// getFeedFlavours returns the ways of governing a GetFeed call: the
// interceptor alone, the Retry option on a client with the interceptor,
// and Do.
func getFeedFlavours() []getFeedFlavour {
	return []getFeedFlavour{
		{"interceptor", func(ctx context.Context, _ *resilience.Governor, c assetClient) error {
			_, err := c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed})
			return err
		}},
		{"Retry option with the interceptor", retryOptionCall},
		{"Do", func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := Do(ctx, feedScope(), func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
				return c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
			}, WithGovernor(gov))
			return err
		}},
	}
}
