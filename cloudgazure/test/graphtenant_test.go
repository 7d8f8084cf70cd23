package test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Resource Graph's quota is a user's (a security principal's, of the
// tenant its token was issued in), and Resource Manager's tenant buckets
// a query's answer reports are its tenant's: a query whose token names
// its tenant is governed in its tenant's account, in the scope
// azure/tenants/<tenant id>/*/resourcegraph, so that one tenant's spent
// tenant writes or 429 hold that tenant's next queries and no other
// tenant's, and a tenant's low tenant reads (read on any of its
// tenant-level requests) hold its next queries too, as they did when all
// tenant-level requests shared one account. The same holds of a query
// whose pages QueryResources paces for a client it does not govern, once
// a page has shown which tenant the client's token names. With the
// account bucket turned off, a pause of the tenant's account falls back
// to the scope of the query that asked for it, its tenant's Resource
// Graph scope, which holds the tenant's next query.
func TestResourceGraphIsGovernedPerTenant(t *testing.T) {
	governed := func(e *env, tid string) cloudgazure.GraphQuerier {
		c, err := cloudgazure.NewGraphClient(tenantCred{tid}, e.base, e.opts()...)
		if err != nil || !c.Governed() {
			e.t.Fatalf("graph client: %v, governed %v", err, c.Governed())
		}
		return c
	}
	type key struct {
		e   *env
		tid string
	}
	plainClients := map[key]*armresourcegraph.Client{}
	plain := func(e *env, tid string) cloudgazure.GraphQuerier {
		// One client per tenant, as a program keeps its clients.
		if c := plainClients[key{e, tid}]; c != nil {
			return c
		}
		o := *e.base
		o.Retry = policy.RetryOptions{MaxRetries: -1}
		c, err := armresourcegraph.NewClient(tenantCred{tid}, &o)
		if err != nil {
			e.t.Fatal(err)
		}
		plainClients[key{e, tid}] = c
		return c
	}
	tenantGet := func(e *env, tid string) error {
		c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, tenantCred{tid}, e.base, e.opts()...)
		if err != nil {
			return err
		}
		_, err = c.GetAtTenantScope(context.Background(), "Microsoft.Compute", nil)
		return err
	}
	for _, kind := range []struct {
		name   string
		client func(e *env, tid string) cloudgazure.GraphQuerier
	}{{"a *GraphClient", governed}, {"a client QueryResources paces", plain}} {
		q := func(e *env, tid string) error {
			_, err := cloudgazure.QueryResources(context.Background(), kind.client(e, tid), query, e.opts()...)
			return err
		}
		// warm has each tenant's client query once, with nothing to
		// report: a client QueryResources paces shows its tenant then.
		warm := func(e *env) {
			e.srv.graphPages = 1
			for _, tid := range []string{tenantA, tenantB} {
				if err := q(e, tid); err != nil {
					e.t.Fatal(err)
				}
			}
		}
		t.Run(kind.name+", tenant A's query leaves 9 tenant writes", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				warm(e)
				e.srv.okHeaders(routeGraph, "x-ms-ratelimit-remaining-tenant-writes", "9")
				if err := q(e, tenantA); err != nil {
					t.Fatal(err)
				}
				e.srv.okHeaders(routeGraph)
				start := time.Now()
				if err := q(e, tenantB); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("tenant B's query waited %v after tenant A's query left 9 tenant writes, want none", d)
				}
				if err := q(e, tenantA); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); !near(d, time.Second, time.Millisecond) {
					t.Errorf("tenant A's next query waited %v after its query left 9 tenant writes, want 1s", d)
				}
			})
		})
		t.Run(kind.name+", tenant A's tenant-level request leaves 24 tenant reads", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				warm(e)
				e.srv.okHeaders(routeProvider, "x-ms-ratelimit-remaining-tenant-reads", "24")
				if err := tenantGet(e, tenantA); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := q(e, tenantB); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("tenant B's query waited %v after tenant A's request left 24 tenant reads, want none", d)
				}
				if err := q(e, tenantA); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); !near(d, time.Second, time.Millisecond) {
					t.Errorf("tenant A's query waited %v after its tenant-level request left 24 tenant reads, want 1s", d)
				}
			})
		})
		t.Run(kind.name+", tenant A's query throttled", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				warm(e)
				e.srv.graphPages = 2
				e.srv.script(routeGraph, reply{}, withHeader(throttled("5"), "x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:05"))
				done := make(chan error, 1)
				go func() { done <- q(e, tenantA) }()
				synctest.Wait() // tenant A's second page throttled, its retry waiting
				start := time.Now()
				if err := q(e, tenantB); err != nil {
					t.Error(err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("tenant B's query waited %v while tenant A's was throttled for 5s, want none", d)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				// The warm queries, tenant A's two pages, tenant B's two,
				// tenant A's retry.
				if hs := e.srv.hitsOf(routeGraph); len(hs) != 7 || gap(hs, 3, 6) < 5*time.Second {
					t.Errorf("tenant A's retry: hits %v, want the 7th 5s after the 4th, the throttled page", hs)
				}
			})
		})
		t.Run(kind.name+", tenant A's query leaves 24 tenant reads, no account bucket", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := fast()
				off := 0.0
				cfg.Azure.AccountMaxRPS, cfg.Azure.AccountBurst = &off, 0
				e := memEnv(t, cfg)
				warm(e)
				e.srv.okHeaders(routeGraph, "x-ms-ratelimit-remaining-tenant-reads", "24")
				if err := q(e, tenantA); err != nil {
					t.Fatal(err)
				}
				e.srv.okHeaders(routeGraph)
				start := time.Now()
				if err := q(e, tenantB); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("tenant B's query waited %v after tenant A's query left 24 tenant reads, want none", d)
				}
				if err := q(e, tenantA); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); !near(d, time.Second, time.Millisecond) {
					t.Errorf("tenant A's next query waited %v after its query left 24 tenant reads (account bucket off), want 1s", d)
				}
			})
		})
	}
}

