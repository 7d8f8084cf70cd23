package test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// inProcess sends each request to the fake's handler in process: no
// socket, so that the client runs in a synctest bubble, in virtual time.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	in := r.Clone(r.Context())
	if in.Body == nil {
		in.Body = http.NoBody // as a server's request has
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, in)
	_ = in.Body.Close()
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// tooMany is an answer the core classifies as throttling.
type tooMany struct{}

func (tooMany) Error() string       { return "429" }
func (tooMany) HTTPStatusCode() int { return 429 }

// A REST request asleep in the Transport's backoff (20 s) when five other
// calls of its scope open the breaker ends then, not when the backoff
// would have: its retry is refused as after the backoff (the client gets
// the last answer, a 429, as a *googleapi.Error; the request lost once,
// as given up), and nothing more is sent.
func TestBreakerOpeningEndsTheRESTBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCompute{}
		f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded"})
		gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{BaseDelaySeconds: 20, MaxBackoffSeconds: 20}})
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: cloudggcp.RESTTransport(inProcess{f}, cloudggcp.WithGovernor(gov))}
		c, err := compute.NewInstancesRESTClient(context.Background(), option.WithHTTPClient(hc), option.WithEndpoint("http://compute.test"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, ledger := resilience.WithLedger(context.Background(), "instances")
		start := time.Now()
		var at time.Duration
		done := make(chan error)
		go func() {
			_, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"})
			at = time.Since(start)
			done <- err
		}()
		synctest.Wait() // throttled once, asleep in the Transport's 20 s backoff
		time.Sleep(time.Second)
		for range 5 { // five calls of the scope give up: the breaker opens
			_ = resilience.Do(context.Background(), scope("instances_get"), func(context.Context) error { return tooMany{} },
				resilience.WithGovernor(gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		}
		opened := time.Since(start)
		if s := gov.Inspect(scope("instances_get")).Breaker.State; s != state.Open {
			t.Fatalf("the breaker is %v, want open", s)
		}
		err = <-done
		var ge *googleapi.Error
		if !errors.As(err, &ge) || ge.Code != http.StatusTooManyRequests || at != opened {
			t.Fatalf("the request ended at %v with %v; the breaker opened at %v: want the 429 then", at, err, opened)
		}
		if n := len(f.hitsOf("get")); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
		if gu, lost := ledger.Count(resilience.LossGaveUp), ledger.Lost(); gu != 1 || lost != 1 {
			t.Fatalf("ledger: %d gave up, %d lost; want 1, 1 (%s)", gu, lost, ledger.Describe())
		}
	})
}

// A REST request whose Transport slept before a retry leaves nothing
// behind once it returns: the context its sleep watched is cancelled with
// the sleep. (The request is sent with an http.Client of its own: a
// client's gax timeout would give it a context the context package
// knows.)
func TestASleptRESTBackoffLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCompute{}
		f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded"})
		gov, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: cloudggcp.RESTTransport(inProcess{f}, cloudggcp.WithGovernor(gov))}
		ctx := endlessContext{context.Background(), make(chan struct{})}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://compute.test/compute/v1/projects/p1/zones/z/instances/vm-1", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK || len(f.hitsOf("get")) != 2 {
			t.Fatalf("%v after %d requests, want a success after 2", err, len(f.hitsOf("get")))
		}
		_ = resp.Body.Close()
	})
}

// endlessContext can be cancelled, but never is: a context derived from
// it (not a type the context package knows) that is never cancelled
// leaves a goroutine behind, blocked on both, which the bubble reports.
type endlessContext struct {
	context.Context
	done chan struct{}
}

func (c endlessContext) Done() <-chan struct{} { return c.done }
