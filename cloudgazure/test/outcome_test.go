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
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

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
			if got := sum.Scopes[mustScope(k)].Calls; got != calls {
				t.Errorf("%s: %d calls, want %d", k, got, calls)
			}
		}
		if len(sum.Scopes) != len(want) {
			t.Errorf("scopes %v", sum.Scopes)
		}
		if sc := sum.Scopes[mustScope("azure/"+subALower+"/*/network")]; sc.Throttled != 1 || sc.Retries != 1 || sc.MinRate != 15 {
			t.Errorf("network stats %+v", sc)
		}
		msgs := strings.Join(stats.Messages(), "\n")
		if !strings.Contains(msgs, "azure/"+subALower+"/*/network: throttled 1x, slowed to 15.0 rps, paused for 1.0s, 1 retry") {
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
		if b := e.gov.Summary(nil).Breakers[networkA]; b.Failures != 1 {
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
		if b := e.gov.Summary(nil).Breakers[resourcesA]; b.State != state.Open {
			t.Fatalf("breaker %+v", b)
		}

		time.Sleep(61 * time.Second)
		e.srv.forever(routeGroupGet, reply{status: http.StatusNotFound, code: "ResourceGroupNotFound"})
		if _, err := groups.Get(ctx, "rg", nil); err == nil {
			t.Fatal("want the 404")
		}
		if b, ok := e.gov.Summary(nil).Breakers[resourcesA]; ok {
			t.Fatalf("breaker still %+v after a FATAL answer to the probe", b)
		}
		if _, err := groups.Get(ctx, "rg", nil); errors.As(err, &coe) {
			t.Fatal("closed breaker rejected a call")
		}
	})
}
