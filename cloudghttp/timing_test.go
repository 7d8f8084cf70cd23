//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// The waits of the Transport, in virtual time.

// A retry is never sent sooner than the provider's hint, and the throttle
// halves the scope's rate and pauses it for everyone.
func TestRetryWaitsForTheHint(t *testing.T) {
	for _, hdr := range []string{"Retry-After", "Retry-After-Ms"} {
		t.Run(hdr, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				v := "7"
				if hdr == "Retry-After-Ms" {
					v = "7000"
				}
				f.script(status(429, hdr, v))
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
				resp, err := client(newMem(f), gov, quick).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				hits := f.recorded()
				if resp.StatusCode != 200 || len(hits) != 2 {
					t.Fatalf("status %d after %d attempts, want 200 after 2", resp.StatusCode, len(hits))
				}
				// Never sooner than the hint; the halved rate's next token
				// may add a fraction of a second.
				if gap := hits[1].at.Sub(hits[0].at); gap < 7*time.Second || gap > 8*time.Second {
					t.Fatalf("retry sent %v after the throttle, want 7s (the hint) and a token", gap)
				}
				tot := gov.Summary(stats).Totals
				if tot.Throttled != 1 || tot.Retries != 1 || tot.GaveUp != 0 {
					t.Fatalf("totals %v, want 1 throttle, 1 retry", tot)
				}
				if leaf := gov.Inspect(apiScope).Leaf; leaf.Rate >= leaf.Ceiling {
					t.Fatalf("leaf %+v not slowed", leaf)
				}
			})
		})
	}
}

// A transient answer's hint holds its retry back too, though it slows
// nothing: never sooner than the hint.
func TestTransientRetryWaitsForTheHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(500, "Retry-After", "4"))
		gov := newGov(t, resilience.Config{})
		readAll(t, do(t, client(newMem(f), gov, quick), http.MethodGet, "http://api.test/items", nil))
		hits := f.recorded()
		if len(hits) != 2 {
			t.Fatalf("%d attempts, want 2", len(hits))
		}
		if gap := hits[1].at.Sub(hits[0].at); gap != 4*time.Second {
			t.Fatalf("retry sent %v after the 500, want 4s, the hint", gap)
		}
		if leaf := gov.Inspect(apiScope).Leaf; leaf.Rate != leaf.Ceiling || leaf.Paused != 0 {
			t.Fatalf("leaf %+v, want a transient answer to slow nothing", leaf)
		}
	})
}

// A throttle without a hint halves the rate and backs off as a transient
// answer does: within the policy's base and cap.
func TestThrottleWithoutHintBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(503), status(429))
		pol := cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 2 * time.Second, MaxBackoff: 3 * time.Second})
		c := client(newMem(f), newGov(t, resilience.Config{}), pol)
		readAll(t, do(t, c, http.MethodGet, "http://api.test/items", nil))
		gapsWithin(t, f.recorded(), 3, 2*time.Second, 4*time.Second)
	})
}

// A hint past MaxPause is capped: the retry goes after 300 s.
func TestHintIsCappedAtMaxPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(503, "Retry-After", "86400"))
		c := client(newMem(f), newGov(t, resilience.Config{}), quick)
		resp := do(t, c, http.MethodGet, "http://api.test/items", nil)
		readAll(t, resp)
		hits := f.recorded()
		if len(hits) != 2 {
			t.Fatalf("%d attempts, want 2", len(hits))
		}
		if gap := hits[1].at.Sub(hits[0].at); gap < resilience.MaxPause || gap > resilience.MaxPause+time.Second {
			t.Fatalf("retry after %v, want MaxPause (%v)", gap, resilience.MaxPause)
		}
	})
}

// The backoff without a hint is decorrelated jitter within the policy's
// base and cap.
func TestBackoffWithinPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(500), status(500), status(500), status(500))
		pol := cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: time.Second, MaxBackoff: 2 * time.Second})
		c := client(newMem(f), newGov(t, resilience.Config{}), pol)
		readAll(t, do(t, c, http.MethodGet, "http://api.test/items", nil))
		gapsWithin(t, f.recorded(), 5, time.Second, 2*time.Second)
	})
}

// Without WithPolicy the backoff takes the provider's base delay and cap
// from the configuration.
func TestBackoffFromTheProvidersSettings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(500), status(500))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BaseDelaySeconds: 2, MaxBackoffSeconds: 3}})
		readAll(t, do(t, client(newMem(f), gov), http.MethodGet, "http://api.test/items", nil))
		gapsWithin(t, f.recorded(), 3, 2*time.Second, 3*time.Second)
	})
}

// The context's deadline bounds the call: a hint that would pass it is not
// waited for, and the caller gets the throttle's response at once.
func TestDeadlineStopsARetryItWouldPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(429, "Retry-After", "30"))
		gov := newGov(t, resilience.Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx, stats := resilience.WithStats(ctx)
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); resp.StatusCode != 429 || got != "Too Many Requests" {
			t.Fatalf("status %d body %q, want the 429 as it was", resp.StatusCode, got)
		}
		if took := time.Since(start); took != 0 || len(f.recorded()) != 1 {
			t.Fatalf("took %v with %d attempts, want at once after 1", took, len(f.recorded()))
		}
		if tot := gov.Summary(stats).Totals; tot.GaveUp != 1 {
			t.Fatalf("totals %v, want the throttle given up", tot)
		}
	})
}

