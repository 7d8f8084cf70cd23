//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// refusedShape checks that err is a refusal as a scheduler reads it: a
// *resilience.WouldWaitError matching check, that classifies as Throttled
// and says when the scope can go.
func refusedShape(t *testing.T, err, check error, retryAfter time.Duration) *resilience.WouldWaitError {
	t.Helper()
	var ww *resilience.WouldWaitError
	if !errors.As(err, &ww) || !errors.Is(err, check) {
		t.Fatalf("err = %v, want a *resilience.WouldWaitError matching %v", err, check)
	}
	if resilience.Classify(err) != resilience.Throttled {
		t.Fatalf("%v classifies as %v", err, resilience.Classify(err))
	}
	if ra, _ := resilience.RetryAfter(err); ra < retryAfter {
		t.Fatalf("RetryAfter %v, want at least %v", ra, retryAfter)
	}
	return ww
}

// lostOnly checks that the run lost want calls of kind, and no other, in
// its stats and its ledger.
func lostOnly(t *testing.T, g *resilience.Governor, stats *resilience.Stats, ledger *resilience.Ledger, kind resilience.Loss, want int) {
	t.Helper()
	tot := g.Summary(stats).Totals
	byKind := map[resilience.Loss]int64{
		resilience.LossGaveUp: tot.GaveUp, resilience.LossSkipped: tot.Rejected, resilience.LossFailed: tot.Failed,
		resilience.LossRefused: tot.Refused, resilience.LossCancelled: tot.Cancelled,
		resilience.LossErrored: tot.Errored, resilience.LossPanicked: tot.Panicked, resilience.LossDenied: tot.Denied,
	}
	if k := resilience.Loss(len(byKind)); !strings.HasPrefix(k.String(), "resilience.Loss(") {
		t.Fatalf("loss %v is not looked at", k)
	}
	for k, n := range byKind {
		w := 0
		if k == kind {
			w = want
		}
		if n != int64(w) || ledger.Count(k) != w {
			t.Errorf("%v: stats %d, ledger %d; want %d (ledger %q)", k, n, ledger.Count(k), w, ledger.Describe())
		}
	}
	if tot.Lost() != int64(want) || ledger.Lost() != want {
		t.Errorf("lost: stats %d, ledger %d; want %d", tot.Lost(), ledger.Lost(), want)
	}
}

func newRun(task string) (context.Context, *resilience.Stats, *resilience.Ledger) {
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, task)
	return ctx, stats, ledger
}

// A request whose context carries resilience.WithMaxWait waits no longer
// than it allows, over loopback: a 429 whose Retry-After is longer ends
// the request at once with the refusal, which wraps the 429's
// *StatusError, rather than with the 429 (the caller asked to be refused);
// the next request, while the scope is paused, is refused before sending.
// Two refusals, nothing else lost; Delay on the scope function's scope
// said so, changing nothing.
func TestMaxWaitRefusesOverLoopback(t *testing.T) {
	f := &fakeAPI{}
	f.script(status(429, "Retry-After", "60"))
	srv := loopback(t, f)
	gov := newGov(t, resilience.Config{})
	c := client(http.DefaultTransport, gov, quick)
	ctx, stats, ledger := newRun("items")
	ctx = resilience.WithMaxWait(ctx, time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/items", nil)

	start := time.Now()
	resp, err := c.Do(req)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("ended after %v, want at once", took)
	}
	if resp != nil {
		t.Fatalf("got the %d, want the refusal", resp.StatusCode)
	}
	ww := refusedShape(t, err, resilience.ErrNoToken, 55*time.Second)
	var se *cloudghttp.StatusError
	if !errors.As(ww.Last, &se) || se.HTTPStatusCode() != 429 {
		t.Fatalf("the refusal wraps %v, want the 429", ww.Last)
	}
	if n := len(f.recorded()); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	d, why := gov.Delay(scopeOf(req))
	if !errors.Is(why, resilience.ErrNoToken) || d < 55*time.Second {
		t.Fatalf("Delay = %v, %v", d, why)
	}

	start = time.Now()
	_, err = c.Do(req)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
	if ww := refusedShape(t, err, resilience.ErrNoToken, 55*time.Second); ww.Last != nil {
		t.Fatalf("a refusal before sending wraps %v", ww.Last)
	}
	if n := len(f.recorded()); n != 1 {
		t.Fatalf("%d attempts, want the first request's alone", n)
	}
	lostOnly(t, gov, stats, ledger, resilience.LossRefused, 2)
	if d2, why2 := gov.Delay(scopeOf(req)); why2 != why || d2 > d {
		t.Fatalf("after the refusal: Delay = %v, %v", d2, why2)
	}
}

// In virtual time: the refusal comes at once, and the refused response's
// body is closed.
func TestMaxWaitRefusalClosesTheResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(503, "Retry-After", "30"))
		mem := newMem(f)
		gov := newGov(t, resilience.Config{})
		ctx, stats, ledger := newRun("items")
		req, _ := http.NewRequestWithContext(resilience.WithMaxWait(ctx, 10*time.Second), http.MethodGet, "http://api.test/items", nil)
		start := time.Now()
		_, err := client(mem, gov, quick).Do(req)
		if took := time.Since(start); took != 0 {
			t.Fatalf("refused after %v, want at once", took)
		}
		refusedShape(t, err, resilience.ErrNoToken, 29*time.Second)
		synctest.Wait() // its drain
		if n := mem.closed.Load(); n != 1 {
			t.Fatalf("%d response bodies closed, want the 503's", n)
		}
		lostOnly(t, gov, stats, ledger, resilience.LossRefused, 1)
		if f := gov.Inspect(apiScope).Breaker.Failures; f != 0 {
			t.Fatalf("the refusal counted %d breaker failures", f)
		}
	})
}

