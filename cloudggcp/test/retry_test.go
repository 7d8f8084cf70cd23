package test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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

// The Retry option on a REST client (compute's, its HTTP client not
// governed, so that the option alone governs the call), against the fake
// Compute API on 127.0.0.1: a get throttled once and then successful
// holds no watch of the run's context once it returned (gax tells the
// option nothing of a REST call's success), and the run's end records no
// loss.
func TestRetryOptionOnARESTClientHoldsNoWatch(t *testing.T) {
	f := &fakeCompute{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded"})
	gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{MaxBackoffSeconds: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := compute.NewInstancesRESTClient(context.Background(), option.WithoutAuthentication(), option.WithEndpoint(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	run, stats := resilience.WithStats(context.Background())
	run, ledger := resilience.WithLedger(run, "instances")
	ctx := newWatchedContext(run)
	inst, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"},
		cloudggcp.Retry(ctx, scope("instances_get"), cloudggcp.WithGovernor(gov)))
	if err != nil || inst.GetName() != "vm-1" || len(f.hitsOf("get")) != 2 {
		t.Fatalf("instance %q, err %v after %d requests, want vm-1 after 2", inst.GetName(), err, len(f.hitsOf("get")))
	}
	// The watch of the pause before the retry, if any, ends with the pause
	// (on a timer of its own, which may run a moment after the call went
	// on); none is held for the run.
	select {
	case <-ctx.unwatched():
	case <-time.After(10 * time.Second):
		t.Fatalf("%d watches of the run's context held 10s after the call returned, want none", ctx.watching())
	}
	ctx.cancel()
	if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.Lost() != 0 || ledger.Lost() != 0 {
		t.Fatalf("totals %+v, ledger %q: want the throttle, nothing lost", tot, ledger.Describe())
	}
}

// The same in virtual time (the client on an in-process transport): a
// REST call the Retry option retried and that then succeeded is not
// recorded as cancelled when the run's context ends after it; a context
// that ends during the pause before the retry (gax's sleep) is, once,
// at that moment, and nothing more is sent. The call leaves no watch of
// its context behind.
func TestRetryOptionOnARESTClientRecordsNoFalseLoss(t *testing.T) {
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
		get := func(ctx context.Context) error {
			_, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"},
				cloudggcp.Retry(ctx, scope("instances_get"), cloudggcp.WithGovernor(gov)))
			return err
		}

		// Throttled twice, retried after 1 s and 2 s, successful; the run
		// ends a minute later.
		f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded"},
			reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded"})
		run, cancel := context.WithCancel(context.Background())
		ctx, stats := resilience.WithStats(run)
		ctx, ledger := resilience.WithLedger(ctx, "instances")
		start := time.Now()
		if err := get(ctx); err != nil || time.Since(start) != 3*time.Second || len(f.hitsOf("get")) != 3 {
			t.Fatalf("%v at %v after %d requests, want a success at 3s after 3", err, time.Since(start), len(f.hitsOf("get")))
		}
		time.Sleep(time.Minute)
		cancel()
		synctest.Wait()
		if tot := gov.Summary(stats).Totals; tot.Throttled != 2 || tot.Lost() != 0 || ledger.Lost() != 0 {
			t.Fatalf("totals %+v, ledger %q: want 2 throttles; a call that succeeded lost nothing when the run ended", tot, ledger.Describe())
		}

		// Cancelled half a second into the pause before the retry.
		f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded"})
		run, cancel = context.WithCancel(context.Background())
		ctx, ledger = resilience.WithLedger(run, "instances")
		time.AfterFunc(500*time.Millisecond, cancel)
		start = time.Now()
		if err := get(ctx); !errors.Is(err, context.Canceled) || time.Since(start) != 500*time.Millisecond {
			t.Fatalf("%v at %v, want the context's error at 0.5s", err, time.Since(start))
		}
		synctest.Wait()
		if n := len(f.hitsOf("get")); n != 4 {
			t.Fatalf("%d requests in all, want 4: nothing sent after the cancellation", n)
		}
		if ledger.Count(resilience.LossCancelled) != 1 || ledger.Lost() != 1 {
			t.Fatalf("ledger %q, want the call lost once, as cancelled", ledger.Describe())
		}

		// Under a context the context package does not know, whose watch
		// is a goroutine of its own: none is left once the call returned
		// (the bubble would report it).
		f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded"})
		if err := get(endlessContext{context.Background(), make(chan struct{})}); err != nil || len(f.hitsOf("get")) != 6 {
			t.Fatalf("%v after %d requests in all, want a success after 6", err, len(f.hitsOf("get")))
		}
	})
}

// watchedContext is a context the test cancels, whose watches
// (context.AfterFunc, which uses its AfterFunc method) it counts: those
// registered and neither stopped nor run. Its values are its parent's;
// its parent is never done.
type watchedContext struct {
	context.Context
	done chan struct{}

	mu      sync.Mutex
	err     error
	watches map[*func()]bool
	idle    chan struct{} // closed while no watch is held
}

func newWatchedContext(parent context.Context) *watchedContext {
	idle := make(chan struct{})
	close(idle)
	return &watchedContext{Context: parent, done: make(chan struct{}), watches: map[*func()]bool{}, idle: idle}
}

// unwatched returns a channel closed once no watch is held.
func (c *watchedContext) unwatched() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle
}

// forget drops watch k; c.mu is held.
func (c *watchedContext) forget(k *func()) {
	delete(c.watches, k)
	if len(c.watches) == 0 {
		close(c.idle)
	}
}

func (c *watchedContext) Done() <-chan struct{} { return c.done }

func (c *watchedContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *watchedContext) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	k := &f
	if len(c.watches) == 0 {
		c.idle = make(chan struct{})
	}
	c.watches[k] = true
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.watches[k] {
			return false
		}
		c.forget(k)
		return true
	}
}

func (c *watchedContext) watching() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}

func (c *watchedContext) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	close(c.done)
	var fs []*func()
	for k := range c.watches {
		fs = append(fs, k)
		c.forget(k)
	}
	c.mu.Unlock()
	for _, f := range fs {
		(*f)()
	}
}
