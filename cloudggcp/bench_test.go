package cloudggcp

import (
	"context"
	"testing"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
)

// synthIter stands for a GAPIC iterator; its page fetch resolves the call
// options the way gax.Invoke does for every page.
type synthIter struct {
	InternalFetch func(int, string) ([]int, string, error)
}

func (s *synthIter) Next() (int, error)           { return 0, iterator.Done }
func (s *synthIter) PageInfo() *iterator.PageInfo { return nil }

func synthListing(gov *resilience.Governor) *Listing[int] {
	page := []int{1, 2, 3}
	cs := new(gax.CallSettings)
	return newListing(context.Background(), Scope("projects/p1", "Synthetic"), []Option{WithGovernor(gov)},
		func(opts ...gax.CallOption) (pageIterator[int], *func(int, string) ([]int, string, error)) {
			it := &synthIter{}
			it.InternalFetch = func(int, string) ([]int, string, error) {
				*cs = gax.CallSettings{}
				for _, o := range opts {
					o.Resolve(cs)
				}
				return page, "next", nil
			}
			return it, &it.InternalFetch
		})
}

func fastGov(tb testing.TB) *resilience.Governor {
	return newGov(tb, resilience.Config{GCP: resilience.ProviderConfig{MaxRPS: 1e9, Burst: 1e9,
		Services: map[string]resilience.ServiceConfig{"cloudasset.ListAssets": {MaxRPS: 1e9, Burst: 1e9}}}})
}

// The governance of a further page (count, token, the retry state's reset,
// the call options gax resolves) allocates nothing.
func TestPageOverheadAllocatesNothing(t *testing.T) {
	l := synthListing(fastGov(t))
	if _, _, err := l.fetchPage(10, ""); err != nil { // the first page: breaker, slot
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, _, err := l.fetchPage(10, "t"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per page", allocs)
	}
	l.Close()
}

func BenchmarkPageOverhead(b *testing.B) {
	l := synthListing(fastGov(b))
	defer l.Close()
	l.fetchPage(10, "")
	b.ReportAllocs()
	for b.Loop() {
		l.fetchPage(10, "t")
	}
}

// A listing of 100 assets in pages of 10 over a 127.0.0.1 socket, with the
// SDK's iterator alone and with the paced listing (rates high enough that
// nothing waits: the cost of governing, not of pacing).
func BenchmarkListing(b *testing.B) {
	srv := newFake(100)
	client := startTCP(b, srv)
	gov := fastGov(b)
	ctx := context.Background()
	req := &assetpb.ListAssetsRequest{Parent: "projects/p1", PageSize: 10}
	drain := func(next func() (*assetpb.Asset, error)) {
		n := 0
		for {
			_, err := next()
			if err == iterator.Done {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 100 {
			b.Fatalf("%d items", n)
		}
	}
	b.Run("ungoverned", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			drain(client.ListAssets(ctx, req).Next)
		}
	})
	b.Run("governed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			drain(ListAssets(ctx, client, req, WithGovernor(gov)).Next)
		}
	})
}
