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
	gax "github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func assetName(a *assetpb.Asset) string { return a.GetName() }

// 25 items in pages of 10: three requests, each paced. The first request
// takes the listing's token (step 1); the two further pages take the 2
// extra tokens, just before they are fetched; nothing is taken for the
// final iterator.Done. calls counts one per first request and per further
// page: 3 for gcp/organizations/1/*/cloudasset.
func TestListingTakesATokenPerFurtherPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"cloudasset.ListAssets": {MaxRPS: 1, Burst: 1}, // one token a second, to see each one
		}}})
		ctx, stats := resilience.WithStats(context.Background())
		start := time.Now()
		l := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "organizations/1", PageSize: 10}, WithGovernor(gov))
		items, err := l.Collect()
		if err != nil {
			t.Fatal(err)
		}
		if got := names(items, assetName); !slices.Equal(got, seq(0, 25)) {
			t.Fatalf("items %v", got)
		}
		reqs := srv.reqs(RPCListAssets)
		if got := offsets(reqs, start); !slices.Equal(got, []time.Duration{0, time.Second, 2 * time.Second}) {
			t.Errorf("requests at %v, want 0s 1s 2s (a token before each)", got)
		}
		for _, r := range reqs {
			if r.size != 10 {
				t.Errorf("page size %d", r.size)
			}
		}
		sc := scopeStats(gov, stats, "gcp/organizations/1/*/cloudasset")
		if sc.Calls != 3 {
			t.Errorf("calls %d, want 3 (first request + 2 further pages)", sc.Calls)
		}
		if sc.Waits != 2 || sc.Wait != 2*time.Second {
			t.Errorf("waits %d (%v), want the 2 extra tokens, 1s each", sc.Waits, sc.Wait)
		}
		// No token was taken for the final Done: the next token is due at
		// 3s, one second after the last one.
		time.Sleep(time.Second)
		if gd, _ := gov.Begin(ctx, Scope("organizations/1", RPCListAssets)); !gd.Allow() {
			t.Error("a token was taken after the last page")
		}
		if c := l.Coverage(); c.Status != StatusSuccess || c.Items != 25 || l.Pages() != 3 {
			t.Errorf("coverage %+v, pages %d", c, l.Pages())
		}
	})
}

// Every request is paced, empty pages included (the SDK's Next loops past
// them without returning): 3 pages preceded by 2 empty ones are 5 requests,
// 5 calls and 4 extra tokens.
func TestListingPacesEmptyPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.empty = true
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"cloudasset.SearchAllResources": {MaxRPS: 1, Burst: 1},
		}}})
		ctx, stats := resilience.WithStats(context.Background())
		start := time.Now()
		items, err := SearchAllResources(ctx, client, &assetpb.SearchAllResourcesRequest{Scope: "projects/p1"}, WithGovernor(gov)).Collect()
		if err != nil || len(items) != 25 {
			t.Fatalf("%d items, %v", len(items), err)
		}
		reqs := srv.reqs(RPCSearchAllResources)
		want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}
		if got := offsets(reqs, start); !slices.Equal(got, want) {
			t.Errorf("requests at %v, want %v", got, want)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Calls != 5 || sc.Waits != 4 {
			t.Errorf("calls %d waits %d, want 5 and 4", sc.Calls, sc.Waits)
		}
	})
}

