package test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// When Redis goes away, the local breaker starts from the last known state
// of the fleet's, as the local bucket starts from its last known rate: an
// open breaker stays open for the rest of its cooldown, a closed one keeps
// its failures. (A new, closed local breaker let calls through to a scope
// the fleet had found down, 2 s into a 60 s cooldown.)
func TestTheLocalBreakerStartsFromTheLastKnownState(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		degrade := func(t *testing.T) (*process, *redisproxy.Proxy, string) {
			px, _ := proxied(t, be)
			prefix := uniquePrefix(t)
			p := newProcess(t, at(px.Addr()), prefix, resilience.Config{}, fleet.WithTimeout(100*time.Millisecond))
			fallsBack(p.store) // down takes the proxy away under it: the outage
			return p, px, prefix
		}
		down := func(t *testing.T, p *process, px *redisproxy.Proxy) {
			px.Down()
			waitFor(t, 2*time.Second, "degraded", func() bool { return p.store.Stats().Degraded }) // the heartbeat notices
		}
		t.Run("open", func(t *testing.T) {
			p, px, _ := degrade(t)
			br := p.store.Breaker("fallback/open", state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: time.Minute})
			if !br.Failure(0) {
				t.Fatal("did not open")
			}
			down(t, p, px)
			if w, ok, _ := br.Allow(2 * time.Second); ok || w != 58*time.Second {
				t.Fatalf("2 s into a 60 s cooldown, with Redis down: ok %v, wait %v; want refused for 58 s", ok, w)
			}
			if w, ok, probe := br.Allow(time.Minute); !ok || !probe {
				t.Fatalf("at the end of the cooldown, with Redis down: ok %v, probe %v, wait %v; want a probe", ok, probe, w)
			}
		})
		// The local breaker carries the fleet's current cooldown (its
		// base doubled by failed probes): the local probe's lease is that
		// cooldown, and a failed local probe doubles it from there. (It
		// took the base cooldown: a lease of 1 s, then 2 s, where the
		// fleet had reached 8 s.)
		t.Run("doubled", func(t *testing.T) {
			p, px, prefix := degrade(t)
			spec := state.BreakerSpec{Threshold: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
			br := p.store.Breaker("fallback/doubled", spec)
			openedFor(t, p.rdb, prefix+":{fallback/doubled}:breaker", 8*time.Second) // the fleet's cooldown doubled three times
			if _, ok, _ := br.Allow(0); ok {
				t.Fatal("the fleet's open breaker let a call through")
			}
			down(t, p, px)
			if _, ok, probe := br.Allow(8 * time.Second); !ok || !probe {
				t.Fatal("no local probe at the end of the fleet's 8 s cooldown")
			}
			if s := br.Snapshot(8 * time.Second); s.Cooldown != 8*time.Second || s.Wait != 8*time.Second {
				t.Fatalf("the local probe's lease: %+v, want the fleet's cooldown, 8 s", s)
			}
			if !br.Failure(8 * time.Second) {
				t.Fatal("the failed local probe did not reopen it")
			}
			if s := br.Snapshot(8 * time.Second); s.State != state.Open || s.Cooldown != 16*time.Second || s.Wait != 16*time.Second {
				t.Fatalf("after a failed local probe: %+v, want open for 16 s (the fleet's 8 s doubled)", s)
			}
		})
		t.Run("failures", func(t *testing.T) {
			p, px, _ := degrade(t)
			br := p.store.Breaker("fallback/failures", state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: time.Minute})
			br.Failure(0)
			br.Failure(0)
			down(t, p, px)
			if !br.Failure(time.Second) {
				t.Fatalf("a third failure with a threshold of 3, two counted before Redis went away, did not open it: %+v", br.Snapshot(time.Second))
			}
		})
	})
}

// openedFor makes the breaker at key open with cooldown as its current
// cooldown (the base doubled by failed probes), for all of it from now, as
// the fleet's scripts write it.
func openedFor(t *testing.T, rdb redis.UniversalClient, key string, cooldown time.Duration) {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	us := now.UnixMicro()
	err = rdb.HSet(ctx, key, "state", "open", "failures", 0,
		"cooldown", cooldown.Microseconds(), "until", us+cooldown.Microseconds(), "since", us).Err()
	if err != nil {
		t.Fatal(err)
	}
}
