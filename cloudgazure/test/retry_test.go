package test

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/resilience"
)

// With a retry budget of 1, a request that keeps failing ends after
// 1 + 2 free + 1 budgeted attempts with a RetryBudgetExhaustedError; a
// fresh request gets its two free retries again.
func TestRetryBudgetEndsAzcoreLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(1)}})
		e.srv.forever(routeGroupGet, reply{status: http.StatusServiceUnavailable, code: "ServerBusy"})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "azure_resources")
		groups := e.groups(subA)

		_, err := groups.Get(ctx, "rg", nil)
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) {
			t.Fatalf("got %v, want a RetryBudgetExhaustedError", err)
		}
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%v does not carry the 503", err)
		}
		if n := e.srv.count(routeGroupGet); n != 4 {
			t.Fatalf("%d attempts, want 1 + 2 free + 1 budgeted = 4", n)
		}
		if b := e.gov.Inspect(resourcesA).RetryBudget; b != 0 {
			t.Fatalf("budget %v left, want 0", b)
		}

		_, err = groups.Get(ctx, "rg", nil)
		if !errors.As(err, &rbe) {
			t.Fatalf("got %v, want a RetryBudgetExhaustedError", err)
		}
		if n := e.srv.count(routeGroupGet) - 4; n != 3 {
			t.Fatalf("fresh request: %d attempts, want 1 + 2 free = 3", n)
		}
		sc := e.gov.Summary(stats).Scopes[resourcesA]
		if sc.Calls != 7 || sc.Retries != 5 || sc.GaveUp != 2 || sc.Throttled != 7 {
			t.Fatalf("stats %+v, want 7 calls, 5 retries, 2 gave up, 7 throttled", sc)
		}
		if g, _ := ledger.Counts(); g != 2 || !ledger.Degraded() {
			t.Fatalf("ledger gave up %d, want 2", g)
		}
		// The budget stopped the requests, not the service: no breaker failure.
		if b, ok := e.gov.Summary(nil).Breakers[resourcesA]; ok {
			t.Fatalf("breaker counted the budget's give-ups: %+v", b)
		}
	})
}

// Every page of a pager is a request of its own, with its own two free
// retries: with the budget empty, page 2 survives two 503s, and page 3
// ends after its third.
func TestPagerPagesGetTheirOwnFreeRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(0)}})
		busy := reply{status: http.StatusServiceUnavailable}
		e.srv.script(routeGroupList, reply{}, busy, busy, reply{}, busy, busy, busy, reply{})
		pager := e.groups(subA).NewListPager(nil)
		var names []string
		var err error
		for pager.More() {
			var page armresources.ResourceGroupsClientListResponse
			if page, err = pager.NextPage(context.Background()); err != nil {
				break
			}
			for _, g := range page.Value {
				names = append(names, *g.Name)
			}
		}
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) {
			t.Fatalf("page 3: %v, want a RetryBudgetExhaustedError", err)
		}
		if strings.Join(names, ",") != "rg-0,rg-1,rg-2,rg-3" {
			t.Fatalf("groups %v", names)
		}
		hs := e.srv.hitsOf(routeGroupList)
		if len(hs) != 7 {
			t.Fatalf("%d requests, want 1 + 3 + 3", len(hs))
		}
		if hs[6].skip != "4" {
			t.Fatalf("last request asked for %q", hs[6].skip)
		}
	})
}

// A reset connection and a body that breaks off are transient attempts:
// counted, retried by azcore (the broken response drained), and the
// request succeeds.
func TestTransportErrorRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		var closed atomic.Int32
		e.srv.script(routeVnetGet, reply{fail: reset}, reply{brokenBody: &closed})
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil); err != nil {
			t.Fatal(err)
		}
		sc := e.gov.Summary(stats).Scopes[networkA]
		if sc.Calls != 3 || sc.TransientErrors != 2 || sc.Retries != 2 || sc.Throttled != 0 {
			t.Fatalf("stats %+v, want 3 calls, 2 transient, 2 retries", sc)
		}
		if closed.Load() == 0 {
			t.Fatal("the broken response's body was never closed")
		}
	})
}

// A retry the breaker refuses ends azcore's loop with a CircuitOpenError
// that carries the answer before it.
func TestRefusedRetryCarriesLastAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{BreakerThreshold: 1}})
		e.srv.script(routeVnetGet, reply{status: http.StatusBadGateway, code: "BadGateway"})
		done := make(chan error, 1)
		go func() { _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); done <- err }()
		synctest.Wait() // the 502 is in; azcore sleeps its backoff
		// Another request gives up after a 503: the breaker opens.
		gd, _ := e.gov.Begin(context.Background(), networkA)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		busy := &azcore.ResponseError{StatusCode: http.StatusServiceUnavailable}
		gd.After(busy)
		gd.End(busy)
		err := <-done
		var coe *resilience.CircuitOpenError
		var re *azcore.ResponseError
		if !errors.As(err, &coe) || !errors.As(err, &re) || re.StatusCode != http.StatusBadGateway {
			t.Fatalf("got %v, want a CircuitOpenError carrying the 502", err)
		}
		if n := e.srv.count(routeVnetGet); n != 1 {
			t.Fatalf("%d attempts, want 1", n)
		}
	})
}

