package cloudggcp

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
)

// admissionRec records what the governor tells a scheduler of a task's
// first call (resilience.WithAdmission).
type admissionRec struct{ deferred atomic.Int32 }

func (a *admissionRec) Decided()                      {}
func (a *admissionRec) Deferred(time.Duration, error) { a.deferred.Add(1) }

// A task's first call that its scheduler's admission defers reaches the
// task through the Cloud Asset client (grpc's Invoke, gax's retry loop and
// its apierror) still saying so: errors.Is(err, resilience.ErrDeferred),
// which a task uses to return at once and not count the call as failed;
// the admission is told once. So for a call the interceptor governs, one
// made with the Retry option, Do, a listing's first page and
// ListInventory. A refusal of WithMaxWait, with the same
// *resilience.WouldWaitError, is a lost call and does not match. Nothing
// is sent after the first call.
func TestADeferredFirstCallSaysErrDeferred(t *testing.T) {
	getFeed := func(ctx context.Context, c assetClient, opts ...gax.CallOption) error {
		_, err := c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
		return err
	}
	list := &assetpb.ListAssetsRequest{Parent: "projects/p1"}
	for _, tc := range []struct {
		name string
		rpc  string
		call func(ctx context.Context, gov *resilience.Governor, c assetClient) error
	}{
		{"the interceptor", "GetFeed", func(ctx context.Context, _ *resilience.Governor, c assetClient) error {
			return getFeed(ctx, c)
		}},
		{"the Retry option", "GetFeed", func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			return getFeed(ctx, c, Retry(ctx, feedScope(), WithGovernor(gov)))
		}},
		{"Do", "GetFeed", func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := Do(ctx, feedScope(), func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
				return c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
			}, WithGovernor(gov))
			return err
		}},
		{"a listing", RPCListAssets, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := ListAssets(ctx, c, list, WithGovernor(gov)).Collect()
			return err
		}},
		{"ListInventory", RPCListAssets, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := ListInventory(ctx, c, list, WithGovernor(gov))
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(5)
				gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{Adaptive: new(false), Services: map[string]resilience.ServiceConfig{
					"cloudasset.GetFeed": {MaxRPS: 1, Burst: 1}, "cloudasset.ListAssets": {MaxRPS: 1, Burst: 1},
				}}})
				client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
				if err := tc.call(context.Background(), gov, client); err != nil { // the only token
					t.Fatal(err)
				}
				var a admissionRec
				err := tc.call(resilience.WithAdmission(context.Background(), &a, 0), gov, client)
				var ww *resilience.WouldWaitError
				if !errors.As(err, &ww) || !errors.Is(err, resilience.ErrDeferred) || a.deferred.Load() != 1 {
					t.Errorf("the first call under an admission, no token: %T %v (deferred %d); want errors.Is(err, resilience.ErrDeferred)", err, err, a.deferred.Load())
				}
				err = tc.call(resilience.WithMaxWait(context.Background(), 0), gov, client)
				if !errors.As(err, &ww) || errors.Is(err, resilience.ErrDeferred) {
					t.Errorf("a call under WithMaxWait(0), no token: %T %v; want a *resilience.WouldWaitError that is not ErrDeferred", err, err)
				}
				if n := len(srv.reqs(tc.rpc)); n != 1 {
					t.Errorf("%d requests sent, want the first alone", n)
				}
			})
		})
	}
}
