package test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A queue of reserved tokens is as long as the callers queued make it:
// past the store's horizon (the key TTL and the longest pause, 1200 s by
// default), the bucket keeps its state, its rate and its queue, instead of
// counting as invalid and starting afresh, full at its ceiling. At GCP's
// floor of 0.05 rps, 60 callers queued reach it.
func TestAQueuePastTheHorizonKeepsTheBucket(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{})
		b := p.store.Bucket("horizon/queue", state.BucketSpec{Rate: 0.1, Burst: 1, Adaptive: true, Floor: 0.05}, 0)
		if r, _ := b.Throttle(0, 0); r != 0.05 {
			t.Fatalf("rate %v after a throttle, want the floor 0.05", r)
		}
		// A token every 20 s: the 65th is 1300 s ahead.
		var last time.Duration
		for i := range 65 {
			w := b.Reserve(0)
			if i > 0 && w < last+19*time.Second {
				t.Fatalf("token %d at 0.05 rps: wait %v after a token with wait %v: the queue was forgotten (bucket now %+v)",
					i, w, last, b.Snapshot(0))
			}
			last = w
		}
		if last < 1290*time.Second {
			t.Fatalf("the 65th token at 0.05 rps waits %v, want 1300 s", last)
		}
		if s := b.Snapshot(0); s.Rate != 0.05 || s.Tokens > -64 {
			t.Fatalf("bucket %+v after 65 tokens at the floor, want the rate 0.05 and a queue of 65", s)
		}
	})
}

// A pause on a queue moves the queue later by the pause: past the horizon
// too (1 s TTL and the longest pause: 301 s), both are kept.
func TestAPauseOnAQueuePastTheHorizonKeepsBoth(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{}, fleet.WithKeyTTL(time.Second), fleet.WithMaxLease(1))
		b := p.store.Bucket("horizon/pause", state.BucketSpec{Rate: 1, Burst: 1}, 0)
		for range 100 {
			b.Reserve(0) // the queue reaches 99 s ahead
		}
		b.Pause(0, 250*time.Second) // Retry-After: 250
		if w := b.Reserve(0); w < 345*time.Second {
			t.Fatalf("after a 250 s pause on a 99 s queue, the next token waits %v, want about 350 s", w)
		}
	})
}

// The bound on a queue keeps its purpose: a balance time past the key's
// own expiry, which the scripts always put past it, was not written by
// them, and counts as absent (the bucket starts afresh at its ceiling);
// one within it is a queue, and is kept.
func TestABalanceTimePastTheKeysExpiryCountsAsAbsent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{})
		ctx := context.Background()
		key := prefix + ":{horizon/junk}:bucket"
		spec := state.BucketSpec{Rate: 10, Burst: 1, Adaptive: true, Floor: 1}
		for _, c := range []struct {
			ahead, ttl time.Duration
			kept       bool
		}{
			{ahead: time.Hour, ttl: 15 * time.Minute},
			{ahead: 1300 * time.Second, ttl: 1400 * time.Second, kept: true},
		} {
			b := p.store.Bucket("horizon/junk", spec, 0)
			if r, _ := b.Throttle(0, 0); r != 5 {
				t.Fatalf("rate %v after a throttle, want 5", r)
			}
			now, err := p.rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			t0 := now.Add(c.ahead).UnixMicro()
			if err := p.rdb.HSet(ctx, key, "t0", strconv.FormatInt(t0, 10)).Err(); err != nil {
				t.Fatal(err)
			}
			p.rdb.PExpire(ctx, key, c.ttl)
			r := b.Snapshot(0).Rate
			if c.kept && r != 5 {
				t.Fatalf("a balance time %v ahead in a key that lives %v: rate %v, want the learned 5 (kept)", c.ahead, c.ttl, r)
			}
			if !c.kept && r != 10 {
				t.Fatalf("a balance time %v ahead in a key that lives %v: rate %v, want the ceiling 10 (rebuilt)", c.ahead, c.ttl, r)
			}
			p.rdb.Del(ctx, key)
		}
	})
}

// A breaker's cooldown may be longer than the store's horizon (the key TTL
// and the longest pause: 301 s with a TTL of 1 s): its wait is read whole,
// and a lease request's answer, which carries the scope's breaker, keeps
// the process's view of it instead of reporting it invalid. (The wait was
// cut to the horizon, 301 s of a 600 s cooldown, and every lease request
// made the next Allow ask Redis again.)
func TestABreakerCooldownPastTheHorizon(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{},
			fleet.WithKeyTTL(time.Second), fleet.WithHeartbeat(time.Hour))
		spec := state.BreakerSpec{Threshold: 1, Cooldown: 10 * time.Minute, MaxCooldown: 10 * time.Minute}
		br := p.store.Breaker("horizon/breaker", spec)
		bk := p.store.Bucket("horizon/breaker", state.BucketSpec{Rate: 100, Burst: 100}, 0)
		if !br.Failure(0) {
			t.Fatal("did not open")
		}
		if w, ok, _ := br.Allow(0); ok || w < 599*time.Second {
			t.Fatalf("a breaker open for 600 s: Allow ok %v, wait %v", ok, w)
		}
		if s := br.Snapshot(0); s.Cooldown != 10*time.Minute || s.Wait < 599*time.Second {
			t.Fatalf("a breaker open for 600 s: %+v", s)
		}
		bk.Reserve(0) // a lease request, whose answer refreshes the view
		calls := p.store.Stats().RedisCalls
		for range 10 {
			if w, ok, _ := br.Allow(0); ok || w < 599*time.Second {
				t.Fatalf("after a lease request: Allow ok %v, wait %v", ok, w)
			}
		}
		if n := p.store.Stats().RedisCalls - calls; n != 0 {
			t.Fatalf("10 Allows of a breaker open for 600 s after a lease request: %d Redis calls, want none (the cached cooldown is exact)", n)
		}
	})
}