// The configured deadline (deadline_seconds: 30) bounds a request: a
// Retry-After storm ends with the last answer, its header intact, rather
// than using every retry; a retry's token wait past the deadline, and a
// context deadline closer than the hint, end the request at once.
func TestConfiguredDeadlineEndsRequest(t *testing.T) {
	gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{
		MaxRetries: ptr(3), MaxBackoffSeconds: 20, BaseDelaySeconds: 0.25, DeadlineSeconds: 30,
	}})
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, gov.Config())
		e.srv.forever(routeVnetGet, throttled("10"))
		start := time.Now()
		_, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %v, want the last 429", err)
		}
		notDeadline(t, err)
		if re.RawResponse.Header.Get("Retry-After") != "10" {
			t.Fatal("the final response lost its Retry-After header")
		}
		// Attempts at 0, 10 and 20 s (a little later each, at the halved
		// rate); waiting out the third answer's 10 s hint would pass the
		// 30 s deadline, so the request ends with the third answer rather
		// than using all 3 retries.
		if n := e.srv.count(routeVnetGet); n != 3 {
			t.Fatalf("%d attempts, want 3", n)
		}
		if d := time.Since(start); d < 20*time.Second || d > 30*time.Second {
			t.Fatalf("ended after %v, want within the 30 s deadline", d)
		}

		// A retry's token wait that would overrun the deadline ends the
		// request with the last answer, without waiting.
		time.Sleep(time.Hour)
		e.srv.script(routeVnetGet, reply{status: http.StatusInternalServerError})
		start = time.Now()
		done := make(chan error, 1)
		go func() { _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); done <- err }()
		synctest.Wait() // the 500 is in; azcore sleeps its backoff
		gd, _ := e.gov.Begin(context.Background(), networkA)
		gd.Pause(100 * time.Second)
		gd.End(nil)
		err = <-done
		if !errors.As(err, &re) || re.StatusCode != http.StatusInternalServerError {
			t.Fatalf("got %v, want the 500", err)
		}
		notDeadline(t, err)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("waited %v for a token past the deadline", d)
		}

		// A context deadline closer than the hint ends the request at once.
		e.srv.script(routeGroupGet, throttled("20"))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start = time.Now()
		_, err = e.groups(subB).Get(ctx, "rg", nil)
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %v, want the 429", err)
		}
		notDeadline(t, err)
		if d := time.Since(start); d != 0 {
			t.Fatalf("waited %v for a retry that could not be made", d)
		}
	})
}

// notDeadline fails the test when err is the core's deadline error (which
// wraps the provider's answer) or the context's, rather than the
// provider's answer alone.
func notDeadline(t *testing.T, err error) {
	t.Helper()
	var de *resilience.DeadlineExceededError
	if errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the provider's answer, not a deadline error", err)
	}
}

// The caller's StatusCodes decide what azcore retries, and so what the
// policies count: a fatal 409 the caller listed is retried (a retry
// counted) even with a Retry-After past MaxRetryDelay, whose delay headers
// are hidden from azcore as on any answer azcore retries; a 500 the caller
// did not list, which azcore returns at once, counts no retry.
func TestCallerListedStatusRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		base := *e.base
		base.Retry.StatusCodes = []int{http.StatusConflict, http.StatusTooManyRequests}
		e.base = &base
		groups := e.groups(subA)

		conflict := withHeader(reply{status: http.StatusConflict, code: "Conflict"}, "Retry-After", "120")
		e.srv.script(routeGroupGet, conflict)
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := groups.Get(ctx, "rg", nil); err != nil {
			t.Fatal(err)
		}
		if n := e.srv.count(routeGroupGet); n != 2 {
			t.Fatalf("listed 409: %d attempts, want 2", n)
		}
		if sc := e.gov.Summary(stats).Scopes[resourcesA]; sc.Calls != 2 || sc.Retries != 1 {
			t.Fatalf("listed 409: stats %+v, want 2 calls, 1 retry", sc)
		}

		e.srv.script(routeGroupGet, reply{status: http.StatusInternalServerError, code: "InternalServerError"})
		ctx, stats = resilience.WithStats(context.Background())
		_, err := groups.Get(ctx, "rg", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusInternalServerError {
			t.Fatalf("unlisted 500: got %v, want the 500", err)
		}
		if n := e.srv.count(routeGroupGet); n != 3 {
			t.Fatalf("unlisted 500: %d attempts, want 1", n-2)
		}
		if sc := e.gov.Summary(stats).Scopes[resourcesA]; sc.Calls != 1 || sc.Retries != 0 {
			t.Fatalf("unlisted 500: stats %+v, want 1 call, no retry", sc)
		}
	})
}