// Over a real 127.0.0.1 socket with the built-in defaults: the three
// listing RPCs are counted in the service scope gcp/projects/p1/*/cloudasset,
// and each paces its own leaf (ListAssets 1.5 rps, the searches 6 rps).
func TestListingsOverTCPKeyedByProject(t *testing.T) {
	srv := newFake(25)
	client := startTCP(t, srv)
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())

	assets, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
	if err != nil || !slices.Equal(names(assets, assetName), seq(0, 25)) {
		t.Fatalf("ListAssets: %d items, %v", len(assets), err)
	}
	var resources []string
	for r, err := range SearchAllResources(ctx, client, &assetpb.SearchAllResourcesRequest{Scope: "projects/p1"}, WithGovernor(gov)).All() {
		if err != nil {
			t.Fatal(err)
		}
		resources = append(resources, r.GetName())
	}
	if !slices.Equal(resources, seq(0, 25)) {
		t.Fatalf("SearchAllResources: %v", resources)
	}
	l := SearchAllIamPolicies(ctx, client, &assetpb.SearchAllIamPoliciesRequest{Scope: "projects/p1/whatever"}, WithGovernor(gov))
	n := 0
	for {
		_, err := l.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 25 {
		t.Fatalf("SearchAllIamPolicies: %d", n)
	}

	sum := gov.Summary(stats)
	if len(sum.Scopes) != 1 {
		t.Errorf("scopes %v, want only gcp/projects/p1/*/cloudasset", sum.Scopes)
	}
	if sc := sum.Scopes["gcp/projects/p1/*/cloudasset"]; sc.Calls != 9 {
		t.Errorf("calls %d, want 3 per listing", sc.Calls)
	}
	for rpc, ceiling := range map[string]float64{RPCListAssets: 1.5, RPCSearchAllResources: 6, RPCSearchAllIamPolicies: 6} {
		if b := gov.BucketState(Scope("projects/p1", rpc)); b.CeilingRPS != ceiling {
			t.Errorf("%s ceiling %v, want %v", rpc, b.CeilingRPS, ceiling)
		}
		if got := len(srv.reqs(rpc)); got != 3 {
			t.Errorf("%s: %d requests", rpc, got)
		}
	}
}

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
		b := gov.BucketState(Scope("projects/p1", RPCListAssets))
		if b.RateRPS != 0.75 || b.CeilingRPS != 1.5 {
			t.Errorf("ListAssets at %v rps (ceiling %v), want 0.75", b.RateRPS, b.CeilingRPS)
		}
		items, err := l.Collect()
		if err != nil || len(items) != 24 {
			t.Fatalf("%d more items, %v", len(items), err)
		}
		// Pages 2 and 3 went at 0.75 rps, the listing ended more than 5 s
		// after the throttle, and its success added 5% of the ceiling back.
		if b := gov.BucketState(Scope("projects/p1", RPCListAssets)); b.RateRPS != 0.825 {
			t.Errorf("after the listing: %v rps, want 0.825", b.RateRPS)
		}
		if got := offsets(srv.reqs(RPCListAssets), start); len(got) != 4 || got[1] != 3*time.Second {
			t.Errorf("requests at %v, want the retry after RetryInfo's 3s", got)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.Throttled != 1 || sc.Retries != 1 || sc.GaveUp != 0 || sc.Calls != 3 {
			t.Errorf("stats %+v", sc)
		}
		if sc.MinRateRPS != 0.75 {
			t.Errorf("lowest rate %v", sc.MinRateRPS)
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
		if b := gov.BucketState(Scope("projects/p1", RPCListAssets)); b.RateRPS != 1.5 {
			t.Errorf("transient errors slowed the leaf to %v", b.RateRPS)
		}
	})
}

