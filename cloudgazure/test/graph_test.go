package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

var query = armresourcegraph.QueryRequest{Query: ptr("Resources | project id")}

// slowGraph configures Resource Graph at its 3 rps with a burst of 1, so
// that the pacing of pages shows.
func slowGraph(cfg resilience.Config) resilience.Config {
	cfg.Azure.Services = map[string]resilience.ServiceConfig{"resourcegraph": {MaxRPS: 3, Burst: 1}}
	return cfg
}

func rowIDs(rows []any) []string {
	var ids []string
	for _, r := range rows {
		ids = append(ids, fmt.Sprint(r.(map[string]any)["id"]))
	}
	return ids
}

// A success saying the quota is spent (x-ms-user-quota-remaining: 0)
// pauses azure/*/*/resourcegraph until x-ms-user-quota-resets-after; a 429
// whose only hint is x-ms-user-quota-resets-after halves the scope (3 rps
// to 1.5) and pauses it for that long.
func TestResourceGraphQuotaHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.graphPages = 1
		graph := e.graph()
		e.srv.okHeaders(routeGraph, "x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:05")
		if _, err := graph.Resources(context.Background(), query, nil); err != nil {
			t.Fatal(err)
		}
		if st := e.gov.Inspect(graphScope).Leaf; st.Paused != 5*time.Second || st.Rate != 3 {
			t.Fatalf("resourcegraph bucket %+v, want paused 5 s at 3 rps", st)
		}
		e.srv.okHeaders(routeGraph, "x-ms-user-quota-remaining", "10", "x-ms-user-quota-resets-after", "00:00:05")
		start := time.Now()
		if _, err := graph.Resources(context.Background(), query, nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 5*time.Second+time.Second/3 {
			t.Fatalf("next query waited %v, want the 5 s quota pause and a token at 3 rps", d)
		}
		if st := e.gov.Inspect(graphScope).Leaf; st.Paused != 0 {
			t.Fatalf("quota left, yet paused: %+v", st)
		}

		time.Sleep(time.Second) // the bucket refills after the quota pause
		e.srv.script(routeGraph, withHeader(reply{status: http.StatusTooManyRequests, code: "RateLimiting"},
			"x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:03"))
		start = time.Now()
		done := make(chan error, 1)
		go func() { _, err := graph.Resources(context.Background(), query, nil); done <- err }()
		synctest.Wait()
		if st := e.gov.Inspect(graphScope).Leaf; st.Rate != 1.5 || st.Paused != 3*time.Second {
			t.Fatalf("after the 429: %+v, want 1.5 rps paused 3 s", st)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 3*time.Second || d > 4*time.Second {
			t.Fatalf("retried after %v, want 3 s", d)
		}
	})
}

// The queries waiting out a Resource Graph quota pause leave at the
// scope's 3 rps from its end, not all at once with the burst of 15 the
// bucket held before it: 5 s and a third, two thirds, 6 s, 6 s and a third.
func TestQueriesQueuedBehindTheQuotaPauseStagger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.graphPages = 1
		graph := e.graph()
		e.srv.okHeaders(routeGraph, "x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:05")
		if _, err := graph.Resources(context.Background(), query, nil); err != nil {
			t.Fatal(err)
		}
		e.srv.okHeaders(routeGraph, "x-ms-user-quota-remaining", "10")
		start := time.Now()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := graph.Resources(context.Background(), query, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		hs := e.srv.hitsOf(routeGraph)[1:]
		if len(hs) != 4 {
			t.Fatalf("%d queries after the pause, want 4", len(hs))
		}
		for i, h := range hs {
			if want := 5*time.Second + time.Duration(i+1)*time.Second/3; !near(h.at.Sub(start), want, time.Millisecond) {
				t.Errorf("query %d sent %v after the pause began, want %v", i+1, h.at.Sub(start), want)
			}
		}
	})
}

