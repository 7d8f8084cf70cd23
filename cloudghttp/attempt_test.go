//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/internal/storetest"
	"github.com/cloudg/cloudg/resilience"
)

// What each attempt goes through: its slot, its token, and the request's
// context in every wait before it and while it is on the wire.

// slowTransport holds each request on the wire for the delay of its path
// (or until its context ends) before base answers it.
type slowTransport struct {
	base  http.RoundTripper
	delay map[string]time.Duration
}

func (s slowTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if d := s.delay[req.URL.Path]; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done():
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, req.Context().Err()
		}
	}
	return s.base.RoundTrip(req)
}

// oneSlot is a configuration whose bulkhead lets one attempt of the API's
// account on the wire at a time.
func oneSlot() resilience.Config {
	return resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}}
}

// The slot is held while an attempt is on the wire: a second request
// waits for the first one's answer.
func TestSlotIsHeldWhileAnAttemptIsOnTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, oneSlot())
		c := client(slowTransport{base: newMem(f), delay: map[string]time.Duration{"/slow": 5 * time.Second}}, gov, quick)
		var wg sync.WaitGroup
		wg.Go(func() { readAll(t, do(t, c, http.MethodGet, "http://api.test/slow", nil)) })
		synctest.Wait()
		if s := gov.Inspect(apiScope); s.InFlight != 1 {
			t.Fatalf("%d in flight while the attempt is on the wire, want 1", s.InFlight)
		}
		start := time.Now()
		readAll(t, do(t, c, http.MethodGet, "http://api.test/fast", nil))
		if waited := time.Since(start); waited != 5*time.Second {
			t.Fatalf("the second request waited %v, want 5s, until the first one's answer", waited)
		}
		wg.Wait()
	})
}

// The slot is given back with each answer: while a request waits to
// retry, another one of the account goes on the wire at once.
func TestSlotIsFreeWhileARetryWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(500))
		gov := newGov(t, oneSlot())
		backoff := cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 10 * time.Second, MaxBackoff: 10 * time.Second})
		c := client(newMem(f), gov, backoff)
		var wg sync.WaitGroup
		wg.Go(func() { readAll(t, do(t, c, http.MethodGet, "http://api.test/a", nil)) })
		time.Sleep(time.Second) // the first request waits to retry until t=10s
		if s := gov.Inspect(apiScope); s.InFlight != 0 {
			t.Fatalf("%d in flight during the retry's wait, want 0", s.InFlight)
		}
		start := time.Now()
		readAll(t, do(t, c, http.MethodGet, "http://api.test/b", nil))
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the other request waited %v for the slot, want none", waited)
		}
		wg.Wait()
		if s := gov.Inspect(apiScope); s.InFlight != 0 || len(f.recorded()) != 3 {
			t.Fatalf("%d in flight after %d attempts, want 0 after 3", s.InFlight, len(f.recorded()))
		}
	})
}

// Each attempt takes a token: at one token a second, the retry of a
// transient answer waits for its token even when the backoff is shorter.
func TestEachAttemptTakesAToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(500), status(502))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxRPS: 1, Burst: 1}})
		readAll(t, do(t, client(newMem(f), gov, quick), http.MethodGet, "http://api.test/items", nil))
		gapsWithin(t, f.recorded(), 3, time.Second, 1100*time.Millisecond)
	})
}

// A request whose context ends while it waits for a token (the scope is
// paused) ends with the context's error then, nothing sent; one whose
// deadline the pause would pass is refused at once.
func TestContextEndsTheTokenWait(t *testing.T) {
	for _, deadline := range []bool{false, true} {
		name := map[bool]string{false: "cancelled", true: "deadline"}[deadline]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(429, "Retry-After", "60"))
				gov := newGov(t, resilience.Config{})
				c := client(newMem(f), gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
				readAll(t, do(t, c, http.MethodGet, "http://api.test/a", nil)) // pauses the scope for 60 s
				ctx, cancel := context.WithCancel(context.Background())
				want, took := error(context.Canceled), 2*time.Second
				if deadline {
					ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
					want, took = context.DeadlineExceeded, 0
				} else {
					time.AfterFunc(2*time.Second, cancel)
				}
				defer cancel()
				start := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/b", nil)
				resp, err := c.Do(req)
				if resp != nil || !errors.Is(err, want) {
					t.Fatalf("response %v, err %v; want %v", resp, err, want)
				}
				if d := time.Since(start); d != took || len(f.recorded()) != 1 {
					t.Fatalf("took %v with %d attempts, want %v and nothing more sent", d, len(f.recorded()), took)
				}
			})
		})
	}
}

