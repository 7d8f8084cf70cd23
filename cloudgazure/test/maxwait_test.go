package test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// The path of a resource group's GET, whose scope is resourcesA.
const groupPath = "/subscriptions/" + subA + "/resourcegroups/rg"

// refusedShape checks that err is a refusal as a scheduler reads it: a
// *resilience.WouldWaitError matching check, that classifies as Throttled
// and says when the scope can go.
func refusedShape(t *testing.T, err, check error, retryAfter time.Duration) *resilience.WouldWaitError {
	t.Helper()
	var ww *resilience.WouldWaitError
	if !errors.As(err, &ww) || !errors.Is(err, check) {
		t.Fatalf("err = %v, want a *resilience.WouldWaitError matching %v", err, check)
	}
	if resilience.Classify(err) != resilience.Throttled {
		t.Fatalf("%v classifies as %v", err, resilience.Classify(err))
	}
	if ra, _ := resilience.RetryAfter(err); ra < retryAfter {
		t.Fatalf("RetryAfter %v, want at least %v", ra, retryAfter)
	}
	return ww
}

// lostOnly checks that the run lost want calls of kind, and no other, in
// its stats and its ledger: every kind of loss is looked at.
func lostOnly(t *testing.T, g *resilience.Governor, stats *resilience.Stats, ledger *resilience.Ledger, kind resilience.Loss, want int) {
	t.Helper()
	tot := g.Summary(stats).Totals
	byKind := map[resilience.Loss]int64{
		resilience.LossGaveUp: tot.GaveUp, resilience.LossSkipped: tot.Rejected, resilience.LossFailed: tot.Failed,
		resilience.LossRefused: tot.Refused, resilience.LossCancelled: tot.Cancelled,
		resilience.LossErrored: tot.Errored, resilience.LossPanicked: tot.Panicked, resilience.LossDenied: tot.Denied,
	}
	if k := resilience.Loss(len(byKind)); !strings.HasPrefix(k.String(), "resilience.Loss(") {
		t.Fatalf("loss %v is not looked at", k)
	}
	for k, n := range byKind {
		w := 0
		if k == kind {
			w = want
		}
		if n != int64(w) || ledger.Count(k) != w {
			t.Errorf("%v: stats %d, ledger %d; want %d (ledger %q)", k, n, ledger.Count(k), w, ledger.Describe())
		}
	}
	if tot.Lost() != int64(want) || ledger.Lost() != want {
		t.Errorf("lost: stats %d, ledger %d; want %d", tot.Lost(), ledger.Lost(), want)
	}
}

// A request whose context carries resilience.WithMaxWait waits no longer
// than it allows, over loopback TCP: a 429 whose Retry-After is longer
// ends azcore's loop at once, with a refusal that wraps the 429, its
// header intact; the next request, while the scope is paused, is refused
// before sending. Neither is retried; the run counts two refusals, no
// give-up. Governor.Delay on ScopeOf's scope said so, changing nothing.
func TestMaxWaitRefusesOverTCP(t *testing.T) {
	e := tcpEnv(t, resilience.Config{})
	e.srv.script(routeGroupGet, throttled("60"))
	groups := e.groups(subA)
	scope := cloudgazure.ScopeOf(groupPath)
	if scope != resourcesA {
		t.Fatalf("ScopeOf = %v", scope)
	}
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "azure_resources")
	ctx = resilience.WithMaxWait(ctx, time.Second)

	start := time.Now()
	_, err := groups.Get(ctx, "rg", nil)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("ended after %v, want at once", took)
	}
	ww := refusedShape(t, err, resilience.ErrNoToken, 55*time.Second)
	var re *azcore.ResponseError
	if !errors.As(ww.Last, &re) || re.StatusCode != http.StatusTooManyRequests || re.RawResponse.Header.Get("Retry-After") != "60" {
		t.Fatalf("the refusal wraps %v, want the 429 with its Retry-After", ww.Last)
	}
	if n := e.srv.count(routeGroupGet); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	d, why := e.gov.Delay(scope)
	if !errors.Is(why, resilience.ErrNoToken) || d < 55*time.Second {
		t.Fatalf("Delay = %v, %v", d, why)
	}

	start = time.Now()
	_, err = groups.Get(ctx, "rg", nil)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
	if ww := refusedShape(t, err, resilience.ErrNoToken, 55*time.Second); ww.Last != nil {
		t.Fatalf("a refusal before sending wraps %v", ww.Last)
	}
	if n := e.srv.count(routeGroupGet); n != 1 {
		t.Fatalf("%d attempts, want the first request's alone", n)
	}
	lostOnly(t, e.gov, stats, ledger, resilience.LossRefused, 2)
	if d2, why2 := e.gov.Delay(scope); why2 != why || d2 > d {
		t.Fatalf("after the refusal: Delay = %v, %v", d2, why2)
	}
}