// Resource Graph has its own scope, with no subscription, at 3 rps with a
// burst of 15 (15 queries per 5-second window): the first 15 queries go at
// once, the 16th a third of a second later.
func TestResourceGraphScopeRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.graphPages = 1
		graph := e.graph()
		start := time.Now()
		for range 16 {
			if _, err := graph.Resources(context.Background(), query, nil); err != nil {
				t.Fatal(err)
			}
		}
		hs := e.srv.hitsOf(routeGraph)
		if hs[14].at != start || !near(hs[15].at.Sub(start), time.Second/3, time.Millisecond) {
			t.Fatalf("15th query at %v, 16th at %v; want 0 and 1/3 s", hs[14].at.Sub(start), hs[15].at.Sub(start))
		}
		if st := e.gov.Inspect(graphScope).Leaf; st.Ceiling != 3 {
			t.Fatalf("resourcegraph bucket %+v, want 3 rps", st)
		}
	})
}

// QueryResources follows the skip tokens page by page, one token per
// page: with a burst of 1 at 3 rps the pages go 1/3 s apart.
func TestQueryResourcesPagesWithSkipTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, slowGraph(resilience.Config{}))
		q := query
		rows, err := cloudgazure.QueryResources(context.Background(), e.graph(), q)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rowIDs(rows)); got != "[/r/0-0 /r/0-1 /r/1-0 /r/1-1 /r/2-0 /r/2-1]" {
			t.Fatalf("rows %s", got)
		}
		if q.Options != nil {
			t.Fatal("the caller's query was modified")
		}
		hs := e.srv.hitsOf(routeGraph)
		if len(hs) != 3 || hs[0].skip != "" || hs[1].skip != "p1" || hs[2].skip != "p2" {
			t.Fatalf("pages asked %v", hs)
		}
		for i := 1; i < 3; i++ {
			if d := gap(hs, i-1, i); !near(d, time.Second/3, time.Millisecond) {
				t.Fatalf("page %d came %v after the previous one, want 1/3 s", i, d)
			}
		}
	})
}

// A governed client retries a throttled page inside its pipeline; when the
// page still fails, QueryResources returns the rows it has and the error,
// without retrying the page again.
func TestQueryResourcesReturnsRowsAndError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2)}})
		e.srv.script(routeGraph, reply{}) // page 1
		e.srv.forever(routeGraph, throttled("1"))
		ctx, ledger := resilience.WithLedger(context.Background(), "azure_graph")
		rows, err := cloudgazure.QueryResources(ctx, e.graph(), query)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %v, want the 429", err)
		}
		if len(rows) != 2 {
			t.Fatalf("%d rows, want page 1's 2", len(rows))
		}
		if n := e.srv.count(routeGraph); n != 1+3 {
			t.Fatalf("%d requests, want page 1 and 3 attempts at page 2", n)
		}
		if g, _ := ledger.Counts(); g != 1 {
			t.Fatalf("ledger gave up %d, want 1 (recorded once, by the policy)", g)
		}
	})
}

// A client without the policies is paced by QueryResources itself: a
// breaker check and a token per page; a throttled page is retried 5 times
// with a backoff of 2, 4, 8, 16 and 30 s (longer where the scope is
// paused), then recorded as given up, and the rows come back with the
// error.
func TestQueryResourcesPacesUngovernedClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, slowGraph(resilience.Config{}))
		plain := e.plainGraph(policy.RetryOptions{MaxRetries: -1})
		rows, err := cloudgazure.QueryResources(context.Background(), plain, query, e.opts()...)
		if err != nil || len(rows) != 6 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		hs := e.srv.hitsOf(routeGraph)
		for i := 1; i < len(hs); i++ {
			if d := gap(hs, i-1, i); !near(d, time.Second/3, time.Millisecond) {
				t.Fatalf("page %d came %v after the previous one, want 1/3 s", i, d)
			}
		}

		// A spent quota pauses the scope here too.
		e.srv.okHeaders(routeGraph, "x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:04")
		e.srv.graphPages = 1
		if _, err := cloudgazure.QueryResources(context.Background(), plain, query, e.opts()...); err != nil {
			t.Fatal(err)
		}
		if st := e.gov.Inspect(graphScope).Leaf; st.Paused != 4*time.Second {
			t.Fatalf("resourcegraph bucket %+v, want paused 4 s", st)
		}
		e.srv.okHeaders(routeGraph)
		e.srv.graphPages = 3

		e.srv.script(routeGraph, reply{}) // page 1
		e.srv.forever(routeGraph, throttled("3"))
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "azure_graph")
		time.Sleep(time.Minute)
		rows, err = cloudgazure.QueryResources(ctx, plain, query, e.opts()...)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests || len(rows) != 2 {
			t.Fatalf("%d rows, %v; want page 1's rows and the 429", len(rows), err)
		}
		hs = e.srv.hitsOf(routeGraph)[5:] // page 2's attempts
		if len(hs) != 6 {
			t.Fatalf("%d attempts at page 2, want 1 + 5 retries", len(hs))
		}
		for i, want := range []time.Duration{3, 4, 8, 16, 30} {
			if d := gap(hs, i, i+1); d < want*time.Second || d > want*time.Second+time.Second {
				t.Fatalf("retry %d after %v, want %v", i+1, d, want*time.Second)
			}
		}
		if g, _ := ledger.Counts(); g != 1 {
			t.Fatalf("ledger gave up %d, want 1", g)
		}
		if sc := e.gov.Summary(stats).Scopes[graphScope]; sc.Calls != 7 || sc.Throttled != 6 || sc.Retries != 5 || sc.GaveUp != 1 {
			t.Fatalf("stats %+v", sc)
		}
	})
}

