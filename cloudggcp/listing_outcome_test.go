package cloudggcp

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

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
		if _, open := gov.Summary(nil).Breakers[mustScope("gcp/projects%2Fp1/*/cloudasset/ListAssets")]; open {
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

// Listings abandoned without Close give their slots back when they are
// garbage collected: 16 abandoned listings of a project with a cap of 16 do
// not block the 17th for good. The collector runs on its own goroutine, so
// this test runs in real time; it loops on runtime.GC and never sleeps.
func TestAbandonedListingsReleaseTheirSlots(t *testing.T) {
	srv := newFake(25)
	client := startBuf(t, srv)
	var log syncLog // the collector's cleanups log on their own goroutine
	gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
		"cloudasset.ListAssets": {MaxRPS: 1e6, Burst: 1e6}, // no token waits in real time
	}}}, resilience.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	req := &assetpb.ListAssetsRequest{Parent: "projects/p1"}
	scope := Scope("projects/p1", RPCListAssets)
	// The listings are kept reachable until all 16 hold their slot, so that
	// a collection during the loop cannot release some early.
	var abandoned []any
	for range 16 {
		l := ListAssets(context.Background(), client, req, WithGovernor(gov))
		if _, err := l.Next(); err != nil { // page 1 of 3: the slot is held
			t.Fatal(err)
		}
		abandoned = append(abandoned, l)
	}
	if s := gov.Inspect(scope); s.InFlight != 16 || s.MaxInFlight != 16 {
		t.Fatalf("%d of %d slots held by the abandoned listings", s.InFlight, s.MaxInFlight)
	}
	runtime.KeepAlive(abandoned)
	for i := 0; gov.Inspect(scope).InFlight != 0; i++ {
		if i == 1000 {
			t.Fatalf("%d slots still held after %d collections", gov.Inspect(scope).InFlight, i)
		}
		runtime.GC()
	}
	items, err := ListAssets(context.Background(), client, req, WithGovernor(gov)).Collect()
	if err != nil || len(items) != 25 {
		t.Fatalf("the 17th listing: %d items, %v", len(items), err)
	}
	if got := log.String(); strings.Count(got, "dropped without End") != 1 || !strings.Contains(got, "level=WARN") ||
		!strings.Contains(got, "scope=gcp/projects/p1/*/cloudasset/ListAssets") {
		t.Fatalf("the leak was not logged once at Warn with its scope: %s", got)
	}
}

// syncLog is a log safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
