package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// The real Compute REST client, a context with resilience.WithMaxWait: a
// 429 whose Retry-After is longer than the call may wait ends the call at
// once with the core's refusal, which the client's own retry does not
// retry; the next call, while the scope is paused, is refused before
// sending. Delay on RESTScope's scope of the request said so. Two
// refusals, nothing else lost.
func TestMaxWaitRefusesTheRESTClient(t *testing.T) {
	f, c, gov := setup(t)
	f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded", retryAfter: "60"})
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "instances")
	ctx = resilience.WithMaxWait(ctx, time.Second)
	get := &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"}
	for i := range 2 {
		start := time.Now()
		_, err := c.Get(ctx, get)
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Fatalf("call %d ended after %v, want at once", i+1, took)
		}
		var ww *resilience.WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, resilience.ErrNoToken) || resilience.Classify(err) != resilience.Throttled {
			t.Fatalf("call %d: err = %v, want a throttling *resilience.WouldWaitError", i+1, err)
		}
		if ra, _ := resilience.RetryAfter(err); ra < 55*time.Second {
			t.Fatalf("call %d: RetryAfter %v", i+1, ra)
		}
		if n := len(f.hitsOf("get")); n != 1 {
			t.Fatalf("after call %d: %d requests, want the first call's alone", i+1, n)
		}
	}
	tot := gov.Summary(stats).Totals
	if tot.Refused != 2 || tot.Lost() != 2 || ledger.Count(resilience.LossRefused) != 2 || ledger.Lost() != 2 {
		t.Fatalf("totals %v, ledger %q: want two refusals and nothing else", tot, ledger.Describe())
	}
	req, _ := http.NewRequest(http.MethodGet, "https://compute.googleapis.com/compute/v1/projects/p1/zones/europe-west1-b/instances/vm-1", nil)
	s := cloudggcp.RESTScope()(req)
	if s != scope("instances_get") {
		t.Fatalf("RESTScope = %v", s)
	}
	if d, why := gov.Delay(s); !errors.Is(why, resilience.ErrNoToken) || d < 55*time.Second {
		t.Fatalf("Delay = %v, %v", d, why)
	}
}
