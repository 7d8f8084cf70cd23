package cloudgazure_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

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
		start = time.Now()
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
		if b := e.gov.RetryBudget("azure"); b != 0 {
			t.Fatalf("budget %v left, want 0", b)
		}

		_, err = groups.Get(ctx, "rg", nil)
		if !errors.As(err, &rbe) {
			t.Fatalf("got %v, want a RetryBudgetExhaustedError", err)
		}
		if n := e.srv.count(routeGroupGet) - 4; n != 3 {
			t.Fatalf("fresh request: %d attempts, want 1 + 2 free = 3", n)
		}
		sc := e.gov.Summary(stats).Scopes[resourcesA.String()]
		if sc.Calls != 7 || sc.Retries != 5 || sc.GaveUp != 2 || sc.Throttled != 7 {
			t.Fatalf("stats %+v, want 7 calls, 5 retries, 2 gave up, 7 throttled", sc)
		}
		if g, _ := ledger.Counts(); g != 2 || !ledger.Degraded() {
			t.Fatalf("ledger gave up %d, want 2", g)
		}
		// The budget stopped the requests, not the service: no breaker failure.
		if b, ok := e.gov.Summary(nil).Breakers[resourcesA.String()]; ok {
			t.Fatalf("breaker counted the budget's give-ups: %+v", b)
		}
	})
}

// The subscription's bulkhead slot is held for one HTTP attempt and is
// back after a success, an error answer, a transport error and a
// cancellation, over real loopback sockets.
func TestBulkheadReleasedLoopback(t *testing.T) {
	e := tcpEnv(t, resilience.Config{Azure: resilience.ProviderConfig{
		MaxRetries: ptr(1), BaseDelaySeconds: 0.01,
	}})
	groups := e.groups(subA)
	ctx := context.Background()
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("%d free slots before, want 16", n)
	}

	if _, err := groups.Get(ctx, "rg", nil); err != nil {
		t.Fatal(err)
	}
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("after a success: %d free slots, want 16", n)
	}

	e.srv.script(routeGroupGet, reply{status: http.StatusNotFound, code: "ResourceGroupNotFound"})
	if _, err := groups.Get(ctx, "rg", nil); err == nil {
		t.Fatal("want the 404")
	}
	e.srv.script(routeGroupGet, reply{status: http.StatusInternalServerError}, reply{status: http.StatusInternalServerError})
	if _, err := groups.Get(ctx, "rg", nil); err == nil {
		t.Fatal("want the 500")
	}
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("after errors: %d free slots, want 16", n)
	}

	entered := make(chan string, 1)
	e.srv.mu.Lock()
	e.srv.entered = entered
	e.srv.mu.Unlock()
	e.srv.script(routeGroupGet, reply{block: true})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := groups.Get(cctx, "rg", nil)
		done <- err
	}()
	<-entered
	if n := freeSlots(e.gov, subALower); n != 15 {
		t.Fatalf("during the attempt: %d free slots, want 15", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if n := freeSlots(e.gov, subALower); n != 16 {
		t.Fatalf("after a cancellation: %d free slots, want 16", n)
	}
}

// A request cancelled while it waits, for a rate token or for a slot,
// holds nothing afterwards, and a transport error releases its slot.
func TestBulkheadReleasedWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		groups := e.groups(subA)

		// Waiting for a slot: the only slot is held by a blocked request.
		e.srv.script(routeGroupGet, reply{block: true})
		ctx1, cancel1 := context.WithCancel(context.Background())
		done1 := make(chan error, 1)
		go func() { _, err := groups.Get(ctx1, "held", nil); done1 <- err }()
		synctest.Wait()
		ctx2, cancel2 := context.WithCancel(context.Background())
		done2 := make(chan error, 1)
		go func() { _, err := groups.Get(ctx2, "queued", nil); done2 <- err }()
		synctest.Wait()
		if n := e.srv.count(routeGroupGet); n != 1 {
			t.Fatalf("%d requests reached the server, want 1 (the other waits for the slot)", n)
		}
		cancel2()
		if err := <-done2; !errors.Is(err, context.Canceled) {
			t.Fatalf("queued request: %v", err)
		}
		cancel1()
		if err := <-done1; !errors.Is(err, context.Canceled) {
			t.Fatalf("held request: %v", err)
		}
		if n := freeSlots(e.gov, subALower); n != 1 {
			t.Fatalf("%d free slots, want 1", n)
		}

		// Waiting for a token: the scope is paused.
		gd, _ := e.gov.Begin(context.Background(), resourcesA)
		gd.Pause(30 * time.Second)
		gd.End()
		before := e.srv.count(routeGroupGet)
		ctx3, cancel3 := context.WithCancel(context.Background())
		done3 := make(chan error, 1)
		go func() { _, err := groups.Get(ctx3, "rg", nil); done3 <- err }()
		synctest.Wait()
		cancel3()
		if err := <-done3; !errors.Is(err, context.Canceled) {
			t.Fatalf("request waiting for a token: %v", err)
		}
		if n := e.srv.count(routeGroupGet); n != before {
			t.Fatal("the request was sent during the pause")
		}
		if n := freeSlots(e.gov, subALower); n != 1 {
			t.Fatalf("%d free slots after a cancelled wait, want 1", n)
		}

		// A transport error.
		time.Sleep(time.Minute)
		e.srv.script(routeGroupGet, reply{fail: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}})
		if _, err := groups.Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		if n := freeSlots(e.gov, subALower); n != 1 {
			t.Fatalf("%d free slots after a reset connection, want 1", n)
		}
	})
}

