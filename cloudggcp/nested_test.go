package cloudggcp

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
)

// governedCreds are per-RPC credentials whose token is fetched with a
// governed call of the same account (a token exchange, a key read from
// the project's Secret Manager), made with the context grpc asks them
// with: the attempt's.
type governedCreds struct {
	gov     *resilience.Governor
	fetches chan time.Duration // how long each fetch waited
}

func (c governedCreds) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	start := time.Now()
	err := resilience.Do(ctx, Scope("projects/p1", "GetToken"), func(context.Context) error { return nil },
		resilience.WithGovernor(c.gov))
	c.fetches <- time.Since(start)
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer t"}, nil
}

func (governedCreds) RequireTransportSecurity() bool { return false }

// A governed call made inside an attempt the interceptor governs (the
// call's credentials fetching a token with the attempt's context) is
// nested in it, as in cloudghttp's Transport and the core's
// WithNestedCalls: it borrows the slot the attempt holds rather than wait
// for it. Before, the interceptor sent the attempt with the caller's
// context, which did not lead to the attempt's Guard: with
// max_concurrency 1 the token's call waited for the slot its own attempt
// held until the call's deadline (GetFeed's own timeout, 60 s), and the
// call failed. Through the interceptor alone, with the Retry option on a
// client with the interceptor, with Do and with a listing (whose slot the
// interceptor's attempt goes on).
func TestACallMadeInsideAnInterceptedAttemptIsNested(t *testing.T) {
	flavours := append(getFeedFlavours(), getFeedFlavour{"listing", func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
		_, err := ListAssets(ctx, c, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		return err
	}})
	for _, tc := range flavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
				creds := governedCreds{gov: gov, fetches: make(chan time.Duration, 10)}
				client := startBuf(t, newFake(0), ClientOption(WithGovernor(gov)),
					option.WithGRPCDialOption(grpc.WithPerRPCCredentials(creds)))
				start := time.Now()
				if err := tc.call(context.Background(), gov, client); err != nil {
					t.Fatalf("err %v after %v, want the feed at once: the token's call waited for the slot its own attempt held",
						err, time.Since(start))
				}
				if d := time.Since(start); d != 0 {
					t.Fatalf("the call took %v, want no wait", d)
				}
				if n := len(creds.fetches); n != 1 {
					t.Fatalf("%d token fetches, want 1", n)
				}
				if in := gov.Inspect(feedScope()).InFlight; in != 0 {
					t.Fatalf("%d slots held after the call", in)
				}
			})
		})
	}
}

// keepingCreds are per-RPC credentials that start, for each attempt, a
// governed call of the same account with the context grpc asks them with
// (the attempt's), kept without its cancellation as net/http's dialer
// keeps a request's, and do not wait for it: a context that outlives the
// attempt.
type keepingCreds struct {
	gov *resilience.Governor
	wg  *sync.WaitGroup
}

func (c keepingCreds) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	kept := context.WithoutCancel(ctx)
	c.wg.Go(func() {
		_ = resilience.Do(kept, Scope("projects/p1", "GetToken"), func(context.Context) error { return nil }, resilience.WithGovernor(c.gov))
	})
	runtime.Gosched()
	return map[string]string{"authorization": "Bearer t"}, nil
}

func (keepingCreds) RequireTransportSecurity() bool { return false }

// A context is safe for simultaneous use by goroutines, and the one an
// attempt is sent with is no exception: a goroutine the call's
// credentials start, and do not wait for, may make its governed call with
// it while the call records the attempt's answer, gives its slot back and
// ends. With the account's bulkhead full (another call holds its other
// slot), that call looks the attempt's call up as the call it is nested
// in, and reads nothing that call writes meanwhile (run with -race): it
// is nested in the attempt while the attempt is sent only, as a call
// nested in a resilience.Do made WithNestedCalls is. Through the
// interceptor alone, the Retry option, Do and a listing.
func TestAContextOutlivingTheAttemptIsSafe(t *testing.T) {
	flavours := append(getFeedFlavours(), getFeedFlavour{"listing", func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
		_, err := ListAssets(ctx, c, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		return err
	}})
	for _, tc := range flavours {
		t.Run(tc.name, func(t *testing.T) {
			fast := 1e9 // no call waits for a token
			gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{
				MaxConcurrency: 2, MaxRPS: fast, Burst: fast, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
				Services: map[string]resilience.ServiceConfig{"cloudasset.ListAssets": {MaxRPS: fast, Burst: fast}},
			}})
			parked, err := gov.Begin(context.Background(), Scope("projects/p1", "Parked"))
			if err != nil {
				t.Fatal(err)
			}
			if err := parked.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			client := startBuf(t, newFake(0), ClientOption(WithGovernor(gov)),
				option.WithGRPCDialOption(grpc.WithPerRPCCredentials(keepingCreds{gov: gov, wg: &wg})))
			for range 50 {
				if err := tc.call(context.Background(), gov, client); err != nil {
					t.Fatal(err)
				}
			}
			parked.End(nil)
			wg.Wait()
			if in := gov.Inspect(feedScope()).InFlight; in != 0 {
				t.Fatalf("%d slots held after the calls", in)
			}
		})
	}
}
