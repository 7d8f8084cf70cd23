package test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/cloudg/cloudg/cloudgazure"
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
		st := e.gov.Inspect(networkA).Leaf
		if st.Ceiling != 30 || st.Rate != 15 {
			t.Fatalf("network bucket %+v, want rate 15 of 30", st)
		}
		if st.Paused != 4*time.Second {
			t.Fatalf("network paused for %v, want 4s", st.Paused)
		}
		if other := e.gov.Inspect(resourcesA).Leaf; other.Rate != other.Ceiling || other.Paused != 0 {
			t.Fatalf("resources scope touched: %+v", other)
		}
		if n := freeSlots(e.gov, subALower); n != 16 {
			t.Fatalf("%d free slots while the request waits to retry, want 16 (a slot is held per attempt)", n)
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

// azcore alone gives up at once when Retry-After exceeds MaxRetryDelay
// (60 s); the governed client waits it out (capped at 300 s) and succeeds.
func TestRetryAfterBeyondMaxRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.script(routeGroupGet, throttled("120"))
		plain := e.plainGroups(subB, cloudgazure.RetryOptions(cloudgazure.WithGovernor(e.gov)))
		_, err := plain.Get(context.Background(), "rg", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("plain azcore: %v, want the 429", err)
		}
		if n := e.srv.count(routeGroupGet); n != 1 {
			t.Fatalf("plain azcore made %d attempts, want 1 (it gives up on Retry-After > MaxRetryDelay)", n)
		}

		e.srv.script(routeGroupGet, throttled("120"))
		groups := e.groups(subA)
		start := time.Now()
		if _, err := groups.Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		hs := e.srv.hitsOf(routeGroupGet)[1:]
		if len(hs) != 2 || hs[0].at != start || gap(hs, 0, 1) < 120*time.Second || gap(hs, 0, 1) > 121*time.Second {
			t.Fatalf("governed attempts %v, want 2 about 120 s apart", hs)
		}

		// A bogus hint is capped at 300 s.
		e.srv.script(routeGroupGet, throttled("3600"))
		if _, err := groups.Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		hs = e.srv.hitsOf(routeGroupGet)[3:]
		if len(hs) != 2 || gap(hs, 0, 1) < 300*time.Second || gap(hs, 0, 1) > 301*time.Second {
			t.Fatalf("attempts %v, want 2 about 300 s apart", hs)
		}
	})
}

// A retry never goes sooner than the governor allows: two requests of one
// scope are throttled together, one with Retry-After: 10, the other with
// Retry-After: 1; azcore would retry the second after 1 s, the governed
// client holds both until the scope's pause ends.
func TestRetryNotSoonerThanGovernor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.script(routeVnetGet, throttled("10"), throttled("1"))
		vnets := e.vnets(subA)
		start := time.Now()
		errs := make(chan error, 2)
		for _, name := range []string{"a", "b"} {
			go func() {
				_, err := vnets.Get(context.Background(), "rg", name, nil)
				errs <- err
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		hs := e.srv.hitsOf(routeVnetGet)
		if len(hs) != 4 {
			t.Fatalf("%d attempts, want 4", len(hs))
		}
		for _, h := range hs[2:] {
			if d := h.at.Sub(start); d < 10*time.Second {
				t.Fatalf("a retry went after %v, before the scope's 10 s pause ended", d)
			}
		}
	})
}

// A transient answer's Retry-After holds that request only: azcore would
// give up on 90 s (over MaxRetryDelay); the request waits it out, while
// the scope is not paused for other requests.
func TestTransientRetryAfterHoldsRequestOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.script(routeVnetGet, withHeader(reply{status: http.StatusInternalServerError}, "Retry-After", "90"))
		vnets := e.vnets(subA)
		start := time.Now()
		done := make(chan error, 1)
		go func() { _, err := vnets.Get(context.Background(), "rg", "slow", nil); done <- err }()
		synctest.Wait()
		if st := e.gov.Inspect(networkA).Leaf; st.Paused != 0 || st.Rate != 30 {
			t.Fatalf("a transient answer slowed the scope: %+v", st)
		}
		if _, err := vnets.Get(context.Background(), "rg", "other", nil); err != nil || time.Since(start) != 0 {
			t.Fatalf("another request of the scope waited %v (%v)", time.Since(start), err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		hs := e.srv.hitsOf(routeVnetGet)
		if len(hs) != 3 || gap(hs, 0, 2) < 90*time.Second || gap(hs, 0, 2) > 91*time.Second {
			t.Fatalf("attempts %v, want the retry 90 s after the 500", hs)
		}
	})
}

// A caller's TryTimeout bounds an attempt on the wire, not the governor's
// waits before it: a 429 with Retry-After: 20 under a TryTimeout of 10 s is
// waited out and retried, as plain azcore would (20 s < MaxRetryDelay).
func TestTryTimeoutDoesNotCutTheGovernorsWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		base := *e.base
		base.Retry.TryTimeout = 10 * time.Second
		e.base = &base
		e.srv.script(routeVnetGet, throttled("20"))
		start := time.Now()
		if _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); err != nil {
			t.Fatalf("%v after %v", err, time.Since(start))
		}
		hs := e.srv.hitsOf(routeVnetGet)
		if len(hs) != 2 || gap(hs, 0, 1) < 20*time.Second {
			t.Fatalf("attempts %v, want 2, at least 20 s apart", hs)
		}
	})
}

// The calls waiting out a subscription pause leave at the subscription's
// 20 rps from its end, not all at once with the burst of 200 the bucket
// held before it: 1.05, 1.10, 1.15 and 1.20 s.
func TestCallsQueuedBehindTheSubscriptionPauseStagger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.okHeaders(routeGroupGet, "x-ms-ratelimit-remaining-subscription-reads", "24")
		start := time.Now()
		if _, err := e.groups(subA).Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		vnets := e.vnets(subA)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := vnets.Get(context.Background(), "rg", "vnet", nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		hs := e.srv.hitsOf(routeVnetGet)
		if len(hs) != 4 {
			t.Fatalf("%d calls after the pause, want 4", len(hs))
		}
		for i, h := range hs {
			if want := time.Second + time.Duration(i+1)*time.Second/20; !near(h.at.Sub(start), want, time.Millisecond) {
				t.Errorf("call %d sent %v after the pause began, want %v", i+1, h.at.Sub(start), want)
			}
		}
	})
}

// x-ms-ratelimit-remaining-subscription-reads under 25 pauses the whole
// subscription (every resource provider) for 1 s, and no other
// subscription; 25 itself pauses nothing.
func TestLowRemainingReadsPauseSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.okHeaders(routeGroupGet, "x-ms-ratelimit-remaining-subscription-reads", "24")
		if _, err := e.groups(subA).Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := e.groups(subB).Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("subscription B waited %v", d)
		}
		if _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < time.Second || d > 1100*time.Millisecond {
			t.Fatalf("subscription A's network call waited %v, want 1 s", d)
		}

		time.Sleep(time.Second) // the subscription's bucket refills after the pause
		e.srv.okHeaders(routeGroupGet, "x-ms-ratelimit-remaining-subscription-reads", "25")
		if _, err := e.groups(subA).Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("25 remaining reads paused subscription A for %v", d)
		}
	})
}
