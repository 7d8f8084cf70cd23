package test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/internal/storetest"
	"github.com/cloudg/cloudg/resilience"
)

// firstSlow holds the first request it sends on the wire for 500 ms.
type firstSlow struct {
	next policy.Transporter
	n    *atomic.Int32
}

func (f firstSlow) Do(req *http.Request) (*http.Response, error) {
	if f.n.Add(1) == 1 {
		time.Sleep(500 * time.Millisecond)
	}
	return f.next.Do(req)
}

// slowThrottleEnv is memEnv with one slot per account, no retries, a
// store whose throttle takes 5 ms, and a first request 500 ms on the
// wire.
func slowThrottleEnv(t *testing.T) *env {
	cfg := resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1, MaxRetries: ptr(0)}}
	gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(storetest.SlowPauses(resilience.MemoryStore(), 5*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	e := memEnv(t, cfg)
	e.gov = gov
	e.base = armOptions("http://127.0.0.1:1", firstSlow{next: memTransport{e.srv}, n: new(atomic.Int32)})
	return e
}

// A throttled attempt's slot goes back once its answer is recorded, so
// that a request waiting for the slot sees the pause the answer's
// Retry-After set, and is held by it, as with resilience.Do: an ARM
// request and a Resource Graph page through the per-retry policy, and a
// Resource Graph page that QueryResources paces itself (a client that is
// not governed). Before,
// the slot went back as the attempt returned: with a store whose throttle
// takes a round trip (fleet mode's), the request waiting for the slot got
// it, found the scope not paused yet, and was sent at once into the 30 s
// pause (0.5 s).
func TestARequestWaitingForTheSlotOfAThrottledOneIsHeldByItsPause(t *testing.T) {
	flavours := []struct {
		name, route string
		scope       resilience.Scope
		call        func(e *env) error
	}{
		{"ARM", routeGroupGet, resourcesA, func(e *env) error {
			_, err := e.groups(subA).Get(context.Background(), "rg", nil)
			return err
		}},
		{"Resource Graph through the policy", routeGraph, graphScope, func(e *env) error {
			_, err := cloudgazure.QueryResources(context.Background(), e.graph(), armresourcegraph.QueryRequest{Query: to.Ptr("Resources")}, e.opts()...)
			return err
		}},
		{"Resource Graph paced by QueryResources", routeGraph, graphScope, func(e *env) error {
			_, err := cloudgazure.QueryResources(context.Background(), e.plainGraph(policy.RetryOptions{MaxRetries: -1}),
				armresourcegraph.QueryRequest{Query: to.Ptr("Resources")},
				append(e.opts(), cloudgazure.WithQueryLimits(cloudgazure.QueryLimits{MaxRetries: -1}))...)
			return err
		}},
	}
	for _, tc := range flavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := slowThrottleEnv(t)
				e.srv.graphPages = 1
				e.srv.script(tc.route, throttled("30"))
				start := time.Now()
				var wg sync.WaitGroup
				wg.Go(func() { _ = tc.call(e) })
				synctest.Wait()
				if err := tc.call(e); err != nil {
					t.Fatalf("the request waiting for the slot: %v", err)
				}
				wg.Wait()
				hits := e.srv.hitsOf(tc.route)
				if len(hits) != 2 {
					t.Fatalf("%d requests, want the throttled one and the waiting one", len(hits))
				}
				if sent := hits[1].at.Sub(start); sent < 30*time.Second+505*time.Millisecond {
					t.Fatalf("the request waiting for the slot of one throttled at 500ms for 30s: sent at %v, want after the pause", sent)
				}
				if in := e.gov.Inspect(tc.scope).InFlight; in != 0 {
					t.Fatalf("%d slots held after the requests ended", in)
				}
			})
		})
	}
}

// So is a request waiting for the slot of one whose answer, a success,
// says the quota is spent: the pause its headers ask for is set before the
// slot goes back (ARM's remaining subscription reads under 25 pause the
// subscription for a second; Resource Graph's quota at 0 pauses its scope
// until x-ms-user-quota-resets-after, 30 s). Before, the slot went back
// first, and with a store whose pause takes a round trip (fleet mode's)
// the request waiting for it was sent at once (0.5 s).
func TestARequestWaitingForTheSlotOfOneThatSpentTheQuotaIsHeldByItsPause(t *testing.T) {
	flavours := []struct {
		name, route string
		quota       []string
		until       time.Duration
		call        func(e *env) error
	}{
		{"ARM reads", routeGroupGet, []string{"x-ms-ratelimit-remaining-subscription-reads", "3"}, 1500 * time.Millisecond, func(e *env) error {
			_, err := e.groups(subA).Get(context.Background(), "rg", nil)
			return err
		}},
		{"Resource Graph through the policy", routeGraph, []string{"x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:30"}, 30500 * time.Millisecond, func(e *env) error {
			_, err := cloudgazure.QueryResources(context.Background(), e.graph(), armresourcegraph.QueryRequest{Query: to.Ptr("Resources")}, e.opts()...)
			return err
		}},
		{"Resource Graph paced by QueryResources", routeGraph, []string{"x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:30"}, 30500 * time.Millisecond, func(e *env) error {
			_, err := cloudgazure.QueryResources(context.Background(), e.plainGraph(policy.RetryOptions{MaxRetries: -1}),
				armresourcegraph.QueryRequest{Query: to.Ptr("Resources")}, e.opts()...)
			return err
		}},
	}
	for _, tc := range flavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := slowThrottleEnv(t)
				e.srv.graphPages = 1
				e.srv.okHeaders(tc.route, tc.quota...)
				start := time.Now()
				var wg sync.WaitGroup
				wg.Go(func() { _ = tc.call(e) })
				synctest.Wait()
				if err := tc.call(e); err != nil {
					t.Fatalf("the request waiting for the slot: %v", err)
				}
				wg.Wait()
				hits := e.srv.hitsOf(tc.route)
				if len(hits) != 2 {
					t.Fatalf("%d requests, want the one that spent the quota and the waiting one", len(hits))
				}
				if sent := hits[1].at.Sub(start); sent < tc.until {
					t.Fatalf("the request waiting for the slot of one that spent the quota at 500ms: sent at %v, want at %v, after the pause", sent, tc.until)
				}
			})
		})
	}
}