// A client built with ClientOptions but not through NewGraphClient is
// recognised on its first page, whose Guard its pipeline takes over:
// later pages are paced by its pipeline only, and each page is one call.
func TestQueryResourcesDetectsGovernedPipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		c, err := armresourcegraph.NewClient(fakeCred{}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		ctx, stats := resilience.WithStats(context.Background())
		rows, err := cloudgazure.QueryResources(ctx, c, query, e.opts()...)
		if err != nil || len(rows) != 6 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		if sc := e.gov.Summary(stats).Scopes[graphScope]; sc.Calls != 3 {
			t.Fatalf("%d calls counted for 3 pages, want 3", sc.Calls)
		}
	})
}

// A page is one call however it is found to be governed: the first page
// of a plain-typed client built with ClientOptions, which QueryResources
// paces before its per-call policy shows that the pipeline is governed,
// counts one call per HTTP attempt and takes one token per attempt, as a
// *GraphClient's pages do (Resource Graph at 3 rps, burst 1: the first
// page goes at once, each later request a third of a second after the
// one before).
func TestQueryResourcesDetectedPipelineCountsEachAttemptOnce(t *testing.T) {
	for _, tt := range []struct {
		name   string
		script []reply
	}{
		{"every page answered", nil},
		{"page 1 throttled twice then answered", []reply{throttled(""), throttled("")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, slowGraph(resilience.Config{}))
				c, err := armresourcegraph.NewClient(fakeCred{}, cloudgazure.ClientOptions(e.base, e.opts()...))
				if err != nil {
					t.Fatal(err)
				}
				e.srv.script(routeGraph, tt.script...)
				ctx, stats := resilience.WithStats(context.Background())
				start := time.Now()
				rows, err := cloudgazure.QueryResources(ctx, c, query, e.opts()...)
				if err != nil || len(rows) != 6 {
					t.Fatalf("%d rows, %v", len(rows), err)
				}
				hs := e.srv.hitsOf(routeGraph)
				sc := e.gov.Summary(stats).Scopes[graphScope]
				if sc.Calls != int64(len(hs)) || sc.Retries != int64(len(tt.script)) {
					t.Errorf("stats %+v for %d HTTP attempts (%d retries), want one call per attempt", sc, len(hs), len(tt.script))
				}
				if d := hs[0].at.Sub(start); d != 0 {
					t.Errorf("the first page was sent %v after the query began, want at once (one token)", d)
				}
			})
		})
	}
}

