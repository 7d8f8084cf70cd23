package test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
)

// valueQuerier is a GraphQuerier that is no pointer (pacedTenants cannot
// remember it).
type valueQuerier struct{ c *armresourcegraph.Client }

func (q valueQuerier) Resources(ctx context.Context, query armresourcegraph.QueryRequest, o *armresourcegraph.ClientResourcesOptions) (armresourcegraph.ClientResourcesResponse, error) {
	return q.c.Resources(ctx, query, o)
}

// ptrQuerier is the same, as a pointer.
type ptrQuerier struct{ c *armresourcegraph.Client }

func (q *ptrQuerier) Resources(ctx context.Context, query armresourcegraph.QueryRequest, o *armresourcegraph.ClientResourcesOptions) (armresourcegraph.ClientResourcesResponse, error) {
	return q.c.Resources(ctx, query, o)
}

// A plain client that is no pointer (QueryResources cannot remember its
// tenant, so every page of it is paced in azure/*/*/resourcegraph), of
// tenant A, its page throttled three times: the page is one call, and its
// third retry is paid from the retry budget wherever its retries go, as a
// pointer client's is. Since b505bb2 each failure of such a page moves it
// to a new Guard of tenant A's scope (fetchPaced recomputes the page's
// scope from the remembered tenant, which a value client has none of,
// and the next failure's token again names another tenant than it): each
// retry is a Guard's first, free, and the budget is never paid.
func TestAValueClientsThrottledPagePaysItsThirdRetry(t *testing.T) {
	for _, kind := range []string{"pointer", "value"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				e.srv.graphPages = 1
				o := *e.base
				o.Retry = policy.RetryOptions{MaxRetries: -1}
				c, err := armresourcegraph.NewClient(tenantCred{tenantA}, &o)
				if err != nil {
					t.Fatal(err)
				}
				var q cloudgazure.GraphQuerier = valueQuerier{c}
				if kind == "pointer" {
					q = &ptrQuerier{c}
				}
				e.srv.script(routeGraph, throttled("1"), throttled("1"), throttled("1"))
				opts := append(e.opts(), cloudgazure.WithQueryLimits(cloudgazure.QueryLimits{MaxRetries: 3, Backoff: []time.Duration{time.Second}}))
				if _, err := cloudgazure.QueryResources(context.Background(), q, query, opts...); err != nil {
					t.Fatal(err)
				}
				if b := e.gov.Inspect(graphScope).RetryBudget; b != 499.1 {
					t.Errorf("%s client: retry budget %v after one page's 3 retries and its success, want 499.1 (the third retry paid)", kind, b)
				}
			})
		})
	}
}
