package test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// The Retry event of an azcore retry reports, as its Wait, the delay
// before the retry (observe.Event's godoc; cloudgotel's cloudg.retry
// delay attribute): azcore's jittered backoff, which its retry policy
// sleeps after the governor allowed the retry, not 0. A 500 and a
// throttle without a Retry-After, each retried once: the Retry event's
// Wait is the time between the two requests the server saw.
func TestAnAzcoreRetryEventCarriesItsBackoff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first reply
	}{
		{"transient", reply{status: http.StatusInternalServerError, code: "InternalServerError"}},
		{"throttle", throttled("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var waits []time.Duration
				e := memEnv(t, resilience.Config{})
				g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(observe.Func(func(ev observe.Event) {
					if ev.Kind == observe.Retry {
						mu.Lock()
						waits = append(waits, ev.Wait)
						mu.Unlock()
					}
				})))
				if err != nil {
					t.Fatal(err)
				}
				e.gov = g
				e.srv.script(routeVnetGet, tc.first, reply{})
				if _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); err != nil {
					t.Fatal(err)
				}
				hs := e.srv.hitsOf(routeVnetGet)
				if len(hs) != 2 {
					t.Fatalf("%d requests, want 2", len(hs))
				}
				slept := hs[1].at.Sub(hs[0].at)
				mu.Lock()
				defer mu.Unlock()
				if len(waits) != 1 || waits[0] != slept || slept <= 0 {
					t.Errorf("Retry events' Wait %v, want [%v]: azcore slept %v before the retry", waits, slept, slept)
				}
			})
		})
	}
}
