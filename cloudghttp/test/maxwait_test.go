package test

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

// go-github over loopback, a context with resilience.WithMaxWait: a
// secondary limit whose retry-after is longer than the call may wait ends
// the call at once with the refusal (go-github hands back the Transport's
// error); the next call, while the scope is paused, is refused before
// sending. Delay on the GitHub scope function's scope said so.
func TestMaxWaitRefusesGoGitHubOverLoopback(t *testing.T) {
	f := newFake()
	f.script(svcREST, secondaryLimit(http.StatusForbidden, "60"))
	gov := newGov(t)
	c := loopbackClient(t, f, gov, false)
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "github_repos")
	ctx = resilience.WithMaxWait(ctx, time.Second)

	for i := range 2 {
		start := time.Now()
		_, _, err := c.Repositories.Get(ctx, account, "app")
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Fatalf("call %d refused after %v, want at once", i+1, took)
		}
		var ww *resilience.WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, resilience.ErrNoToken) || resilience.Classify(err) != resilience.Throttled {
			t.Fatalf("call %d: err = %v, want a throttling *resilience.WouldWaitError", i+1, err)
		}
		if ra, _ := resilience.RetryAfter(err); ra < 55*time.Second {
			t.Fatalf("call %d: RetryAfter %v", i+1, ra)
		}
		if n := len(f.hitsOf(svcREST)); n != 1 {
			t.Fatalf("after call %d: %d requests, want the first call's alone", i+1, n)
		}
	}
	lostOnly(t, gov, stats, ledger, resilience.LossRefused, 2)
	req, _ := http.NewRequest(http.MethodGet, "https://api.github.com/repos/"+account+"/app", nil)
	if d, why := gov.Delay(cloudghttp.GitHub(account)(req)); !errors.Is(why, resilience.ErrNoToken) || d < 55*time.Second {
		t.Fatalf("Delay = %v, %v", d, why)
	}
}

// go-github in virtual time: a call its context ends while the Transport
// waits out a primary limit's reset is lost once, as cancelled.
func TestCancelledWhileWaitingForTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.script(svcREST, primaryLimit(http.StatusForbidden, 30*time.Second))
		gov := newGov(t)
		c := memClient(t, f, gov, quick)
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "github_repos")
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, _, err := c.Repositories.Get(ctx, account, "app"); done <- err }()
		synctest.Wait()
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if n := len(f.hitsOf(svcREST)); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
		lostOnly(t, gov, stats, ledger, resilience.LossCancelled, 1)
	})
}
