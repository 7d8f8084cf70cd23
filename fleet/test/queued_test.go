package test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestQueuedCountsCallersNotLeasedTokens: Inspect's Queued is the callers
// waiting for a token, as in one process; the tokens the process's lease
// borrowed from Redis and no caller took yet are not callers, though the
// bucket's balance in Redis went below zero for them. Callers that do
// wait for their tokens are counted.
func TestQueuedCountsCallersNotLeasedTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 1,000 rps with a burst of 10: a lease of 64 tokens, 54 of them
		// after the burst.
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 10}}}}
		p := newProcess(t, be, prefix, cfg)
		if err := p.do(t, vpcs, ok); err != nil { // borrows a lease
			t.Fatal(err)
		}
		if s := p.gov.Inspect(vpcs); s.Queued != 0 || s.Leaf.Queued() != 0 {
			t.Fatalf("one call done, none waiting: Queued %d, the leaf's %d (tokens %.1f); want 0", s.Queued, s.Leaf.Queued(), s.Leaf.Tokens)
		}

		// 1 rps with a burst of 1: a lease of one token; of 4 callers at
		// once, 3 wait for their tokens (1, 2 and 3 s after the first).
		slow := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}}
		q := newProcess(t, be, uniquePrefix(t), slow)
		done := make(chan struct{}, 4)
		for range 4 {
			go func() {
				q.do(t, vpcs, ok)
				done <- struct{}{}
			}()
		}
		<-done // the one at once
		first := time.Now()
		time.Sleep(100 * time.Millisecond)
		s := q.gov.Inspect(vpcs)
		// Within a second of the first token, the 3 wait; a loaded machine
		// may read later, when the next has gone.
		if took := time.Since(first); s.Queued != 3 && (took < 900*time.Millisecond || s.Queued != 2) {
			t.Fatalf("3 callers waiting for their tokens: Queued %d (tokens %.2f) %v after the first token; want 3", s.Queued, s.Leaf.Tokens, took)
		}
		for range 3 {
			<-done
		}
	})
}

// TestALeaseDroppedForAPauseIsNotQueued: the tokens of a lease that a
// pause drops (the process's own throttle, or a pause another process set,
// which a call of this process finds) are given back, not left in Redis's
// balance as if callers held them: they are no callers, and the pause
// would otherwise shift them past its end, so that every process's Queued
// counted them for the whole pause (and the fleet's first tokens after it
// came as much later).
func TestALeaseDroppedForAPauseIsNotQueued(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 200 rps with a burst of 1 and a lease window of 300 ms, shared by
		// two processes: leases of 30 tokens, 5 ms apart, the second
		// process's after the first's.
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 200, Burst: 1}}}}
		a := newProcess(t, be, prefix, cfg, fleet.WithLeaseWindow(300*time.Millisecond))
		b := newProcess(t, be, prefix, cfg, fleet.WithLeaseWindow(300*time.Millisecond))
		waitFor(t, time.Second, "two processes", func() bool { return a.store.Stats().Processes == 2 && b.store.Stats().Processes == 2 })
		for _, p := range []*process{a, b} { // each borrows a lease
			if err := p.do(t, vpcs, ok); err != nil {
				t.Fatal(err)
			}
		}
		// A's call is throttled for 2 s: A drops its lease.
		a.do(t, vpcs, func(context.Context) error { return &apiErr{code: "Throttling", status: 400, retry: "2"} }, once)
		// B's next call, a lease window later, finds the pause and drops
		// its lease; it waits for the pause to end, queued.
		time.Sleep(350 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(b.gov))
		}()
		time.Sleep(150 * time.Millisecond)
		for _, p := range []named{{a, "A"}, {b, "B"}} {
			s := p.gov.Inspect(vpcs)
			if s.Leaf.Paused < time.Second {
				t.Fatalf("%s: paused %v, want most of 2 s", p.name, s.Leaf.Paused)
			}
			if s.Queued > 1 {
				t.Errorf("%s's Inspect in the pause, one caller (B's) waiting: Queued %d (tokens %.1f); want at most 1", p.name, s.Queued, s.Leaf.Tokens)
			}
		}
		start := time.Now()
		if err := <-done; err != nil || time.Since(start) < time.Second {
			t.Fatalf("B's call: %v, %v after the Inspects; want sent after A's pause", err, time.Since(start))
		}
	})
}

// TestAnotherProcesssLeasedTokensCountUntilTheirTime: the tokens another
// process's lease holds and no caller of its took count in this process's
// Queued (its bucket's Tokens below zero) until their times, which a lease
// request asks no further than a lease window ahead; a token of a caller
// that was refused (its limit, ReserveBy) or gone while it waited for the
// answer stays in the lease (a lease's worth of them), due at that
// caller's place in the fleet's queue, however far ahead, and counts
// until then.
func TestAnotherProcesssLeasedTokensCountUntilTheirTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 2 rps with a burst of 1 and a lease window of 100 ms: leases of
		// one token.
		spec := state.BucketSpec{Rate: 2, Burst: 1}
		a := newProcess(t, be, prefix, resilience.Config{})
		b := newProcess(t, be, prefix, resilience.Config{})
		ba := a.store.Bucket(vpcsKey, spec, 0)
		bb := b.store.Bucket(vpcsKey, spec, 0)
		for range 4 { // B's callers: tokens at once, and 0.5, 1 and 1.5 s on
			bb.Reserve(0)
		}
		// A's caller will not wait past 300 ms: its token, 2 s on, stays in
		// A's lease.
		w, ok, err := ba.(interface {
			ReserveBy(ctx context.Context, now, latest time.Duration) (time.Duration, bool, error)
		}).ReserveBy(context.Background(), 0, 300*time.Millisecond)
		if ok || err != nil || w < 1500*time.Millisecond {
			t.Fatalf("A's ReserveBy within 300 ms: %v, %v, %v; want refused, its token about 2 s on", w, ok, err)
		}
		// 1.1 s on (11 lease windows), B's caller of 1.5 s waits, and A's
		// leased token still counts in B's bucket, where A's counts its own
		// lease back.
		time.Sleep(1100 * time.Millisecond)
		if d := ba.Snapshot(0).Tokens - bb.Snapshot(0).Tokens; d < 0.8 {
			t.Errorf("1.1 s on, B's bucket counts %.2f callers queued more than A's, which counts its own lease back; want one more: A's leased token of 2 s, which counts until its time (the docs say so)", d)
		}
		// Past its time it counts no more.
		time.Sleep(1100 * time.Millisecond)
		if q := -bb.Snapshot(0).Tokens; q > 0.5 {
			t.Errorf("B's bucket 2.2 s on counts %.2f callers queued; want none: A's leased token was due at 2 s", q)
		}
	})
}
