package test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A key lives for its TTL after its state stops mattering, not only after
// its last write: a bucket's until its pause is over and its balance full
// again, a breaker's until its cooldown ends. With a TTL shorter than
// those, an expired key would make every process find a fresh bucket (full,
// at its ceiling) or a closed breaker. (miniredis expires keys only on
// FastForward, which expireFor calls; a real Redis as time passes.)

func TestAKeyLivesUntilItsBucketHasRefilled(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{}, fleet.WithKeyTTL(200*time.Millisecond), fleet.WithMaxLease(1))
		b := p.store.Bucket("ttl/refill", state.BucketSpec{Rate: 1, Burst: 1}, 0)
		for range 5 {
			b.Reserve(0) // 1 at once, then 4 queued: the bucket is full again in 5 s
		}
		be.expireFor(300 * time.Millisecond)
		if w := b.Reserve(0); w < 3*time.Second {
			t.Fatalf("the 6th token at 1 rps with a burst of 1, 300 ms after the 5th: wait %v (the key expired with its queue)", w)
		}
	})
}

func TestAKeyLivesUntilItsPauseEnds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{}, fleet.WithKeyTTL(time.Second))
		b := p.store.Bucket("ttl/pause", state.BucketSpec{Rate: 10, Burst: 10}, 0)
		b.Pause(0, 5*time.Second) // Retry-After: 5
		be.expireFor(1500 * time.Millisecond)
		if w := b.Reserve(0); w < 3*time.Second {
			t.Fatalf("1.5 s into a 5 s pause, with a key TTL of 1 s: a token with wait %v", w)
		}
	})
}

func TestAnOpenBreakerLivesUntilItsCooldownEnds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		spec := state.BreakerSpec{Threshold: 1, Cooldown: 5 * time.Second, MaxCooldown: 10 * time.Second}
		p := newProcess(t, be, prefix, resilience.Config{}, fleet.WithKeyTTL(time.Second))
		if !p.store.Breaker("ttl/brk", spec).Failure(0) { // opens for 5 s
			t.Fatal("did not open")
		}
		be.expireFor(1500 * time.Millisecond)
		q := newProcess(t, be, prefix, resilience.Config{}, fleet.WithKeyTTL(time.Second)) // another process
		if w, ok, _ := q.store.Breaker("ttl/brk", spec).Allow(0); ok || w < 3*time.Second {
			t.Fatalf("1.5 s into a 5 s cooldown, with a key TTL of 1 s, another process's Allow: ok %v, wait %v", ok, w)
		}
	})
}

// With the default TTL of 15 minutes, a breaker whose cooldown is longer
// (breaker_max_cooldown_seconds past 900) keeps its key through it.
func TestABreakerKeyOutlivesACooldownLongerThanTheTTL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{})
		spec := state.BreakerSpec{Threshold: 1, Cooldown: 20 * time.Minute, MaxCooldown: time.Hour}
		p.store.Breaker("ttl/long", spec).Failure(0)
		key := prefix + ":{ttl/long}:breaker"
		if ttl := p.rdb.PTTL(context.Background(), key).Val(); ttl < 35*time.Minute-time.Second || ttl > 35*time.Minute+time.Second {
			t.Fatalf("a breaker open for 20 minutes has TTL %v, want its cooldown and the 15 minutes", ttl)
		}
	})
}