// The backoff is capped at max_backoff_seconds.
func TestBackoffCap(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 9; n++ {
		got = append(got, backoff(n, 60*time.Second))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Errorf("backoff %v", got)
	}
	if d := backoff(1000, 60*time.Second); d != 60*time.Second {
		t.Errorf("backoff(1000) %v", d)
	}
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
		if b := gov.RetryBudget("gcp"); b != 0 {
			t.Errorf("budget %v", b)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.Retries != 3 || sc.GaveUp != 1 || sc.Throttled != 4 || sc.Calls != 1 {
			t.Errorf("stats %+v", sc)
		}
		if gaveUp, skipped := ledger.Counts(); gaveUp != 1 || skipped != 0 {
			t.Errorf("ledger %d %d", gaveUp, skipped)
		}
		if _, ok := gov.Summary(nil).Breakers["gcp/projects/p1/*/cloudasset/ListAssets"]; ok {
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
		if !errors.As(err, &rbe) || status.Code(err) != codes.Unavailable {
			t.Fatalf("error %v", err)
		}
		if len(items) != 10 {
			t.Errorf("%d items", len(items))
		}
		if n := len(srv.reqs(RPCListAssets)) - before; n != 4 {
			t.Errorf("%d requests, want 1 + 3 attempts of page 2", n)
		}
		// The limit, unlike the budget, is the service failing: the breaker
		// counts it, and throttling is a give-up.
		if br := gov.Summary(nil).Breakers["gcp/projects/p1/*/cloudasset/ListAssets"]; br.Failures != 1 {
			t.Errorf("breaker %+v", br)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.GaveUp != 1 || sc.Retries != 2 {
			t.Errorf("stats %+v", sc)
		}
		if l.ResumeToken() != "10" {
			t.Errorf("resume token %q", l.ResumeToken())
		}
	})
}

// A listing failing on page 3 returns pages 1-2 and a PARTIAL record; a new
// listing from its resume token fetches the rest. Over real TCP.
func TestListingFailingOnPage3ReturnsPages1And2(t *testing.T) {
	srv := newFake(25)
	srv.fail(RPCListAssets, "20", throttled(0))
	client := startTCP(t, srv)
	gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxRetries: intp(0)}})
	ctx, _ := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "gcp_assets")
	req := &assetpb.ListAssetsRequest{Parent: "projects/p1"}
	l := ListAssets(ctx, client, req, WithGovernor(gov))
	items, err := l.Collect()
	if !slices.Equal(names(items, assetName), seq(0, 20)) {
		t.Fatalf("items %v", names(items, assetName))
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("error %v", err)
	}
	if l.Err() != err || l.Pages() != 2 {
		t.Fatalf("Err %v, Pages %d; want the listing's error after 2 pages", l.Err(), l.Pages())
	}
	if sc := l.Scope(); sc.String() != "gcp/projects/p1/*/cloudasset/ListAssets" {
		t.Fatalf("Scope %v", sc)
	}
	c := l.Coverage()
	if c.Status != StatusPartial || c.Items != 20 || !strings.HasPrefix(c.Message, "listing truncated: throttled: ") ||
		c.Name != "gcp/projects/p1/*/cloudasset/ListAssets" {
		t.Errorf("coverage %+v", c)
	}
	if !strings.Contains(c.Message, "Quota exceeded") {
		t.Errorf("the record lost the provider's message: %q", c.Message)
	}
	if !ledger.Degraded() {
		t.Error("ledger not degraded")
	}

	resume := &assetpb.ListAssetsRequest{Parent: "projects/p1", PageToken: l.ResumeToken()}
	rest, err := ListAssets(ctx, client, resume, WithGovernor(gov)).Collect()
	if err != nil || !slices.Equal(names(rest, assetName), seq(20, 25)) {
		t.Errorf("resumed: %v, %v", names(rest, assetName), err)
	}
	if req.PageToken != "" {
		t.Error("the request was modified")
	}
}

// FAILED when nothing came back; a fatal answer is no throttling.
func TestListingFailingOnPage1IsFailed(t *testing.T) {
	srv := newFake(25)
	srv.fail(RPCSearchAllIamPolicies, "", denied())
	client := startTCP(t, srv)
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())
	l := SearchAllIamPolicies(ctx, client, &assetpb.SearchAllIamPoliciesRequest{Scope: "organizations/1"}, WithGovernor(gov))
	items, err := l.Collect()
	if len(items) != 0 || status.Code(err) != codes.PermissionDenied {
		t.Fatalf("%d items, %v", len(items), err)
	}
	c := l.Coverage()
	if c.Status != StatusFailed || strings.HasPrefix(c.Message, "throttled") || !strings.Contains(c.Message, "PermissionDenied") {
		t.Errorf("coverage %+v", c)
	}
	if n := len(srv.reqs(RPCSearchAllIamPolicies)); n != 1 {
		t.Errorf("%d attempts: PermissionDenied was retried", n)
	}
	if sc := scopeStats(gov, stats, "gcp/organizations/1/*/cloudasset"); sc.GaveUp != 0 || sc.Retries != 0 {
		t.Errorf("stats %+v", sc)
	}
}

