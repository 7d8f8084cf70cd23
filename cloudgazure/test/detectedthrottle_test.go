package test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// A client built with ClientOptions (no *GraphClient) whose token names
// tenant A, its first page throttled (Retry-After: 5): as for a plain
// client (TestAClientsFirstPageThrottledHoldsOnlyItsTenant), the throttle
// is tenant A's and holds no other tenant's first page. The per-call
// policy takes the page's Guard over in azure/*/*/resourcegraph (0dcac3b),
// and b505bb2 moves only a plain client's failed page to its tenant's
// scope: tenant B's first page waits 5 s (before 0dcac3b too, when the
// pipeline's own Guard went in the helper's scope).
func TestADetectedPipelinesFirstPageThrottledHoldsOnlyItsTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, fast())
		e.srv.graphPages = 1
		cA, err := armresourcegraph.NewClient(tenantCred{tenantA}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		o := *e.base
		o.Retry = policy.RetryOptions{MaxRetries: -1}
		cB, err := armresourcegraph.NewClient(tenantCred{tenantB}, &o)
		if err != nil {
			t.Fatal(err)
		}
		e.srv.script(routeGraph, throttled("5"))
		done := make(chan error, 1)
		go func() {
			_, err := cloudgazure.QueryResources(context.Background(), cA, query, e.opts()...)
			done <- err
		}()
		synctest.Wait()
		start := time.Now()
		if _, err := cloudgazure.QueryResources(context.Background(), cB, query, e.opts()...); err != nil {
			t.Error(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("tenant B's first page waited %v while tenant A's (ClientOptions client) first page was throttled for 5s, want none", d)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		tenantGraph := resilience.Scope{Provider: "azure", Account: "tenants/" + strings.ToLower(tenantA), Service: "resourcegraph"}
		if got := e.gov.Summary(nil).Scopes; got[graphScope].Throttled != 0 || got[tenantGraph].Throttled != 1 {
			t.Errorf("throttles: %v %+v, %v %+v; want tenant A's one in its scope", graphScope, got[graphScope], tenantGraph, got[tenantGraph])
		}
	})
}

// The same client's first page answered with Resource Graph's quota spent
// (x-ms-user-quota-remaining: 0, resets after 5 s): the quota is tenant
// A's, and its pause holds tenant A's next query and not tenant B's first
// page, as for a plain client. The per-call policy set the pause on the
// page's Guard, in azure/*/*/resourcegraph.
func TestADetectedPipelinesFirstPageSpentQuotaHoldsOnlyItsTenant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, fast())
		e.srv.graphPages = 1
		cA, err := armresourcegraph.NewClient(tenantCred{tenantA}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		o := *e.base
		o.Retry = policy.RetryOptions{MaxRetries: -1}
		cB, err := armresourcegraph.NewClient(tenantCred{tenantB}, &o)
		if err != nil {
			t.Fatal(err)
		}
		e.srv.script(routeGraph, withHeader(reply{}, "x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:05"))
		if _, err := cloudgazure.QueryResources(context.Background(), cA, query, e.opts()...); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := cloudgazure.QueryResources(context.Background(), cB, query, e.opts()...); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("tenant B's first page waited %v after tenant A's (ClientOptions client) first page spent its quota for 5s, want none", d)
		}
		start = time.Now()
		if _, err := cloudgazure.QueryResources(context.Background(), cA, query, e.opts()...); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 5*time.Second {
			t.Errorf("tenant A's next query waited %v after its first page spent its quota for 5s, want 5s", d)
		}
	})
}