// A plain-typed client built with ClientOptions whose first page fails
// after its pipeline's retries: the pipeline, which took over the Guard
// QueryResources paced the page on, records the give-up, and
// QueryResources records nothing more: the one call lost is one give-up,
// and no loss of any other kind.
func TestQueryResourcesDetectedPipelineRecordsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(1)}})
		c, err := armresourcegraph.NewClient(fakeCred{}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		e.srv.forever(routeGraph, throttled("1"))
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "azure_graph")
		_, err = cloudgazure.QueryResources(ctx, c, query, e.opts()...)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %v, want the 429", err)
		}
		if n := e.srv.count(routeGraph); n != 2 {
			t.Fatalf("%d attempts, want 2 (the pipeline's), not retried again", n)
		}
		lostOnly(t, e.gov, stats, ledger, resilience.LossGaveUp, 1)
		sc := e.gov.Summary(stats).Scopes[graphScope]
		if sc.Calls != 2 || sc.GaveUp != 1 || sc.Throttled != 2 || sc.Retries != 1 || sc.Lost() != 1 {
			t.Fatalf("stats %+v, want 2 calls, 2 throttled, 1 retry, 1 gave up and nothing else lost", sc)
		}
		if b := e.gov.Summary(nil).Breakers[graphScope]; b.Failures != 1 {
			t.Fatalf("breaker %+v, want 1 failure", b)
		}
	})
}

