package cloudggcp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A ResourceExhausted with RetryInfo is retried after the RetryInfo delay
// (longer than the 1 s backoff), and leaves ListAssets at 0.75 rps, half its
// 1.5 rps.
func TestRetriedThrottleHalvesListAssets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", throttled(3*time.Second))
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		start := time.Now()
		l := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov))
		if _, err := l.Next(); err != nil { // page 1, after one retry
			t.Fatal(err)
		}
		b := gov.Inspect(Scope("projects/p1", RPCListAssets)).Leaf
		if b.Rate != 0.75 || b.Ceiling != 1.5 {
			t.Errorf("ListAssets at %v rps (ceiling %v), want 0.75", b.Rate, b.Ceiling)
		}
		items, err := l.Collect()
		if err != nil || len(items) != 24 {
			t.Fatalf("%d more items, %v", len(items), err)
		}
		// Pages 2 and 3 went at 0.75 rps, the listing ended more than 5 s
		// after the throttle, and its success added 5% of the ceiling back.
		if b := gov.Inspect(Scope("projects/p1", RPCListAssets)).Leaf; b.Rate != 0.825 {
			t.Errorf("after the listing: %v rps, want 0.825", b.Rate)
		}
		if got := offsets(srv.reqs(RPCListAssets), start); len(got) != 4 || got[1] != 3*time.Second {
			t.Errorf("requests at %v, want the retry after RetryInfo's 3s", got)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.Throttled != 1 || sc.Retries != 1 || sc.GaveUp != 0 || sc.Calls != 3 {
			t.Errorf("stats %+v", sc)
		}
		if sc.MinRate != 0.75 {
			t.Errorf("lowest rate %v", sc.MinRate)
		}
	})
}

// Transient errors back off 1 s, doubling: retries at +1 s and +3 s.
func TestRetryBacksOffFromOneSecondDoubling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(5)
		internal := status.Error(codes.Internal, "internal error")
		srv.fail(RPCListAssets, "", internal, status.Error(codes.DeadlineExceeded, "backend deadline"), internal)
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		start := time.Now()
		if _, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect(); err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}
		if got := offsets(srv.reqs(RPCListAssets), start); !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.TransientErrors != 3 || sc.Throttled != 0 || sc.Retries != 3 {
			t.Errorf("stats %+v", sc)
		}
		if b := gov.Inspect(Scope("projects/p1", RPCListAssets)).Leaf; b.Rate != 1.5 {
			t.Errorf("transient errors slowed the leaf to %v", b.Rate)
		}
	})
}

// With a retry budget of 1, a page gets its 2 free retries and 1 budgeted
// one; the fourth retry finds the budget empty and the listing ends with a
// *RetryBudgetExhaustedError wrapping the provider error, recorded as a
// give-up without a breaker failure.
func TestRetryBudgetOneAllowsThreeRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		for range 10 {
			srv.fail(RPCListAssets, "", unavailable())
		}
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{RetryBudget: intp(1)}})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "gcp_assets")
		start := time.Now()
		l := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov))
		items, err := l.Collect()
		if len(items) != 0 {
			t.Fatalf("%d items", len(items))
		}
		var rbe *resilience.RetryBudgetExhaustedError
		var ae *apierror.APIError
		if !errors.As(err, &rbe) || !errors.As(err, &ae) || ae.GRPCStatus().Code() != codes.Unavailable {
			t.Fatalf("error %T %v, want a RetryBudgetExhaustedError wrapping the Unavailable answer", err, err)
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second}
		if got := offsets(srv.reqs(RPCListAssets), start); !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v (2 free + 1 budgeted retries)", got, want)
		}
		if b := gov.Inspect(Scope("projects/p1", RPCListAssets)).RetryBudget; b != 0 {
			t.Errorf("budget %v", b)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.Retries != 3 || sc.GaveUp != 1 || sc.Throttled != 4 || sc.Calls != 1 {
			t.Errorf("stats %+v", sc)
		}
		if gaveUp, skipped := ledger.Counts(); gaveUp != 1 || skipped != 0 {
			t.Errorf("ledger %d %d", gaveUp, skipped)
		}
		if _, ok := gov.Summary(nil).Breakers[mustScope("gcp/projects%2Fp1/*/cloudasset/ListAssets")]; ok {
			t.Error("the budget's stop counted as a breaker failure")
		}
		c := l.Coverage()
		if c.Status != StatusFailed || !strings.HasPrefix(c.Message, "throttled: retry budget exhausted for gcp") {
			t.Errorf("coverage %+v", c)
		}
	})
}