// The client's retry options come from the governor's configuration (the
// spec's 8 retries, 60 s max backoff), the caller's options are copied,
// never modified, and the configured deadline bounds the request.
func TestClientRetryOptions(t *testing.T) {
	def := newGov(t, resilience.Config{})
	o := cloudgazure.ClientOptions(nil, cloudgazure.WithGovernor(def))
	if o.Retry.MaxRetries != 8 || o.Retry.MaxRetryDelay != 60*time.Second || o.Retry.RetryDelay != 500*time.Millisecond {
		t.Fatalf("default retry options %+v, want 8 retries, 60 s max delay, 0.5 s delay", o.Retry)
	}
	if len(o.PerCallPolicies) != 1 || len(o.PerRetryPolicies) != 1 {
		t.Fatalf("policies %d per call, %d per retry, want 1 and 1", len(o.PerCallPolicies), len(o.PerRetryPolicies))
	}
	if s := def.RetrySettings("azure"); s.Deadline != 900*time.Second {
		t.Fatalf("default deadline %v, want 900 s", s.Deadline)
	}

	gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{
		MaxRetries: ptr(3), MaxBackoffSeconds: 20, BaseDelaySeconds: 0.25, DeadlineSeconds: 30,
	}})
	mine := policy.Policy(nil)
	base := &arm.ClientOptions{DisableRPRegistration: true}
	base.Retry.TryTimeout = time.Minute
	base.PerCallPolicies = make([]policy.Policy, 1, 4)
	base.PerCallPolicies[0] = mine
	o = cloudgazure.ClientOptions(base, cloudgazure.WithGovernor(gov))
	if o.Retry.MaxRetries != 3 || o.Retry.MaxRetryDelay != 20*time.Second || o.Retry.RetryDelay != 250*time.Millisecond || o.Retry.TryTimeout != time.Minute {
		t.Fatalf("configured retry options %+v", o.Retry)
	}
	if !o.DisableRPRegistration || len(o.PerCallPolicies) != 2 || len(base.PerCallPolicies) != 1 ||
		base.PerCallPolicies[:2][1] != nil || base.Retry.MaxRetries != 0 || len(base.PerRetryPolicies) != 0 {
		t.Fatalf("the caller's options were changed: %+v", base)
	}
	if again := cloudgazure.ClientOptions(o, cloudgazure.WithGovernor(gov)); len(again.PerCallPolicies) != 2 || len(again.PerRetryPolicies) != 1 {
		t.Fatal("options governed twice")
	}
	none := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(0)}})
	if r := cloudgazure.RetryOptions(cloudgazure.WithGovernor(none)); r.MaxRetries != -1 {
		t.Fatalf("max_retries 0 gave azcore MaxRetries %d, want -1 (azcore reads 0 as 3)", r.MaxRetries)
	}

	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, gov.Config())
		e.srv.forever(routeVnetGet, throttled("10"))
		start := time.Now()
		_, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %v, want the last 429", err)
		}
		if re.RawResponse.Header.Get("Retry-After") != "10" {
			t.Fatal("the final response lost its Retry-After header")
		}
		// Attempts at 0, 10, 20 s; a fourth at 30 s would leave no room
		// for the next hint within the 30 s deadline, so the request ends
		// with the third answer rather than using all 3 retries.
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
		gd.End()
		if err := <-done; !errors.As(err, &re) || re.StatusCode != http.StatusInternalServerError {
			t.Fatalf("got %v, want the 500", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("waited %v for a token past the deadline", d)
		}

		// A context deadline closer than the hint ends the request at once.
		e.srv.script(routeGroupGet, throttled("20"))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start = time.Now()
		if _, err := e.groups(subB).Get(ctx, "rg", nil); !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %v, want the 429", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("waited %v for a retry that could not be made", d)
		}
	})
}

