//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestBulkheadCapsConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{Azure: ProviderConfig{MaxConcurrency: 3}})
		sc := Scope{Provider: "azure", Account: "sub", Service: "compute"}
		var in, peak atomic.Int32
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				Do(context.Background(), sc, func(context.Context) error {
					n := in.Add(1)
					if n > peak.Load() {
						peak.Store(n)
					}
					time.Sleep(time.Second)
					in.Add(-1)
					return nil
				}, WithGovernor(g))
			})
		}
		wg.Wait()
		if p := peak.Load(); p != 3 {
			t.Fatalf("peak %d in flight, want 3", p)
		}
		used, waiting := g.provider("azure").scopes.accountBulkhead("sub").InUse()
		if used != 0 || waiting != 0 {
			t.Fatalf("bulkhead %d used %d waiting after the calls", used, waiting)
		}
	})
}

func TestBulkheadSlotReleasedWhenContextCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 1}})
		sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		hold := make(chan struct{})
		go Do(context.Background(), sc, func(context.Context) error { <-hold; return nil }, WithGovernor(g))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := Do(ctx, sc, func(context.Context) error { return nil }, WithGovernor(g))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v", err)
		}
		close(hold)
		synctest.Wait()
		used, waiting := g.provider("gcp").scopes.accountBulkhead("projects/p1").InUse()
		if used != 0 || waiting != 0 {
			t.Fatalf("%d used %d waiting", used, waiting)
		}
	})
}