// max_retries bounds the consecutive retries of a page, and the count
// starts again with every page that arrives; so do the free retries.
func TestConsecutiveRetryLimitResetsPerPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		for _, tok := range []string{"", "10", "20"} {
			srv.fail(RPCListAssets, tok, unavailable(), throttled(0))
		}
		client := startBuf(t, srv)
		// max_retries 2, and no budget: only each page's 2 free retries.
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxRetries: intp(2), RetryBudget: intp(0)}})
		ctx, stats := resilience.WithStats(context.Background())
		items, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		if err != nil || len(items) != 25 {
			t.Fatalf("%d items, %v: 2 retries on each page must be allowed", len(items), err)
		}
		if n := len(srv.reqs(RPCListAssets)); n != 9 {
			t.Errorf("%d requests, want 9", n)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Retries != 6 || sc.GaveUp != 0 {
			t.Errorf("stats %+v", sc)
		}

		// Three failures in a row on page 2: the third is not retried.
		srv.fail(RPCListAssets, "10", unavailable(), unavailable(), unavailable(), unavailable())
		ctx, stats = resilience.WithStats(context.Background())
		before := len(srv.reqs(RPCListAssets))
		l := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov))
		items, err = l.Collect()
		var rbe *resilience.RetryBudgetExhaustedError
		var ree *RetriesExhaustedError
		if !errors.As(err, &rbe) || !errors.As(err, &ree) || ree.Retries != 2 || status.Code(err) != codes.Unavailable || !errors.Is(err, state.ErrBudgetExhausted) {
			t.Fatalf("error %v, want a RetryBudgetExhaustedError wrapping a RetriesExhaustedError and the Unavailable answer", err)
		}
		if !strings.HasPrefix(err.Error(), "retry budget exhausted for gcp (gcp/projects/p1/*/cloudasset/ListAssets): ListAssets: 2 consecutive retries exhausted: ") {
			t.Fatalf("message %q", err)
		}
		if len(items) != 10 {
			t.Errorf("%d items", len(items))
		}
		if n := len(srv.reqs(RPCListAssets)) - before; n != 4 {
			t.Errorf("%d requests, want 1 + 3 attempts of page 2", n)
		}
		// Throttling given up past the limit is a give-up.
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.GaveUp != 1 || sc.Retries != 2 {
			t.Errorf("stats %+v", sc)
		}
		if l.ResumeToken() != "10" {
			t.Errorf("resume token %q", l.ResumeToken())
		}
	})
}