// A request whose context ends while it waits for a slot ends with the
// context's error at that moment, nothing sent.
func TestContextEndsTheSlotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, oneSlot())
		c := client(slowTransport{base: newMem(f), delay: map[string]time.Duration{"/slow": time.Minute}}, gov, quick)
		var wg sync.WaitGroup
		wg.Go(func() { readAll(t, do(t, c, http.MethodGet, "http://api.test/slow", nil)) })
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/b", nil)
		resp, err := c.Do(req)
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("response %v, err %v; want context.Canceled", resp, err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Fatalf("took %v, want 3s, when the context ended", took)
		}
		wg.Wait()
		if hits := f.recorded(); len(hits) != 1 || hits[0].path != "/slow" {
			t.Fatalf("hits %+v, want the slow request only", hits)
		}
	})
}

// A context that ends while the attempt is on the wire ends the call:
// no retry, and the service is not blamed.
func TestContextEndsTheAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		c := client(slowTransport{base: newMem(f), delay: map[string]time.Duration{"/slow": time.Minute}}, gov, quick)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/slow", nil)
		resp, err := c.Do(req)
		if resp != nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("response %v, err %v; want context.Canceled", resp, err)
		}
		if snap := gov.Inspect(apiScope); snap.Breaker.Failures != 0 || snap.InFlight != 0 {
			t.Fatalf("scope %+v, want no failure and the slot given back", snap)
		}
		// The breaker (threshold 1) is still closed: the next request goes.
		readAll(t, do(t, c, http.MethodGet, "http://api.test/fast", nil))
	})
}

// A throttled attempt's slot goes back once its answer is recorded, so
// that a request waiting for the slot sees the pause the answer's
// Retry-After set, and is held by it, as with resilience.Do. A success's
// goes back first, as Do's does.
func TestARequestWaitingForTheSlotOfAThrottledOneIsHeldByItsPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(429, "Retry-After", "60"))
		gov, err := resilience.NewGovernor(oneSlot(), resilience.WithStateStore(storetest.SlowPauses(resilience.MemoryStore(), 5*time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		c := client(slowTransport{base: newMem(f), delay: map[string]time.Duration{"/slow": 500 * time.Millisecond}}, gov,
			cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { readAll(t, do(t, c, http.MethodGet, "http://api.test/slow", nil)) })
		synctest.Wait()
		readAll(t, do(t, c, http.MethodGet, "http://api.test/b", nil))
		wg.Wait()
		hits := f.recorded()
		if len(hits) != 2 || hits[1].path != "/b" {
			t.Fatalf("hits %+v, want the throttled request and the waiting one", hits)
		}
		if sent := hits[1].at.Sub(start); sent < 60*time.Second+505*time.Millisecond {
			t.Fatalf("the request waiting for the slot of one throttled at 500ms for 60s: sent at %v, want after the pause", sent)
		}
		if in := gov.Inspect(apiScope).InFlight; in != 0 {
			t.Fatalf("%d slots held after the requests ended", in)
		}
	})
}

// So is a request waiting for the slot of one whose answer, a success,
// says that none of GitHub's quota is left: the pause until the quota
// resets is set before the slot goes back. Before, the slot went back
// first, and with a store whose pause takes a round trip (fleet mode's)
// the request waiting for it was sent at once into the spent quota
// (0.5 s, where the quota resets at 60 s).
func TestARequestWaitingForTheSlotOfOneThatSpentGitHubsQuotaIsHeldUntilTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		start := time.Now()
		f.script(status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(start.Add(time.Minute).Unix(), 10)))
		gov, err := resilience.NewGovernor(resilience.Config{Providers: map[string]resilience.ProviderConfig{"github": {MaxConcurrency: 1}}},
			resilience.WithStateStore(storetest.SlowPauses(resilience.MemoryStore(), 5*time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		base := slowTransport{base: newMem(f), delay: map[string]time.Duration{"/repos/octo/slow": 500 * time.Millisecond}}
		c := &http.Client{Transport: cloudghttp.NewTransport(base, cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
		var wg sync.WaitGroup
		wg.Go(func() { readAll(t, do(t, c, http.MethodGet, "https://api.github.com/repos/octo/slow", nil)) })
		synctest.Wait()
		readAll(t, do(t, c, http.MethodGet, "https://api.github.com/repos/octo/b", nil))
		wg.Wait()
		hits := f.recorded()
		if len(hits) != 2 || hits[1].path != "/repos/octo/b" {
			t.Fatalf("hits %+v, want the request that spent the quota and the waiting one", hits)
		}
		if sent := hits[1].at.Sub(start); sent < time.Minute {
			t.Fatalf("the request waiting for the slot of one that spent the quota at 500ms, until its reset at 60s: sent at %v, want after the reset", sent)
		}
	})
}