// Stats are keyed by service scope, azure/<subscription, lower-case>/*/<namespace>;
// one call is counted per HTTP attempt.
func TestStatsKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		e.srv.script(routeVnetGet, throttled("1"))
		if _, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil); err != nil {
			t.Fatal(err)
		}
		pager := e.groups(subB).NewListPager(nil)
		for pager.More() {
			if _, err := pager.NextPage(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cloudgazure.QueryResources(ctx, e.graph(), armresourcegraph.QueryRequest{Query: ptr("Resources")}); err != nil {
			t.Fatal(err)
		}
		sum := e.gov.Summary(stats)
		want := map[string]int64{
			"azure/" + subALower + "/*/network": 2, // the 429 and its retry
			"azure/" + subB + "/*/resources":    3, // three pages of five groups
			"azure/*/*/resourcegraph":           3, // three pages
		}
		for k, calls := range want {
			if got := sum.Scopes[k].Calls; got != calls {
				t.Errorf("%s: %d calls, want %d", k, got, calls)
			}
		}
		if len(sum.Scopes) != len(want) {
			t.Errorf("scopes %v", sum.Scopes)
		}
		if sc := sum.Scopes["azure/"+subALower+"/*/network"]; sc.Throttled != 1 || sc.Retries != 1 || sc.MinRateRPS != 15 {
			t.Errorf("network stats %+v", sc)
		}
		msgs := strings.Join(stats.Messages(), "\n")
		if !strings.Contains(msgs, "azure/"+subALower+"/*/network: throttled 1x, slowed to 15.0 rps, 1 retry, waited ") {
			t.Errorf("messages:\n%s", msgs)
		}
	})
}

// A service that still fails after azcore's retries marks the task's
// ledger PARTIAL, with a "throttled: " reason naming the scope, and counts
// toward the breaker.
func TestFailedServiceMarksLedgerPartial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2)}})
		e.srv.forever(routeVnetList, throttled("2"))
		ctx, ledger := resilience.WithLedger(context.Background(), "azure_network")
		pager := e.vnets(subA).NewListAllPager(nil)
		_, err := pager.NextPage(ctx)
		if err == nil {
			t.Fatal("want an error")
		}
		if n := e.srv.count(routeVnetList); n != 3 {
			t.Fatalf("%d attempts, want 1 + 2 retries", n)
		}
		if msg := resilience.DescribeError(err); !strings.HasPrefix(msg, "throttled: ") {
			t.Fatalf("DescribeError = %q", msg)
		}
		if !ledger.Degraded() {
			t.Fatal("ledger not degraded: the coverage record would not be PARTIAL")
		}
		if d := ledger.Describe(); !strings.HasPrefix(d, "throttled: 1 call(s) gave up after retries") {
			t.Fatalf("ledger says %q", d)
		}
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.RawResponse.Header.Get("Retry-After") != "2" {
			t.Fatalf("%v: the final response lost its Retry-After header", err)
		}
		if r := ledger.Reasons(); len(r) != 1 || !strings.HasPrefix(r[0], "azure/"+subALower+"/*/network: throttled: ") {
			t.Fatalf("reasons %q", r)
		}
		if b := e.gov.Summary(nil).Breakers[networkA.String()]; b.Failures != 1 {
			t.Fatalf("breaker %+v, want 1 failure", b)
		}
	})
}

// Five requests that fail after their retries open the scope's breaker:
// the next one is rejected without being sent and recorded as skipped.
// After the cooldown one probe goes; a FATAL answer (404) proves the
// service reachable and closes the half-open breaker.
func TestBreakerOpensAndFatalAnswerCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(0)}})
		groups := e.groups(subA)
		ctx, ledger := resilience.WithLedger(context.Background(), "azure_resources")
		e.srv.forever(routeGroupGet, reply{status: http.StatusInternalServerError, code: "InternalServerError"})
		for range 5 {
			if _, err := groups.Get(ctx, "rg", nil); err == nil {
				t.Fatal("want the 500")
			}
		}
		_, err := groups.Get(ctx, "rg", nil)
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("got %v, want a CircuitOpenError", err)
		}
		if n := e.srv.count(routeGroupGet); n != 5 {
			t.Fatalf("%d attempts reached the server, want 5", n)
		}
		if _, skipped := ledger.Counts(); skipped != 1 {
			t.Fatalf("%d skipped, want 1", skipped)
		}
		if b := e.gov.Summary(nil).Breakers[resourcesA.String()]; b.State != "open" {
			t.Fatalf("breaker %+v", b)
		}

		time.Sleep(61 * time.Second)
		e.srv.forever(routeGroupGet, reply{status: http.StatusNotFound, code: "ResourceGroupNotFound"})
		if _, err := groups.Get(ctx, "rg", nil); err == nil {
			t.Fatal("want the 404")
		}
		if b, ok := e.gov.Summary(nil).Breakers[resourcesA.String()]; ok {
			t.Fatalf("breaker still %+v after a FATAL answer to the probe", b)
		}
		if _, err := groups.Get(ctx, "rg", nil); errors.As(err, &coe) {
			t.Fatal("closed breaker rejected a call")
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
		if st := e.gov.BucketState(networkA); st.PausedFor != 0 || st.RateRPS != 30 {
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