// At the default max_retries, a page that keeps failing ends the listing
// after 8 consecutive retries with a *resilience.RetryBudgetExhaustedError,
// as past an empty budget, chained to the provider's error through a
// *RetriesExhaustedError that says which limit stopped it: "retry budget
// exhausted for gcp (<scope>): ListAssets: 8 consecutive retries
// exhausted: <error>". Do ends the same way.
func TestConsecutiveRetryLimitMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		failures := make([]error, 9)
		for i := range failures {
			failures[i] = unavailable()
		}
		srv.fail(RPCListAssets, "", failures...)
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		_, err := ListAssets(context.Background(), client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		rbe, ok := err.(*resilience.RetryBudgetExhaustedError)
		if !ok || !errors.Is(err, state.ErrBudgetExhausted) {
			t.Fatalf("error %q (%T), want a *resilience.RetryBudgetExhaustedError", err, err)
		}
		ree, ok := rbe.Err.(*RetriesExhaustedError)
		if !ok || ree.Retries != 8 {
			t.Fatalf("under the budget's error: %q (%T), want a RetriesExhaustedError after 8 retries", rbe.Err, rbe.Err)
		}
		if want := "retry budget exhausted for gcp (gcp/projects/p1/*/cloudasset/ListAssets): ListAssets: 8 consecutive retries exhausted: " + ree.Err.Error(); err.Error() != want {
			t.Fatalf("message %q, want %q", err, want)
		}
		if k := resilience.Classify(err); k != resilience.Throttled || resilience.IsProviderAnswer(err) {
			t.Fatalf("classified %v, answer %v: want the budget's error, throttled and not an answer", k, resilience.IsProviderAnswer(err))
		}
		if status.Code(ree.Err) != codes.Unavailable || !strings.Contains(err.Error(), "The service is currently unavailable.") {
			t.Fatalf("the provider's error %v", ree.Err)
		}
		if n := len(srv.reqs(RPCListAssets)); n != 9 {
			t.Errorf("%d requests, want 1 + 8 retries", n)
		}
	})
}

// Past max_retries consecutive retries a page ends with the retry budget's
// error, chained to the provider's, and the listing failed after its
// retries: the service, not the budget, failed it, so the breaker counts
// the failure (throttling is also a give-up, in the stats and the
// ledger), and five listings stopped so in a row open the breaker, which
// refuses the sixth. A listing the empty budget stops counts none. (The
// scope fails for over breaker_dead_seconds: the dead scope's breaker,
// which would open during the fifth listing and refuse its retry, is
// turned off.)
func TestConsecutiveRetryLimitCountsABreakerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		client := startBuf(t, srv)
		noDead := 0.0
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxRetries: intp(2), BreakerDeadSeconds: &noDead}})
		const breakerKey = "gcp/projects%2Fp1/*/cloudasset/ListAssets"
		for _, tc := range []struct {
			name   string
			answer func() error
			gaveUp int64
		}{
			{"throttled", unavailable, 1},
			{"transient", func() error { return status.Error(codes.Internal, "internal error") }, 0},
		} {
			for i := range 5 {
				srv.fail(RPCListAssets, "", tc.answer(), tc.answer(), tc.answer())
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "gcp_assets")
				_, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
				var ree *RetriesExhaustedError
				if !errors.As(err, &ree) || !errors.Is(err, state.ErrBudgetExhausted) {
					t.Fatalf("%s %d: error %v, want the budget's error past max_retries", tc.name, i, err)
				}
				if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.GaveUp != tc.gaveUp || sc.Retries != 2 {
					t.Errorf("%s %d: stats %+v", tc.name, i, sc)
				}
				if n, _ := ledger.Counts(); int64(n) != tc.gaveUp {
					t.Errorf("%s %d: ledger %d give-ups", tc.name, i, n)
				}
				br := gov.Summary(nil).Breakers[mustScope(breakerKey)]
				if want := min(i+1, 4); i < 4 && (br.Failures != want || br.State != state.Closed) {
					t.Fatalf("%s %d: breaker %+v, want %d failures counted", tc.name, i, br, want)
				}
			}
			if br := gov.Summary(nil).Breakers[mustScope(breakerKey)]; br.State != state.Open {
				t.Fatalf("%s: breaker %+v after five listings failed after their retries", tc.name, br)
			}
			before := len(srv.reqs(RPCListAssets))
			_, err := ListAssets(context.Background(), client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
			if !errors.As(err, new(*resilience.CircuitOpenError)) || len(srv.reqs(RPCListAssets)) != before {
				t.Fatalf("%s: the sixth listing: %v, %d requests sent", tc.name, err, len(srv.reqs(RPCListAssets))-before)
			}
			time.Sleep(time.Hour) // the breaker's cooldowns pass; the probe closes it
			srv.fail(RPCListAssets, "")
			if items, err := ListAssets(context.Background(), client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect(); err != nil || len(items) != 25 {
				t.Fatalf("%s: the probe listing: %d items, %v", tc.name, len(items), err)
			}
		}
	})
}