// Every path of QueryResources records what happened to each page, once:
// a governed client's pages by its pipeline; a plain-typed client built
// with ClientOptions by its pipeline too (which takes over the Guard the
// helper paced its first page on); a plain client's by the helper. Per row: the rows and the error the caller gets; the calls,
// throttles and retries counted; the one loss of the right kind and none
// of any other, in the ledger and the stats; the breaker's failures; the
// retry budget (the third retry of a page costs a token, each success
// gives 0.1 back up to 500, so a success recorded twice shows); no slot
// left held. The page that fails is the first or the second: the helper
// paces a detected client's first page only.
func TestQueryResourcesRecordsEachPageOnce(t *testing.T) {
	const (
		governed   = "governed"   // a *GraphClient
		detected   = "detected"   // a plain-typed client built with ClientOptions
		ungoverned = "ungoverned" // a plain client, QueryLimits{MaxRetries: 3}
	)
	type scenario struct {
		name    string
		script  []reply // the server's answers, in order, then success
		always  *reply  // or, after the script, this answer for good
		cancel  bool    // the caller cancels the query 5 s in
		rows    int
		err     func(error) bool
		breaker int // failures
		loss    resilience.Loss
		lost    int
	}
	is429 := func(err error) bool {
		var re *azcore.ResponseError
		return errors.As(err, &re) && re.StatusCode == http.StatusTooManyRequests
	}
	isCancelled := func(err error) bool { return errors.Is(err, context.Canceled) }
	isNil := func(err error) bool { return err == nil }
	var (
		success = scenario{name: "success", rows: 6, err: isNil}
		// Three 429s, then the page's answer: 3 retries, the third paid.
		throttledThenOK = scenario{name: "page 1 throttled then answered", rows: 6, err: isNil,
			script: []reply{throttled("1"), throttled("1"), throttled("1")}}
		gaveUp1 = scenario{name: "page 1 gave up", rows: 0, err: is429, breaker: 1,
			always: ptr(throttled("1")), loss: resilience.LossGaveUp, lost: 1}
		gaveUp2 = scenario{name: "page 2 gave up", rows: 2, err: is429, breaker: 1,
			script: []reply{{}}, always: ptr(throttled("1")), loss: resilience.LossGaveUp, lost: 1}
		// The caller cancels while the page's attempt is out.
		cancelled1 = scenario{name: "cancelled with page 1 out", rows: 0, err: isCancelled, cancel: true,
			script: []reply{{block: true}}, loss: resilience.LossCancelled, lost: 1}
		cancelled2 = scenario{name: "cancelled with page 2 out", rows: 2, err: isCancelled, cancel: true,
			script: []reply{{}, {block: true}}, loss: resilience.LossCancelled, lost: 1}
		// The caller cancels while page 2 waits to retry a 429 of 10 s.
		cancelledWaiting = scenario{name: "cancelled before page 2's retry", rows: 2, err: isCancelled, cancel: true,
			script: []reply{{}}, always: ptr(throttled("10")), loss: resilience.LossCancelled, lost: 1}
	)
	tests := []struct {
		client string
		scenario
		calls, throttled, retries int64
		budget                    float64
	}{
		{governed, success, 3, 0, 0, 500},
		{detected, success, 3, 0, 0, 500},
		{ungoverned, success, 3, 0, 0, 500},

		{governed, throttledThenOK, 6, 3, 3, 499.3},
		{detected, throttledThenOK, 6, 3, 3, 499.3},
		{ungoverned, throttledThenOK, 6, 3, 3, 499.3},

		{governed, gaveUp1, 4, 4, 3, 499},
		{detected, gaveUp1, 4, 4, 3, 499},
		{ungoverned, gaveUp1, 4, 4, 3, 499},

		{governed, gaveUp2, 5, 4, 3, 499},
		{detected, gaveUp2, 5, 4, 3, 499},
		{ungoverned, gaveUp2, 5, 4, 3, 499},

		{governed, cancelled1, 1, 0, 0, 500},
		{detected, cancelled1, 1, 0, 0, 500},
		{ungoverned, cancelled1, 1, 0, 0, 500},

		{governed, cancelled2, 2, 0, 0, 500},
		{detected, cancelled2, 2, 0, 0, 500},
		{ungoverned, cancelled2, 2, 0, 0, 500},

		{governed, cancelledWaiting, 2, 1, 0, 500},
		{detected, cancelledWaiting, 2, 1, 0, 500},
		{ungoverned, cancelledWaiting, 2, 1, 0, 500},
	}
	for _, tt := range tests {
		t.Run(tt.client+"/"+tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(3)}})
				var client cloudgazure.GraphQuerier
				opts := e.opts()
				switch tt.client {
				case governed:
					client = e.graph()
				case detected:
					c, err := armresourcegraph.NewClient(fakeCred{}, cloudgazure.ClientOptions(e.base, e.opts()...))
					if err != nil {
						t.Fatal(err)
					}
					client = c
				case ungoverned:
					client = e.plainGraph(policy.RetryOptions{MaxRetries: -1})
					opts = append(opts, cloudgazure.WithQueryLimits(cloudgazure.QueryLimits{MaxRetries: 3}))
				}
				e.srv.script(routeGraph, tt.script...)
				if tt.always != nil {
					e.srv.forever(routeGraph, *tt.always)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancel {
					time.AfterFunc(5*time.Second, cancel)
				}
				ctx, stats := resilience.WithStats(ctx)
				ctx, ledger := resilience.WithLedger(ctx, "azure_graph")
				rows, err := cloudgazure.QueryResources(ctx, client, query, opts...)
				if len(rows) != tt.rows || !tt.err(err) {
					t.Fatalf("%d rows, %v; want %d rows", len(rows), err, tt.rows)
				}
				lostOnly(t, e.gov, stats, ledger, tt.loss, tt.lost)
				sc := e.gov.Summary(stats).Scopes[graphScope]
				if sc.Calls != tt.calls || sc.Throttled != tt.throttled || sc.Retries != tt.retries || sc.Lost() != int64(tt.lost) {
					t.Errorf("stats %+v, want %d calls, %d throttled, %d retries, %d lost", sc, tt.calls, tt.throttled, tt.retries, tt.lost)
				}
				if b := e.gov.Summary(nil).Breakers[graphScope]; b.Failures != tt.breaker {
					t.Errorf("breaker %+v, want %d failures", b, tt.breaker)
				}
				in := e.gov.Inspect(graphScope)
				if in.RetryBudget != tt.budget {
					t.Errorf("retry budget %v, want %v", in.RetryBudget, tt.budget)
				}
				if in.InFlight != 0 || in.Waiting != 0 {
					t.Errorf("bulkhead %+v after the query, want nothing held", in)
				}
			})
		})
	}
}

// The helper holds a slot while it sends a page; a governed pipeline found
// out on that page is a call inside the helper's, and goes ahead without a
// slot of its own when the helper holds the last one.
func TestQueryResourcesDetectedPipelineSharesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		c, err := armresourcegraph.NewClient(fakeCred{}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rows, err := cloudgazure.QueryResources(ctx, c, query, e.opts()...)
		if err != nil || len(rows) != 6 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		if in := e.gov.Inspect(graphScope); in.InFlight != 0 || in.Waiting != 0 {
			t.Fatalf("bulkhead %+v after the query, want nothing held", in)
		}
	})
}

