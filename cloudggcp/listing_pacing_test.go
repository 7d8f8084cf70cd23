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
	"google.golang.org/api/iterator"
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
		gd, _ := gov.Begin(ctx, Scope("organizations/1", RPCListAssets))
		if err := gd.TryEnter(); err != nil {
			t.Errorf("a token was taken after the last page: %v", err)
		}
		gd.Release()
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
	if sc := sum.Scopes[mustScope("gcp/projects%2Fp1/*/cloudasset")]; sc.Calls != 9 {
		t.Errorf("calls %d, want 3 per listing", sc.Calls)
	}
	for rpc, ceiling := range map[string]float64{RPCListAssets: 1.5, RPCSearchAllResources: 6, RPCSearchAllIamPolicies: 6} {
		if b := gov.Inspect(Scope("projects/p1", rpc)).Leaf; b.Ceiling != ceiling {
			t.Errorf("%s ceiling %v, want %v", rpc, b.Ceiling, ceiling)
		}
		if got := len(srv.reqs(rpc)); got != 3 {
			t.Errorf("%s: %d requests", rpc, got)
		}
	}
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