// ListAssets PermissionDenied (or Unimplemented) falls back to
// SearchAllResources.
func TestInventoryFallsBackToSearchAllResources(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  func(*fakeAsset) assetpb.AssetServiceServer
		code codes.Code
	}{
		{"PermissionDenied", func(f *fakeAsset) assetpb.AssetServiceServer { f.listErr = denied(); return f }, codes.PermissionDenied},
		{"Unimplemented", func(f *fakeAsset) assetpb.AssetServiceServer {
			// what grpc answers for a method the server does not have
			f.listErr = status.Error(codes.Unimplemented, "method ListAssets not implemented")
			return f
		}, codes.Unimplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(25)
			client := startTCP(t, tc.srv(fake))
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			inv, err := ListInventory(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1", AssetTypes: []string{"compute.googleapis.com/Instance"}}, WithGovernor(gov))
			if err != nil {
				t.Fatal(err)
			}
			if len(inv.Assets) != 0 || len(inv.Resources) != 25 || status.Code(inv.Fallback) != tc.code {
				t.Fatalf("assets %d resources %d fallback %v", len(inv.Assets), len(inv.Resources), inv.Fallback)
			}
			if c := inv.Coverage; c.Status != StatusSuccess || c.Name != "gcp/projects/p1/*/cloudasset/SearchAllResources" {
				t.Errorf("coverage %+v", c)
			}
			if n := len(fake.reqs(RPCListAssets)); n != 1 {
				t.Errorf("ListAssets sent %d times", n)
			}
			if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Calls != 4 || sc.GaveUp != 0 {
				t.Errorf("stats %+v", sc)
			}
		})
	}
	t.Run("NoFallbackOnThrottling", func(t *testing.T) {
		fake := newFake(25)
		fake.fail(RPCListAssets, "", throttled(0))
		client := startTCP(t, fake)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxRetries: intp(0)}})
		inv, err := ListInventory(context.Background(), client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov))
		if status.Code(err) != codes.ResourceExhausted || inv.Fallback != nil || inv.Coverage.Status != StatusFailed {
			t.Errorf("%+v %v", inv, err)
		}
		if n := len(fake.reqs(RPCSearchAllResources)); n != 0 {
			t.Errorf("searched %d times", n)
		}
	})
}

// The breaker is checked once per listing: a listing that is the half-open
// breaker's probe is not rejected by its own breaker on page 2, while other
// listings are rejected until it reports back.
func TestProbeListingNotRejectedOnPage2(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", unavailable())
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1, MaxRetries: intp(0)}})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "gcp_assets")
		req := &assetpb.ListAssetsRequest{Parent: "projects/p1"}
		list := func() *Listing[*assetpb.Asset] { return ListAssets(ctx, client, req, WithGovernor(gov)) }

		if _, err := list().Collect(); status.Code(err) != codes.Unavailable {
			t.Fatalf("first listing: %v", err)
		}
		// Open: rejected before anything is sent.
		_, err := list().Collect()
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("second listing: %v", err)
		}
		if n := len(srv.reqs(RPCListAssets)); n != 1 {
			t.Fatalf("%d requests", n)
		}
		time.Sleep(61 * time.Second) // the 60 s cooldown

		probe := list()
		for range 10 { // page 1
			if _, err := probe.Next(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := list().Collect(); !errors.As(err, &coe) {
			t.Errorf("a listing during the probe: %v, want rejected", err)
		}
		rest, err := probe.Collect()
		if err != nil || len(rest) != 15 {
			t.Fatalf("probe: %d more items, %v", len(rest), err)
		}
		if _, open := gov.Summary(nil).Breakers["gcp/projects/p1/*/cloudasset/ListAssets"]; open {
			t.Error("breaker not closed by the probe")
		}
		if _, err := list().Collect(); err != nil {
			t.Errorf("after the probe: %v", err)
		}
		sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset")
		if sc.Rejected != 2 || sc.BreakerTrips != 1 {
			t.Errorf("stats %+v", sc)
		}
		if _, skipped := ledger.Counts(); skipped != 2 {
			t.Errorf("ledger skipped %d", skipped)
		}
	})
}