// A server that hands back the skip token it was given ends the query
// with an *IncompleteQueryError (ErrSkipTokenRepeated) instead of a loop.
func TestQueryResourcesStopsOnRepeatedSkipToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		q := query
		q.Options = &armresourcegraph.QueryRequestOptions{SkipToken: ptr("p1")}
		e.srv.graphPages = 3
		e.srv.okHeaders(routeGraph)
		stuck := &stuckGraph{GraphQuerier: e.graph()}
		// The test's governor: stuckGraph hides Governed, so the helper
		// paces the first page, on the process governor otherwise, whose
		// timers a later run's bubble must not touch.
		rows, err := cloudgazure.QueryResources(context.Background(), stuck, q, e.opts()...)
		var ie *cloudgazure.IncompleteQueryError
		if !errors.Is(err, cloudgazure.ErrSkipTokenRepeated) || !errors.As(err, &ie) || ie.SkipToken != "p1" || len(rows) != 2 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		if *q.Options.SkipToken != "p1" {
			t.Fatal("the caller's options were modified")
		}
	})
}

// stuckGraph answers every page with the skip token it was asked for.
type stuckGraph struct{ cloudgazure.GraphQuerier }

func (s *stuckGraph) Resources(ctx context.Context, q armresourcegraph.QueryRequest,
	o *armresourcegraph.ClientResourcesOptions) (armresourcegraph.ClientResourcesResponse, error) {
	r, err := s.GraphQuerier.Resources(ctx, q, o)
	if err == nil && q.Options != nil {
		r.SkipToken = q.Options.SkipToken
	}
	return r, err
}

// WithQueryLimits bounds the retries of a client this package does not
// govern; NewTenantClient builds a governed client without a subscription.
func TestQueryLimitsAndTenantClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		plain := e.plainGraph(policy.RetryOptions{MaxRetries: -1})
		e.srv.forever(routeGraph, throttled("0"))
		limits := cloudgazure.QueryLimits{MaxRetries: 1, Backoff: []time.Duration{3 * time.Second}}
		_, err := cloudgazure.QueryResources(context.Background(), plain, query, append(e.opts(), cloudgazure.WithQueryLimits(limits))...)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("err %v, want the 429", err)
		}
		hs := e.srv.hitsOf(routeGraph)
		if len(hs) != 2 || gap(hs, 0, 1) < 3*time.Second {
			t.Fatalf("attempts %v, want 2, 3 s apart", hs)
		}

		e.srv.okHeaders(routeGraph)
		e.srv.script(routeGraph, reply{})
		tenant, err := cloudgazure.NewTenantClient(armresourcegraph.NewClient, fakeCred{}, e.base, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stats := resilience.WithStats(context.Background())
		time.Sleep(time.Minute)
		if _, err := tenant.Resources(ctx, query, nil); err != nil {
			t.Fatal(err)
		}
		if s := e.gov.Summary(stats).Scopes[graphScope]; s.Calls != 1 {
			t.Fatalf("tenant client: stats %+v, want one governed call", s)
		}
	})
}

// A fatal answer (a 404) to a page of a custom factory's client ends the
// query at once: it is sent once, not retried until the provider's retry
// budget runs dry.
func TestQueryResourcesDoesNotRetryAFatalAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, slowGraph(resilience.Config{}))
		e.srv.graphPages = 1
		plain := e.plainGraph(policy.RetryOptions{MaxRetries: -1})
		e.srv.forever(routeGraph, reply{status: http.StatusNotFound, code: "NotFound"})
		ctx, stats := resilience.WithStats(context.Background())
		_, err := cloudgazure.QueryResources(ctx, plain, query, e.opts()...)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound {
			t.Fatalf("got %v, want the 404", err)
		}
		if n := e.srv.count(routeGraph); n != 1 {
			t.Fatalf("%d attempts, want 1", n)
		}
		if sc := e.gov.Summary(stats).Scopes[graphScope]; sc.Calls != 1 || sc.Retries != 0 {
			t.Fatalf("stats %+v", sc)
		}
		if b := e.gov.Inspect(graphScope).RetryBudget; b != 500 {
			t.Fatalf("retry budget %v, want 500 untouched", b)
		}
	})
}