// The body of the response a max-wait refusal leaves is drained before it
// is closed, as a retried response's is, so that its connection goes back
// to the pool rather than be dropped.
func TestMaxWaitRefusalDrainsTheResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(reply{status: 429, header: http.Header{"Retry-After": {"30"}}, body: `{"message":"slow down"}`})
		mem := newMem(f)
		ctx, _, _ := newRun("items")
		req, _ := http.NewRequestWithContext(resilience.WithMaxWait(ctx, 10*time.Second), http.MethodGet, "http://api.test/items", nil)
		if _, err := client(mem, newGov(t, resilience.Config{}), quick).Do(req); err == nil {
			t.Fatal("not refused")
		}
		synctest.Wait()
		if eof, closed := mem.ateEOF.Load(), mem.closed.Load(); eof != 1 || closed != 1 {
			t.Fatalf("the refused 429's body read to its end %d times and closed %d times, want once each: closed unread, its connection is dropped", eof, closed)
		}
	})
}

// bodiless is a base transport that answers 503 with a Retry-After of 30
// s and no Body, which net/http's Client accepts of a RoundTripper (it
// gives the caller an empty body).
type bodiless struct{}

func (bodiless) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{"Retry-After": {"30"}}, Request: r}, nil
}

// A refusal after an answer without a body is the refusal, as after any
// other answer: there is no body to close.
func TestMaxWaitRefusalOfAnAnswerWithoutBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		ctx, stats, ledger := newRun("items")
		req, _ := http.NewRequestWithContext(resilience.WithMaxWait(ctx, 10*time.Second), http.MethodGet, "http://api.test/items", nil)
		var err error
		if r := func() (r any) {
			defer func() { r = recover() }()
			_, err = client(bodiless{}, gov, quick).Do(req)
			return nil
		}(); r != nil {
			t.Fatalf("the request panicked: %v", r)
		}
		refusedShape(t, err, resilience.ErrNoToken, 29*time.Second)
		lostOnly(t, gov, stats, ledger, resilience.LossRefused, 1)
	})
}

// A request that may not wait is refused at once when its account's
// concurrency cap is full.
func TestMaxWaitRefusesAFullBulkhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, oneSlot())
		c := client(slowTransport{base: newMem(f), delay: map[string]time.Duration{"/slow": time.Minute}}, gov, quick)
		hctx, release := context.WithCancel(context.Background())
		defer release()
		slow, _ := http.NewRequestWithContext(hctx, http.MethodGet, "http://api.test/slow", nil)
		go func() {
			if resp, err := c.Do(slow); err == nil {
				resp.Body.Close()
			}
		}()
		synctest.Wait()
		if d, why := gov.Delay(apiScope); !errors.Is(why, resilience.ErrNoSlot) || d != 0 {
			t.Fatalf("cap full: Delay = %v, %v", d, why)
		}
		ctx, stats, ledger := newRun("items")
		req, _ := http.NewRequestWithContext(resilience.WithMaxWait(ctx, 0), http.MethodGet, "http://api.test/items", nil)
		start := time.Now()
		_, err := c.Do(req)
		if took := time.Since(start); took != 0 {
			t.Fatalf("refused after %v", took)
		}
		refusedShape(t, err, resilience.ErrNoSlot, 0)
		if n := len(f.recorded()); n != 0 {
			t.Fatalf("%d requests reached the API", n)
		}
		lostOnly(t, gov, stats, ledger, resilience.LossRefused, 1)
	})
}

// A request its context ends is lost once, as cancelled, wherever it was:
// waiting for a token before its first attempt, in the Transport's backoff
// after a throttle, waiting out the throttle's hint, or with its attempt
// out.
func TestCancelledRequestsCountedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fakeAPI, gov *resilience.Governor)
		path  string
		sent  int
	}{
		{"waiting for a token", func(_ *fakeAPI, gov *resilience.Governor) {
			gd, _ := gov.Begin(context.Background(), apiScope)
			gd.Pause(60 * time.Second)
			gd.End(nil)
		}, "/items", 0},
		{"in the backoff", func(f *fakeAPI, _ *resilience.Governor) { f.forever(status(429)) }, "/items", 1},
		{"waiting out the hint", func(f *fakeAPI, _ *resilience.Governor) { f.forever(status(429, "Retry-After", "30")) }, "/items", 1},
		{"with its attempt out", func(*fakeAPI, *resilience.Governor) {}, "/slow", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				gov := newGov(t, resilience.Config{})
				tc.setup(f, gov)
				c := client(slowTransport{base: newMem(f), delay: map[string]time.Duration{"/slow": time.Minute}}, gov,
					cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: time.Second, MaxBackoff: 10 * time.Second}))
				ctx, stats, ledger := newRun("items")
				ctx, cancel := context.WithCancel(ctx)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test"+tc.path, nil)
				done := make(chan error, 1)
				go func() {
					resp, err := c.Do(req)
					if err == nil {
						resp.Body.Close()
					}
					done <- err
				}()
				synctest.Wait()
				select {
				case err := <-done:
					t.Fatalf("the request ended before the cancel: %v", err)
				default:
				}
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
				if n := len(f.recorded()); n != tc.sent {
					t.Fatalf("%d requests reached the API, want %d", n, tc.sent)
				}
				lostOnly(t, gov, stats, ledger, resilience.LossCancelled, 1)
			})
		})
	}
}
