package cloudgazure_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"


	"github.com/cloudg/cloudg/resilience"
)

// A 429 with Retry-After: 4 on a network URL halves the network scope (30
// rps) to 15 and pauses it for 4 s; the retry goes after the pause and
// succeeds.
func TestThrottledNetworkHalvesAndPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.script(routeVnetGet, throttled("4"))
		vnets := e.vnets(subA)
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := vnets.Get(context.Background(), "rg", "vnet-0", nil)
			done <- err
		}()
		synctest.Wait() // the 429 is in; the request waits to retry
		st := e.gov.BucketState(networkA)
		if st.CeilingRPS != 30 || st.RateRPS != 15 {
			t.Fatalf("network bucket %+v, want rate 15 of 30", st)
		}
		if st.PausedFor != 4*time.Second {
			t.Fatalf("network paused for %v, want 4s", st.PausedFor)
		}
		if other := e.gov.BucketState(resourcesA); other.RateRPS != other.CeilingRPS || other.PausedFor != 0 {
			t.Fatalf("resources scope touched: %+v", other)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		hs := e.srv.hitsOf(routeVnetGet)
		if len(hs) != 2 {
			t.Fatalf("%d attempts, want 2", len(hs))
		}
		if d := gap(hs, 0, 1); d < 4*time.Second || d > 5*time.Second {
			t.Fatalf("retry after %v, want 4s..5s", d)
		}
		if hs[0].at != start {
			t.Fatalf("first attempt waited %v", hs[0].at.Sub(start))
		}
	})
}