// The zero GraphClient has no client, as its godoc says: it is not
// governed, and Resources panics.
func TestGraphClientZeroValue(t *testing.T) {
	var c cloudgazure.GraphClient
	if c.Governed() {
		t.Fatal("the zero GraphClient says it is governed")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Resources on the zero GraphClient did not panic")
		}
	}()
	_, _ = c.Resources(context.Background(), armresourcegraph.QueryRequest{Query: ptr("Resources")}, nil)
}

// A client built with ClientOptions (governed, but not a *GraphClient:
// QueryResources learns it on the first page) queried while the
// resourcegraph breaker is half-open. The helper's Guard takes the probe
// for the first page, and the pipeline's Guard, nested in its attempt on
// the same scope, is let through as the probe in its stead: the page
// succeeds, its success is recorded once (the breaker closes once, nothing
// is lost, the budget's refund is paid once), and the breaker is closed
// after it, so that the next query goes.
func TestQueryResourcesDetectedPipelineSharesTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var changes []string
		obs := observe.Func(func(ev observe.Event) {
			if ev.Kind == observe.BreakerChange {
				mu.Lock()
				changes = append(changes, ev.From.String()+">"+ev.To.String())
				mu.Unlock()
			}
		})
		cfg := resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(3), BreakerThreshold: 1}}
		gov, err := resilience.NewGovernor(cfg, resilience.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		e := memEnv(t, cfg)
		e.gov = gov
		c, err := armresourcegraph.NewClient(fakeCred{}, cloudgazure.ClientOptions(e.base, e.opts()...))
		if err != nil {
			t.Fatal(err)
		}
		// A page given up after its 3 retries (the third paid from the
		// budget: 499 left) opens the breaker; after its cooldown the next
		// call is its half-open probe.
		e.srv.script(routeGraph, throttled("1"), throttled("1"), throttled("1"), throttled("1"))
		if _, err := cloudgazure.QueryResources(context.Background(), e.graph(), query, e.opts()...); err == nil {
			t.Fatal("the scripted 429s did not fail the query")
		}
		if in := gov.Inspect(graphScope); in.Breaker.State != state.Open || in.RetryBudget != 499 {
			t.Fatalf("breaker %+v, budget %v after the give-up; want open, 499", in.Breaker, in.RetryBudget)
		}
		time.Sleep(gov.Inspect(graphScope).Breaker.Wait)

		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "azure_graph")
		rows, err := cloudgazure.QueryResources(ctx, c, query, e.opts()...)
		if err != nil || len(rows) != 6 {
			t.Fatalf("%d rows, %v; want the 6 rows of 3 pages", len(rows), err)
		}
		lostOnly(t, gov, stats, ledger, resilience.LossSkipped, 0)
		if b := gov.Inspect(graphScope).Breaker; b.State != state.Closed || b.Failures != 0 {
			t.Fatalf("breaker %+v after the probe page succeeded, want closed", b)
		}
		mu.Lock()
		got := strings.Join(changes, " ")
		mu.Unlock()
		if want := "closed>open open>half_open half_open>closed"; got != want {
			t.Errorf("breaker changes %q, want %q: the probe reported once, closed once", got, want)
		}
		// 3 pages, 3 successes, each refunding a tenth of a token: the
		// first page's is recorded once, by the pipeline's Guard (the
		// helper's records nothing of it).
		if in := gov.Inspect(graphScope); in.RetryBudget != 499.3 || in.InFlight != 0 || in.Waiting != 0 {
			t.Errorf("budget %v, %d in flight, %d waiting; want 499.3 and nothing held", in.RetryBudget, in.InFlight, in.Waiting)
		}
		// Nothing was left holding the probe: the next query is let
		// through (at the rate the throttles left), not rejected.
		if rows, err := cloudgazure.QueryResources(ctx, c, query, e.opts()...); err != nil || len(rows) != 6 {
			t.Fatalf("the next query: %d rows, %v", len(rows), err)
		}
		lostOnly(t, gov, stats, ledger, resilience.LossSkipped, 0)
	})
}
