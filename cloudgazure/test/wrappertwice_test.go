package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

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
