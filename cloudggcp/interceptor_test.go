package cloudggcp

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const feed = "projects/p1/feeds/f1"

func feedScope() resilience.Scope { return Scope("projects/p1", "GetFeed") }

// Over TCP: the interceptor counts, paces and reports every attempt of the
// client's own retry loop (GetFeed's default retries Unavailable).
func TestInterceptorGovernsEachAttempt(t *testing.T) {
	srv := newFake(0)
	srv.fail("GetFeed", "", unavailable())
	gov := newGov(t, resilience.Config{})
	client := startTCP(t, srv, ClientOption(WithGovernor(gov)))
	ctx, stats := resilience.WithStats(context.Background())
	f, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed})
	if err != nil || f.GetName() != feed {
		t.Fatalf("%v %v", f, err)
	}
	if n := len(srv.reqs("GetFeed")); n != 2 {
		t.Errorf("%d attempts", n)
	}
	sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
	if sc.Calls != 2 || sc.Throttled != 1 || sc.GaveUp != 0 {
		t.Errorf("stats %+v", sc)
	}
	// GetFeed has no leaf of its own: the cloudasset leaf (10 rps) halved.
	if b := gov.Inspect(feedScope()).Leaf; b.Rate != 5 || b.Ceiling != 10 {
		t.Errorf("bucket %+v", b)
	}
}

// On its own the interceptor cannot tell whether gax retries an attempt,
// so a throttled answer halves and pauses the scope but is neither a
// breaker failure nor a give-up, even when it is the call's last.
func TestInterceptorCountsNoBreakerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("GetFeed", "", throttled(0)) // GetFeed's own retry does not retry it
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "feeds")
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("%v", err)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.Calls != 1 || sc.Throttled != 1 || sc.GaveUp != 0 || sc.BreakerTrips != 0 {
			t.Errorf("stats %+v", sc)
		}
		if br := gov.Inspect(feedScope()).Breaker; br.Failures != 0 || br.State != state.Closed {
			t.Errorf("breaker %+v", br)
		}
		if ledger.Degraded() {
			t.Error("ledger degraded")
		}
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}); err != nil {
			t.Errorf("after: %v", err)
		}
	})
}

// An open breaker rejects an attempt before it is sent, and gax does not
// retry the rejection. The breaker opened on the final failure that the
// Retry option recorded.
func TestInterceptorRejectsOnOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("GetFeed", "", unavailable())
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1, MaxRetries: intp(0)}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		retry := Retry(ctx, feedScope(), WithGovernor(gov))
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, retry); status.Code(err) != codes.Unavailable {
			t.Fatalf("first: %v", err)
		}
		_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed})
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("second: %v", err)
		}
		if n := len(srv.reqs("GetFeed")); n != 1 {
			t.Errorf("%d requests", n)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Rejected != 1 || sc.Calls != 1 || sc.BreakerTrips != 1 {
			t.Errorf("stats %+v", sc)
		}
	})
}

// With the Retry option on a client that has the interceptor, each attempt
// is paced by the interceptor and each error reported once, by the retry
// policy: budget 1 allows 2 free + 1 budgeted retries here too.
func TestRetryOptionWithInterceptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		for range 10 {
			srv.fail("BatchGetAssetsHistory", "", unavailable())
		}
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{RetryBudget: intp(1)}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		scope := Scope("projects/p1", "BatchGetAssetsHistory")
		start := time.Now()
		_, err := client.BatchGetAssetsHistory(ctx, &assetpb.BatchGetAssetsHistoryRequest{Parent: "projects/p1"}, Retry(ctx, scope, WithGovernor(gov)))
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("%v", err)
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}
		if got := offsets(srv.reqs("BatchGetAssetsHistory"), start); !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.Calls != 4 || sc.Throttled != 4 || sc.Retries != 3 || sc.GaveUp != 1 {
			t.Errorf("stats %+v", sc)
		}
		if b := gov.Inspect(scope).RetryBudget; b != 0 {
			t.Errorf("budget %v", b)
		}
	})
}

// A paced listing on a client with the interceptor is paced per page, not
// per attempt as well.
func TestListingPassesThroughInterceptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "10", unavailable())
		gov := newGov(t, resilience.Config{})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect(); err != nil {
			t.Fatal(err)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Calls != 3 || sc.Throttled != 1 || sc.Retries != 1 {
			t.Errorf("stats %+v", sc)
		}
	})
}

// WithScopeFunc and WithService choose the interceptor's scope.
func TestInterceptorScopeOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		gov := newGov(t, resilience.Config{})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov), WithService("inventory"),
			WithScopeFunc(func(_ context.Context, method string, _ any) (resilience.Scope, bool) {
				return resilience.Scope{Provider: "gcp", Account: "projects/fixed", Service: "x"}, method == "/google.cloud.asset.v1.AssetService/BatchGetAssetsHistory"
			})))
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.BatchGetAssetsHistory(ctx, &assetpb.BatchGetAssetsHistoryRequest{Parent: "projects/p1"}); err != nil {
			t.Fatal(err)
		}
		sum := gov.Summary(stats)
		if sum.Scopes[mustScope("gcp/projects%2Fp1/*/inventory")].Calls != 1 || sum.Scopes[mustScope("gcp/projects%2Ffixed/*/x")].Calls != 1 {
			t.Errorf("scopes %v", sum.Scopes)
		}
	})
}

// A call made with the Retry option on a client with the interceptor
// records its success: the success comes (grpc.OnFinish) while the
// attempt holds its slot, and the call ends with it, giving the slot
// back. As the half-open breaker's probe (its cooldown, 5 s, over), the
// call's success closes the breaker.
func TestRetryOptionRecordsItsSuccessThroughTheInterceptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerCooldownSeconds: 5}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		openBreaker(gov, feedScope())
		time.Sleep(6 * time.Second)
		ctx := context.Background()
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov))); err != nil {
			t.Fatal(err)
		}
		if s := gov.Inspect(feedScope()); s.Breaker.State != state.Closed || s.InFlight != 0 {
			t.Fatalf("breaker %v, %d in flight after the probe's success; want closed, none", s.Breaker.State, s.InFlight)
		}
	})
}
