//go:build go1.26

package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Callers queued at a halved rate leave sooner when the rate climbs back,
// in their order: a leaf of 10 rps halved to 5, thirty callers queued
// behind it (the last due 6 s later at 5 rps). Their own successes raise
// the rate after the quiet interval of 5 s, and every caller still queued
// then leaves at the higher rate: the last before 6 s, all in arrival
// order, and the run's wait is what was waited, not what the reservations
// first said.
func TestQueuedCallersLeaveSoonerWhenTheRateRises(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 10, Burst: 1}}}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttle() }, WithGovernor(g), once)
		if r := rate(g, ec2Vpcs); r != 5 {
			t.Fatalf("rate %v after a throttle, want 5", r)
		}
		ctx, stats := WithStats(context.Background())
		start := time.Now()
		var mu sync.Mutex
		var order []int
		var done []time.Duration
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * time.Microsecond) // arrival order
				Do(ctx, ec2Vpcs, func(context.Context) error {
					mu.Lock()
					order = append(order, i)
					done = append(done, time.Since(start))
					mu.Unlock()
					return nil
				}, WithGovernor(g))
			})
		}
		wg.Wait()
		for i, c := range order {
			if c != i {
				t.Fatalf("callers left in the order %v, not in arrival order", order)
			}
		}
		last := done[len(done)-1]
		// At 5 rps all the way the last would go at 6 s (the bucket's one
		// token refilled at 0.2 s, then 29 more at 0.2 s intervals).
		if last >= 6*time.Second-time.Millisecond || rate(g, ec2Vpcs) <= 5 {
			t.Fatalf("last caller left at %v with the rate at %v: the queue did not follow the rise", last, rate(g, ec2Vpcs))
		}
		var waited time.Duration
		for _, d := range done {
			waited += d.Truncate(time.Millisecond)
		}
		if w := g.Summary(stats).Totals.Wait.Seconds(); w < waited.Seconds()-0.1 || w > waited.Seconds()+0.1 {
			t.Fatalf("wait_seconds %.3f, want the %.3f s waited", w, waited.Seconds())
		}
	})
}

// A halving holds the whole queue to the new rate: the callers already
// waiting do not go at the rate that was throttled.
func TestQueuedCallersSlowDownWhenTheRateHalves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 10, Burst: 1}}}})
		done, wait := queueCallers(g, 11)
		synctest.Wait() // ten callers queued at 10 rps, the last due at 1 s
		answerOf(t, g, throttle())
		wait()
		if last := (*done)[len(*done)-1]; last < 2*time.Second-time.Millisecond {
			t.Fatalf("last queued caller left at %v after the halving, want about 2s (ten tokens at 5 rps)", last)
		}
	})
}

// A Retry-After pause holds the callers already queued too, and they
// leave at the bucket's rate from its end.
func TestRetryAfterHoldsTheCallersAlreadyQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Adaptive: new(false), Services: map[string]ServiceConfig{"ec2": {MaxRPS: 2, Burst: 1}}}})
		done, wait := queueCallers(g, 3)
		synctest.Wait() // queued at 0.5 and 1.0 s
		answerOf(t, g, throttleAfter(3*time.Second))
		wait()
		for i, want := range []time.Duration{0, 3500 * time.Millisecond, 4 * time.Second} {
			if d := (*done)[i]; d < want-time.Millisecond || d > want+time.Millisecond {
				t.Fatalf("caller %d left at %v, want %v (a 3 s pause from 0, then the queue at 2 rps)", i, d, want)
			}
		}
	})
}

// answerOf records err as the answer of an attempt of ec2Vpcs that took no
// token (an SDK's own retry, say), now.
func answerOf(t *testing.T, g *Governor, err error) {
	t.Helper()
	gd, berr := g.Begin(context.Background(), ec2Vpcs)
	if berr != nil {
		t.Fatal(berr)
	}
	gd.After(err)
	gd.End(err)
}

// queueCallers starts n successful calls of ec2Vpcs a microsecond apart
// (so that they arrive in order) and returns the times they were sent at,
// since now, filled in by the time wait returns.
func queueCallers(g *Governor, n int) (done *[]time.Duration, wait func()) {
	start := time.Now()
	var mu sync.Mutex
	var times []time.Duration
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Microsecond)
			Do(context.Background(), ec2Vpcs, func(context.Context) error {
				mu.Lock()
				times = append(times, time.Since(start))
				mu.Unlock()
				return nil
			}, WithGovernor(g))
		})
	}
	return &times, wg.Wait
}
