package test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// retryingQuerier is a caller's wrapper of a governed client that retries
// a failed query once itself.
type retryingQuerier struct{ c *armresourcegraph.Client }

func (q *retryingQuerier) Resources(ctx context.Context, query armresourcegraph.QueryRequest, o *armresourcegraph.ClientResourcesOptions) (armresourcegraph.ClientResourcesResponse, error) {
	r, err := q.c.Resources(ctx, query, o)
	if err != nil {
		return q.c.Resources(ctx, query, o)
	}
	return r, err
}

// A caller's wrapper of a client built with ClientOptions (no
// *GraphClient) that sends the query twice within one Resources call (its
// own retry of a fatal answer): two HTTP requests, two calls, nothing
// lost, nothing held. Since 0dcac3b the second request's per-call policy
// takes over the page's Guard again, after the first request ended it,
// and attaches a second gate to it: resilience panics ("a Guard's
// attempts already have a gate"), in a release build too.
func TestAWrapperThatSendsTheFirstPageTwiceIsTwoCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.graphPages = 1
		c, err := armresourcegraph.NewClient(fakeCred{}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		e.srv.script(routeGraph, reply{status: http.StatusBadRequest, code: "BadRequest"})
		ctx, stats := resilience.WithStats(context.Background())
		run := func() (rows []any, err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("QueryResources panicked: %v; want 2 calls, nothing lost", r)
				}
			}()
			return cloudgazure.QueryResources(ctx, &retryingQuerier{c}, query, e.opts()...)
		}
		rows, err := run()
		if err != nil || len(rows) != 2 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		if sc := e.gov.Summary(stats).Scopes[graphScope]; sc.Calls != 2 || sc.Lost() != 0 {
			t.Errorf("stats %+v for 2 HTTP requests; want 2 calls, nothing lost", sc)
		}
		if in := e.gov.Inspect(graphScope); in.InFlight != 0 || in.Waiting != 0 {
			t.Errorf("bulkhead %+v after the query, want nothing held", in)
		}
	})
}

// The same wrapper of a client of tenant A: the second request's throttle
// (Retry-After: 5) is tenant A's, recorded in its scope, as the first
// request's would be (TestADetectedPipelinesFirstPageThrottledHoldsOnlyItsTenant),
// and holds no other tenant's first page.
func TestAWrappersSecondRequestOfTheFirstPageIsItsTenants(t *testing.T) {
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
		e.srv.script(routeGraph, reply{status: http.StatusBadRequest, code: "BadRequest"}, throttled("5"))
		done := make(chan error, 1)
		go func() {
			_, err := cloudgazure.QueryResources(context.Background(), &retryingQuerier{cA}, query, e.opts()...)
			done <- err
		}()
		synctest.Wait()
		start := time.Now()
		if _, err := cloudgazure.QueryResources(context.Background(), cB, query, e.opts()...); err != nil {
			t.Error(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("tenant B's first page waited %v while the second request of tenant A's first page was throttled for 5s, want none", d)
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