// A context that ends while a retry waits ends the call with its error,
// which wraps the last answer; nothing more is sent.
func TestContextEndsTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(429, "Retry-After", "60"))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(newMem(f), newGov(t, resilience.Config{}), quick).Do(req)
		if resp != nil {
			t.Fatalf("got a response %d, want an error", resp.StatusCode)
		}
		var se *cloudghttp.StatusError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || se.HTTPStatusCode() != 429 {
			t.Fatalf("err %v, want context.Canceled wrapping the 429", err)
		}
		if took := time.Since(start); took != time.Second || len(f.recorded()) != 1 {
			t.Fatalf("took %v with %d attempts, want 1s and 1", took, len(f.recorded()))
		}
	})
}

// A context already done sends nothing.
func TestDoneContextSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		_, err := client(newMem(f), newGov(t, resilience.Config{}), quick).Do(req)
		if !errors.Is(err, context.Canceled) || len(f.recorded()) != 0 {
			t.Fatalf("err %v after %d attempts, want context.Canceled and nothing sent", err, len(f.recorded()))
		}
	})
}

// The scope's pause holds the other requests of the scope too.
func TestThrottlePausesTheScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(429, "Retry-After", "5"))
		gov := newGov(t, resilience.Config{})
		c := client(newMem(f), gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		readAll(t, do(t, c, http.MethodGet, "http://api.test/a", nil))
		start := time.Now()
		readAll(t, do(t, c, http.MethodGet, "http://api.test/b", nil))
		if waited := time.Since(start); waited < 5*time.Second || waited > 6*time.Second {
			t.Fatalf("the next request waited %v, want the 5s pause and a token", waited)
		}
	})
}

// When the breaker opens while a retry waits, the caller gets the last
// response, its body read back from memory, at once: the wait ends when
// the breaker opens (its cooldown lasts past the wait's end), not 9 s
// later.
func TestBreakerOpeningDuringTheWaitReturnsTheLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(reply{status: 500, body: "first failure"}, reply{status: 500, body: "other call"})
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		mem := newMem(f)
		slow := client(mem, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 10 * time.Second, MaxBackoff: 10 * time.Second}))
		once := client(mem, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(time.Second) // the slow call waits to retry
			readAll(t, do(t, once, http.MethodGet, "http://api.test/b", nil))
		})
		start := time.Now()
		resp := do(t, slow, http.MethodGet, "http://api.test/a", nil)
		took := time.Since(start)
		wg.Wait()
		if got := readAll(t, resp); resp.StatusCode != 500 || got != "first failure" {
			t.Fatalf("status %d body %q, want the first 500 with its body", resp.StatusCode, got)
		}
		if took != time.Second {
			t.Fatalf("the last response came back after %v, want 1s (when the breaker opened)", took)
		}
		if n := len(f.recorded()); n != 2 {
			t.Fatalf("%d attempts, want 2 (no retry through the open breaker)", n)
		}
		if st := gov.Inspect(apiScope).Breaker.State; st.String() != "open" {
			t.Fatalf("breaker %v, want open", st)
		}
	})
}

// An open breaker rejects a request before anything is sent, and its body
// is closed as a RoundTripper must.
func TestOpenBreakerRejectsAndClosesTheBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.forever(status(500))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		c := client(newMem(f), gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		readAll(t, do(t, c, http.MethodGet, "http://api.test/a", nil))
		b := &closeCounter{}
		req, _ := http.NewRequest(http.MethodPut, "http://api.test/a", b)
		_, err := c.Do(req)
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || len(f.recorded()) != 1 || b.closed != 1 {
			t.Fatalf("err %v, %d attempts, body closed %d times; want a CircuitOpenError, 1 attempt, closed once", err, len(f.recorded()), b.closed)
		}
	})
}

type closeCounter struct{ closed int }

func (b *closeCounter) Read([]byte) (int, error) { return 0, errors.New("not to be read") }
func (b *closeCounter) Close() error             { b.closed++; return nil }

// When the deadline would pass while the next token is awaited (another
// call paused the scope), the caller gets the last response, from memory.
func TestDeadlineDuringTheWaitReturnsTheLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(reply{status: 500, body: "first"}, status(429, "Retry-After", "100"))
		gov := newGov(t, resilience.Config{})
		mem := newMem(f)
		slow := client(mem, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 2 * time.Second, MaxBackoff: 2 * time.Second}))
		once := client(mem, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(time.Second)
			readAll(t, do(t, once, http.MethodGet, "http://api.test/b", nil))
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/a", nil)
		resp, err := slow.Do(req)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); resp.StatusCode != 500 || got != "first" {
			t.Fatalf("status %d body %q, want the first 500 with its body", resp.StatusCode, got)
		}
		if took := time.Since(start); took != 2*time.Second || len(f.recorded()) != 2 {
			t.Fatalf("took %v with %d attempts, want 2s and 2 (no retry into the pause)", took, len(f.recorded()))
		}
	})
}

// A response too large to keep in memory cannot be given back: when the
// breaker refuses its retry, the caller gets the breaker's error, which
// wraps the answer.
func TestLargeBodyIsNotKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(reply{status: 500, body: strings.Repeat("x", 100<<10)}, status(500))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		mem := newMem(f)
		slow := client(mem, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 10 * time.Second, MaxBackoff: 10 * time.Second}))
		once := client(mem, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(time.Second)
			readAll(t, do(t, once, http.MethodGet, "http://api.test/b", nil))
		})
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/a", nil)
		_, err := slow.Do(req)
		wg.Wait()
		var coe *resilience.CircuitOpenError
		var se *cloudghttp.StatusError
		if !errors.As(err, &coe) || !errors.As(err, &se) || se.HTTPStatusCode() != 500 {
			t.Fatalf("err %v, want a CircuitOpenError wrapping the 500", err)
		}
		if n := mem.closed.Load(); n != 2 {
			t.Fatalf("%d bodies closed, want both", n)
		}
	})
}