// A client built with ClientOptions that is no *GraphClient is paced by
// QueryResources on its first page, and its pipeline takes the helper's
// Guard over, in the helper's scope whatever the tenant its token names:
// the client's first page is paced in azure/*/*/resourcegraph (the helper
// has not seen its token yet), and when the helper took that scope's
// half-open probe, the pipeline goes on as the probe, so that the page's
// success closes the breaker and the next query of the scope goes. Later queries of the
// client go in its tenant's scope.
func TestQueryResourcesDetectedPipelineOfATenantSharesTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(3), BreakerThreshold: 1}}
		e := memEnv(t, cfg)
		c, err := armresourcegraph.NewClient(tenantCred{tenantA}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		// A query without a tenant given up after its 3 retries opens
		// the shared scope's breaker; after its cooldown the next call is
		// its half-open probe.
		e.srv.script(routeGraph, throttled("1"), throttled("1"), throttled("1"), throttled("1"))
		if _, err := cloudgazure.QueryResources(context.Background(), e.graph(), query, e.opts()...); err == nil {
			t.Fatal("the scripted 429s did not fail the query")
		}
		time.Sleep(e.gov.Inspect(graphScope).Breaker.Wait)
		ctx, stats := resilience.WithStats(context.Background())
		if rows, err := cloudgazure.QueryResources(ctx, c, query, e.opts()...); err != nil || len(rows) != 6 {
			t.Fatalf("tenant A's query: %d rows, %v; want the 6 rows of 3 pages", len(rows), err)
		}
		if b := e.gov.Inspect(graphScope).Breaker; b.State != state.Closed {
			t.Errorf("breaker of %v %+v after tenant A's first page, its probe, succeeded; want closed", graphScope, b)
		}
		if rows, err := cloudgazure.QueryResources(context.Background(), e.graph(), query, e.opts()...); err != nil || len(rows) != 6 {
			t.Errorf("the next query without a tenant: %d rows, %v", len(rows), err)
		}
		tenantGraph := resilience.Scope{Provider: "azure", Account: "tenants/" + strings.ToLower(tenantA), Service: "resourcegraph"}
		if got := e.gov.Summary(stats).Scopes; got[graphScope].Calls != 1 || got[tenantGraph].Calls != 2 {
			t.Errorf("tenant A's query: %+v; want its first page in %v (1 call), the other two in %v", got, graphScope, tenantGraph)
		}
	})
}
