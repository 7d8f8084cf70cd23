package test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// stepClock is a governor's clock whose sleeps return at once, moving its
// time on by what they were asked to wait, and are recorded: the waits of
// requests sent over real sockets, which cannot be inside a synctest
// bubble, read without waiting for them.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
		c.sleeps = append(c.sleeps, d)
	}
	return nil
}

func (c *stepClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

// A Google REST error gives the delay it asks for in its JSON body, a
// google.rpc.RetryInfo among the error's details, with no Retry-After
// header: the Transport's retry waits that long, and the scope is paused
// for it, as for a Retry-After, whatever the status (a 429
// RESOURCE_EXHAUSTED, a 403 rateLimitExceeded, a 503).
func TestRESTRetryInfoDelaysTheRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		rp   reply
	}{
		{"429", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded", retryDelay: "30s"}},
		{"403 rateLimitExceeded", reply{status: http.StatusForbidden, reason: "rateLimitExceeded", retryDelay: "30s"}},
		{"503", reply{status: http.StatusServiceUnavailable, reason: "backendError", retryDelay: "30s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCompute{}
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			f.script("get", tc.rp)
			clk := &stepClock{now: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
			gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{BaseDelaySeconds: 0.001, MaxBackoffSeconds: 0.01}}, resilience.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c := restInstances(t, gov, srv.URL, option.WithoutAuthentication())
			inst, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.hitsOf("get")); inst.GetName() != "vm-1" || n != 2 {
				t.Fatalf("instance %q after %d requests, want vm-1 after 2", inst.GetName(), n)
			}
			var waited time.Duration
			for _, d := range clk.slept() {
				waited += d
			}
			if waited < 30*time.Second || waited > 31*time.Second {
				t.Errorf("the retry waited %v (sleeps %v), want the 30s of the body's RetryInfo", waited, clk.slept())
			}
		})
	}
}

// The same answer to a compute REST client whose HTTP client is not
// governed, with the Retry option on its call: the client's
// *googleapi.Error gives the body's RetryInfo to the option's retry,
// which waits its 30s before sending the request again (its backoff
// alone is 1s).
func TestRetryOptionWaitsForTheRESTBodysRetryInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCompute{}
		gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{MaxBackoffSeconds: 20}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := compute.NewInstancesRESTClient(context.Background(), option.WithHTTPClient(&http.Client{Transport: inProcess{f}}),
			option.WithEndpoint("http://compute.test"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded", retryDelay: "30s"})
		ctx := context.Background()
		start := time.Now()
		inst, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"},
			cloudggcp.Retry(ctx, scope("instances_get"), cloudggcp.WithGovernor(gov)))
		if err != nil || inst.GetName() != "vm-1" || len(f.hitsOf("get")) != 2 {
			t.Fatalf("instance %q, err %v after %d requests, want vm-1 after 2", inst.GetName(), err, len(f.hitsOf("get")))
		}
		if waited := time.Since(start); waited != 30*time.Second {
			t.Errorf("the retry was sent after %v, want the 30s of the body's RetryInfo", waited)
		}
	})
}
