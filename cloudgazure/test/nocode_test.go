package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// An error answer whose body names no code, on a status on no list (400),
// is classified by its message: "Throttling: Rate exceeded" is throttling.
// The caller's *azcore.ResponseError classifies so, and so does the
// governed client's per-retry policy, which sees the same answer: the
// scope's rate is halved, and since azcore does not retry a 400 the
// request is a give-up that counts towards the breaker. The same answer
// with an error code is decided by its code (Fatal), however its message
// reads: the policy, which reads a 429's or a 503's status alone, does not
// hide the code of an answer its status says nothing about.
func TestAnswerWithoutCodeIsClassifiedByItsMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		rateLimited := reply{status: http.StatusBadRequest, noCode: true, msg: "Throttling: Rate exceeded"}

		plain := e.plainGroups(subA, policy.RetryOptions{MaxRetries: -1})
		e.srv.script(routeGroupGet, rateLimited)
		_, err := plain.Get(context.Background(), "rg", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.ErrorCode != "" || re.StatusCode != http.StatusBadRequest {
			t.Fatalf("got %v, want a 400 without a code", err)
		}
		if k := resilience.Classify(err); k != resilience.Throttled {
			t.Fatalf("%v classifies %v, want THROTTLED", err, k)
		}

		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "azure_resources")
		e.srv.script(routeGroupGet, rateLimited)
		before := e.srv.count(routeGroupGet)
		_, err = e.groups(subA).Get(ctx, "rg", nil)
		if !errors.As(err, &re) || resilience.Classify(err) != resilience.Throttled {
			t.Fatalf("governed: got %v", err)
		}
		if n := e.srv.count(routeGroupGet) - before; n != 1 {
			t.Fatalf("%d attempts, want 1: azcore does not retry a 400", n)
		}
		if st := e.gov.Inspect(resourcesA).Leaf; st.Rate != 7.5 {
			t.Fatalf("resources bucket %+v, want halved to 7.5", st)
		}
		sc := e.gov.Summary(stats).Scopes[resourcesA]
		if sc.Throttled != 1 || sc.GaveUp != 1 {
			t.Fatalf("stats %+v, want one throttle given up", sc)
		}
		if n, _ := ledger.Counts(); n != 1 {
			t.Fatalf("ledger: %d give-ups", n)
		}
		if b := e.gov.Summary(nil).Breakers[resourcesA]; b.Failures != 1 {
			t.Fatalf("breaker %+v, want one failure", b)
		}

		// With a code, the code decides: a fatal answer, which proves the
		// service reachable, whatever its message says.
		ctx, stats = resilience.WithStats(context.Background())
		e.srv.script(routeGroupGet, reply{status: http.StatusBadRequest, code: "InvalidThrottlingPolicy", msg: "Throttling: Rate exceeded"})
		_, err = e.groups(subA).Get(ctx, "rg", nil)
		if !errors.As(err, &re) || re.ErrorCode != "InvalidThrottlingPolicy" || resilience.Classify(err) != resilience.Fatal {
			t.Fatalf("got %v, want a fatal answer with its code", err)
		}
		if sc := e.gov.Summary(stats).Scopes[resourcesA]; sc.Throttled != 0 || sc.GaveUp != 0 {
			t.Fatalf("the policy took a coded 400 for throttling: %+v", sc)
		}
		if b := e.gov.Summary(nil).Breakers[resourcesA]; b.Failures != 0 || b.State != state.Closed {
			t.Fatalf("breaker %+v: the fatal answer did not reset it", b)
		}
	})
}

// A Resource Graph client from a custom factory, whose pipeline the
// package does not govern, is paced page by page; a page answered with a
// 400 that names no code but reads "Rate exceeded" is throttling, and is
// retried like a 429.
func TestQueryResourcesRetriesAnAnswerWithoutCodeThatSaysThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, slowGraph(resilience.Config{}))
		e.srv.graphPages = 1
		plain := e.plainGraph(policy.RetryOptions{MaxRetries: -1})
		e.srv.script(routeGraph, reply{status: http.StatusBadRequest, noCode: true, msg: "Rate exceeded"})
		ctx, stats := resilience.WithStats(context.Background())
		rows, err := cloudgazure.QueryResources(ctx, plain, query, e.opts()...)
		if err != nil || len(rows) != 2 {
			t.Fatalf("%d rows, %v; want the page after one retry", len(rows), err)
		}
		if n := e.srv.count(routeGraph); n != 2 {
			t.Fatalf("%d attempts, want 2", n)
		}
		if sc := e.gov.Summary(stats).Scopes[graphScope]; sc.Throttled != 1 || sc.Retries != 1 || sc.GaveUp != 0 {
			t.Fatalf("stats %+v", sc)
		}
	})
}