// One bulkhead slot is held for the whole listing, every page included,
// and given back at its end or by Close.
func TestListingHoldsOneSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
		req := &assetpb.ListAssetsRequest{Parent: "organizations/1"}
		ctx := context.Background()

		a := ListAssets(ctx, client, req, WithGovernor(gov))
		if _, err := a.Next(); err != nil {
			t.Fatal(err)
		}
		var b []*assetpb.Asset
		done := make(chan error)
		go func() {
			var err error
			b, err = ListAssets(ctx, client, req, WithGovernor(gov)).Collect()
			done <- err
		}()
		synctest.Wait()
		if n := len(srv.reqs(RPCListAssets)); n != 1 {
			t.Fatalf("%d requests while the slot is held", n)
		}
		for range 10 { // pages 2 and 3 of a go ahead with the slot
			if _, err := a.Next(); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if n := len(srv.reqs(RPCListAssets)); n != 2 {
			t.Fatalf("%d requests", n)
		}
		if _, err := a.Collect(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil || len(b) != 25 {
			t.Fatalf("%d, %v", len(b), err)
		}

		c := ListAssets(ctx, client, req, WithGovernor(gov))
		if _, err := c.Next(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if _, err := ListAssets(ctx, client, req, WithGovernor(gov)).Collect(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Collect(); err == nil {
			// c's buffered page 1 is still there, then ErrClosed.
			t.Error("a closed listing fetched on")
		} else if !errors.Is(err, ErrClosed) {
			t.Errorf("closed listing: %v", err)
		}
		if cov := c.Coverage(); cov.Status != StatusPartial || cov.Items != 10 {
			t.Errorf("closed listing's coverage %+v", cov)
		}
	})
}

// A RetryInfo pause longer than the time left is not slept: the provider
// error comes back at once, with the deadline as the reason (gax would
// sleep until the context expires and return a bare context error).
func TestRetryInfoBeyondDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", throttled(30*time.Second))
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		if time.Since(start) != 0 {
			t.Errorf("returned after %v", time.Since(start))
		}
		var rse *RetryStoppedError
		var ae *apierror.APIError
		if !errors.As(err, &rse) || !errors.As(err, &ae) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %T %v", err, err)
		}
		if ae.GRPCStatus().Code() != codes.ResourceExhausted || rse.Pause != 30*time.Second || rse.Left != 10*time.Second {
			t.Errorf("%+v", rse)
		}
		if resilience.Classify(err) != resilience.Throttled || !strings.Contains(err.Error(), "would pass the deadline") {
			t.Errorf("%v classifies as %v", err, resilience.Classify(err))
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.GaveUp != 1 || sc.Retries != 0 {
			t.Errorf("stats %+v", sc)
		}
	})
}

// Without a context deadline the provider's deadline (900 s) bounds a page:
// gax's timeout, and the retry's own check.
func TestProviderDeadlineBoundsAPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		for range 20 {
			srv.fail(RPCListAssets, "", throttled(200*time.Second))
		}
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		start := time.Now()
		_, err := ListAssets(context.Background(), client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		var rse *RetryStoppedError
		if !errors.As(err, &rse) {
			t.Fatalf("error %v", err)
		}
		// Attempts at 0, 200, 400, 600, 800 s; the next would be at 1000 s.
		if n := len(srv.reqs(RPCListAssets)); n != 5 || time.Since(start) != 800*time.Second {
			t.Errorf("%d attempts, %v", n, time.Since(start))
		}
	})
}

// A caller cancelling during the backoff gets its context error with the
// provider error alongside, and nothing is recorded as lost.
func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", unavailable())
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(500*time.Millisecond, cancel)
		_, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		var rse *RetryStoppedError
		if !errors.As(err, &rse) || !errors.Is(err, context.Canceled) || status.Code(rse.Err) != codes.Unavailable {
			t.Fatalf("error %v", err)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.GaveUp != 0 {
			t.Errorf("stats %+v", sc)
		}
		if _, ok := gov.Summary(nil).Breakers["gcp/projects/p1/*/cloudasset/ListAssets"]; ok {
			t.Error("a cancelled listing counted as a breaker failure")
		}
	})
}

// The gax behaviour the listing improves on, measured: a retryer whose
// pause (RetryInfo's 30 s) outlasts the context's 10 s sleeps until the
// context expires and returns a bare context.DeadlineExceeded, losing the
// provider's answer.
func TestGaxLosesTheProviderErrorPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", throttled(30*time.Second))
		client := startBuf(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var seen error
		honourRetryInfo := gax.WithRetry(func() gax.Retryer {
			return retryerFunc(func(err error) (time.Duration, bool) {
				seen = err
				d, _ := resilience.RetryAfter(err)
				return d, true
			})
		})
		start := time.Now()
		_, err := client.ListAssets(ctx, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, honourRetryInfo).Next()
		var ae *apierror.APIError
		if err != context.DeadlineExceeded || errors.As(err, &ae) || time.Since(start) != 10*time.Second {
			t.Errorf("gax returned %T %v after %v", err, err, time.Since(start))
		}
		if !errors.As(seen, &ae) || ae.Details().RetryInfo.GetRetryDelay().AsDuration() != 30*time.Second {
			t.Errorf("the retryer saw %T %v", seen, seen)
		}
	})
}

type retryerFunc func(error) (time.Duration, bool)

func (f retryerFunc) Retry(err error) (time.Duration, bool) { return f(err) }
