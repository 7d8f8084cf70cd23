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
	gax "github.com/googleapis/gax-go/v2"
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
	if b := gov.BucketState(feedScope()); b.RateRPS != 5 || b.CeilingRPS != 10 {
		t.Errorf("bucket %+v", b)
	}
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
		if b := gov.RetryBudget("gcp"); b != 0 {
			t.Errorf("budget %v", b)
		}
	})
}

// The Retry option alone: ResourceExhausted retried after RetryInfo's
// delay, reported to the governor.
func TestRetryOptionAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("GetFeed", "", throttled(2*time.Second), throttled(0))
		gov := newGov(t, resilience.Config{})
		client := startBuf(t, srv)
		ctx, stats := resilience.WithStats(context.Background())
		start := time.Now()
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov))); err != nil {
			t.Fatal(err)
		}
		// 2 s (RetryInfo over the 1 s backoff), then 2 s (backoff).
		want := []time.Duration{0, 2 * time.Second, 4 * time.Second}
		if got := offsets(srv.reqs("GetFeed"), start); !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Throttled != 2 || sc.Retries != 2 {
			t.Errorf("stats %+v", sc)
		}
		// Without the option the client does not retry ResourceExhausted.
		srv.fail("GetFeed", "", throttled(0))
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("plain: %v", err)
		}
	})
}

// Do paces a unary call once (the interceptor lets it through), retries it
// with the policy, and returns the limit's error instead of gax's.
func TestDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("BatchGetAssetsHistory", "", throttled(0), unavailable())
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{RetryBudget: intp(0)}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		scope := Scope("projects/p1", "BatchGetAssetsHistory")
		call := func(ctx context.Context, opts ...gax.CallOption) (*assetpb.BatchGetAssetsHistoryResponse, error) {
			return client.BatchGetAssetsHistory(ctx, &assetpb.BatchGetAssetsHistoryRequest{Parent: "projects/p1"}, opts...)
		}
		if _, err := Do(ctx, scope, call, WithGovernor(gov)); err != nil {
			t.Fatal(err)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Calls != 1 || sc.Retries != 2 || sc.Throttled != 2 {
			t.Errorf("stats %+v", sc)
		}

		for range 5 {
			srv.fail("BatchGetAssetsHistory", "", unavailable())
		}
		before := len(srv.reqs("BatchGetAssetsHistory"))
		_, err := Do(ctx, scope, call, WithGovernor(gov))
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) || status.Code(err) != codes.Unavailable {
			t.Fatalf("%T %v", err, err)
		}
		if n := len(srv.reqs("BatchGetAssetsHistory")) - before; n != 3 {
			t.Errorf("%d attempts, want 1 + 2 free retries", n)
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
		if sum.Scopes["gcp/projects/p1/*/inventory"].Calls != 1 || sum.Scopes["gcp/projects/fixed/*/x"].Calls != 1 {
			t.Errorf("scopes %v", sum.Scopes)
		}
	})
}