// In virtual time: the refusal of a retry whose Retry-After is longer
// than the request may wait comes at once, not after azcore's backoff.
func TestMaxWaitRefusesAzcoreRetryAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.script(routeVnetGet, throttled("30"))
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "azure_vnets")
		start := time.Now()
		_, err := e.vnets(subA).Get(resilience.WithMaxWait(ctx, 10*time.Second), "rg", "vnet", nil)
		if took := time.Since(start); took != 0 {
			t.Fatalf("refused after %v, want at once", took)
		}
		refusedShape(t, err, resilience.ErrNoToken, 29*time.Second)
		if n := e.srv.count(routeVnetGet); n != 1 {
			t.Fatalf("%d attempts, want 1", n)
		}
		lostOnly(t, e.gov, stats, ledger, resilience.LossRefused, 1)
		if f := e.gov.Inspect(networkA).Breaker.Failures; f != 0 {
			t.Fatalf("the refusal counted %d breaker failures", f)
		}
	})
}

// A request that may not wait is refused at once when its subscription's
// concurrency cap is full.
func TestMaxWaitRefusesAFullBulkhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		e.srv.script(routeGroupGet, reply{block: true})
		hctx, release := context.WithCancel(context.Background())
		defer release()
		go func() { _, _ = e.groups(subA).Get(hctx, "held", nil) }()
		synctest.Wait()
		scope := cloudgazure.ScopeOf("/subscriptions/" + subA + "/providers/Microsoft.Network/virtualNetworks")
		if d, why := e.gov.Delay(scope); !errors.Is(why, resilience.ErrNoSlot) || d != 0 {
			t.Fatalf("cap full: Delay = %v, %v", d, why)
		}

		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "azure_vnets")
		start := time.Now()
		_, err := e.vnets(subA).Get(resilience.WithMaxWait(ctx, 0), "rg", "vnet", nil)
		if took := time.Since(start); took != 0 {
			t.Fatalf("refused after %v, want at once", took)
		}
		refusedShape(t, err, resilience.ErrNoSlot, 0)
		if n := e.srv.count(routeVnetGet); n != 0 {
			t.Fatalf("%d requests sent", n)
		}
		lostOnly(t, e.gov, stats, ledger, resilience.LossRefused, 1)
		release()
		synctest.Wait()
		if n := freeSlots(e.gov, subALower); n != 1 {
			t.Fatalf("%d free slots, want 1", n)
		}
	})
}

// A request its context ends is lost once, as cancelled, wherever it
// was: waiting for a token before its first attempt, in azcore's backoff
// after a throttle, waiting for the scope's pause before its retry, or
// with its attempt out. The per-call policy's End does not count it again.
func TestCancelledRequestsCountedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(e *env)
		wait  time.Duration // after the request blocked, before the cancel
		sent  int           // attempts the request sent
	}{
		{"waiting for a token", func(e *env) {
			gd, _ := e.gov.Begin(context.Background(), resourcesA)
			gd.Pause(60 * time.Second)
			gd.End(nil)
		}, 0, 0},
		{"in azcore's backoff", func(e *env) {
			e.srv.forever(routeGroupGet, throttled("")) // no hint: azcore's backoff alone holds the retry
		}, 0, 1},
		{"waiting for the pause before its retry", func(e *env) {
			e.srv.forever(routeGroupGet, throttled("30"))
		}, 5 * time.Second, 1}, // past azcore's first backoff
		{"with its attempt out", func(e *env) {
			e.srv.script(routeGroupGet, reply{block: true})
		}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast()) // no token wait but the pause's
				tc.setup(e)
				groups := e.groups(subA)
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "azure_resources")
				ctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { _, err := groups.Get(ctx, "rg", nil); done <- err }()
				synctest.Wait()
				time.Sleep(tc.wait)
				synctest.Wait()
				select {
				case err := <-done:
					t.Fatalf("the request ended before the cancel: %v", err)
				default:
				}
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
				if n := e.srv.count(routeGroupGet); n != tc.sent {
					t.Fatalf("%d attempts, want %d", n, tc.sent)
				}
				lostOnly(t, e.gov, stats, ledger, resilience.LossCancelled, 1)
			})
		})
	}
}