// azcore does not retry its last attempt: a retryable answer to it (a
// throttle, a reset connection) counts no retry and costs no budget. With
// max_retries n a request that always fails makes n+1 attempts, n retries,
// and pays a budget token for each retry after the first two.
func TestLastAttemptCountsNoRetry(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name       string
		maxRetries int
		answer     reply
	}{
		{"no retries, 429", 0, throttled("1")},
		{"2 retries, 429", 2, throttled("1")},
		{"3 retries, 429", 3, throttled("1")},
		{"2 retries, reset", 2, reply{fail: reset}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{
					MaxRetries: ptr(tc.maxRetries), RetryBudget: ptr(10),
				}})
				attempts := tc.maxRetries + 1
				for range attempts {
					e.srv.script(routeVnetGet, tc.answer)
				}
				budget := e.gov.Inspect(networkA).RetryBudget
				ctx, stats := resilience.WithStats(context.Background())
				if _, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil); err == nil {
					t.Fatal("want the last answer")
				}
				if n := e.srv.count(routeVnetGet); n != attempts {
					t.Fatalf("%d attempts, want %d", n, attempts)
				}
				sc := e.gov.Summary(stats).Scopes[networkA]
				if sc.Calls != int64(attempts) || sc.Retries != int64(tc.maxRetries) {
					t.Fatalf("stats %+v, want %d calls, %d retries", sc, attempts, tc.maxRetries)
				}
				want := float64(max(0, tc.maxRetries-2))
				if spent := budget - e.gov.Inspect(networkA).RetryBudget; spent != want {
					t.Fatalf("%v budget tokens spent, want %v", spent, want)
				}
			})
		})
	}
}

// A caller's ShouldRetry decides whether azcore retries: the policies
// count and pay for a retry only when azcore sends it, and a retry it
// sends is still bounded by the retry budget.
func TestShouldRetryDecidesTheRetry(t *testing.T) {
	withShouldRetry := func(e *env, f func(*http.Response, error) bool) {
		base := *e.base
		base.Retry.ShouldRetry = f
		e.base = &base
	}
	is := func(status int) func(*http.Response, error) bool {
		return func(resp *http.Response, _ error) bool { return resp != nil && resp.StatusCode == status }
	}
	check := func(t *testing.T, e *env, stats *resilience.Stats, budget float64, scope resilience.Scope, calls, retries int64, spent float64) {
		t.Helper()
		sc := e.gov.Summary(stats).Scopes[scope]
		if sc.Calls != calls || sc.Retries != retries {
			t.Fatalf("stats %+v, want %d calls, %d retries", sc, calls, retries)
		}
		if got := budget - e.gov.Inspect(scope).RetryBudget; math.Abs(got-spent) > 1e-9 {
			t.Fatalf("%v budget tokens spent, want %v", got, spent)
		}
	}

	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(10)}})
			withShouldRetry(e, func(*http.Response, error) bool { return false })
			e.srv.script(routeVnetGet, throttled("1"))
			budget := e.gov.Inspect(networkA).RetryBudget
			ctx, stats := resilience.WithStats(context.Background())
			_, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil)
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("got %v, want the 429", err)
			}
			if n := e.srv.count(routeVnetGet); n != 1 {
				t.Fatalf("%d attempts, want 1", n)
			}
			check(t, e, stats, budget, networkA, 1, 0, 0)
		})
	})

	t.Run("retried to the last attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(3), RetryBudget: ptr(10)}})
			withShouldRetry(e, is(http.StatusTooManyRequests))
			e.srv.forever(routeVnetGet, throttled("1"))
			budget := e.gov.Inspect(networkA).RetryBudget
			ctx, stats := resilience.WithStats(context.Background())
			if _, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil); err == nil {
				t.Fatal("want the last 429")
			}
			if n := e.srv.count(routeVnetGet); n != 4 {
				t.Fatalf("%d attempts, want 4", n)
			}
			check(t, e, stats, budget, networkA, 4, 3, 1)
		})
	})

	t.Run("a status azcore would not retry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(10)}})
			withShouldRetry(e, is(http.StatusConflict))
			e.srv.script(routeGroupGet, reply{status: http.StatusConflict, code: "Conflict"})
			budget := e.gov.Inspect(resourcesA).RetryBudget
			ctx, stats := resilience.WithStats(context.Background())
			if _, err := e.groups(subA).Get(ctx, "rg", nil); err != nil {
				t.Fatal(err)
			}
			check(t, e, stats, budget, resourcesA, 2, 1, 0)
		})
	})

	t.Run("budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(0)}})
			withShouldRetry(e, is(http.StatusServiceUnavailable))
			e.srv.forever(routeGroupGet, reply{status: http.StatusServiceUnavailable, code: "ServerBusy"})
			_, err := e.groups(subA).Get(context.Background(), "rg", nil)
			var rbe *resilience.RetryBudgetExhaustedError
			var re *azcore.ResponseError
			if !errors.As(err, &rbe) || !errors.As(err, &re) || re.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("got %v, want a RetryBudgetExhaustedError carrying the 503", err)
			}
			if n := e.srv.count(routeGroupGet); n != 3 {
				t.Fatalf("%d attempts, want 1 + 2 free", n)
			}
		})
	})
}
