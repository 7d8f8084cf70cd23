package test

import (
	"testing"
	"time"

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
		degrade := func(t *testing.T) (*process, *redisproxy.Proxy) {
			px, err := redisproxy.Start(be.addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(px.Close)
			return newProcess(t, at(px.Addr()), uniquePrefix(t), resilience.Config{}, fleet.WithTimeout(100*time.Millisecond)), px
		}
		down := func(t *testing.T, p *process, px *redisproxy.Proxy) {
			px.Down()
			deadline := time.Now().Add(2 * time.Second)
			for !p.store.Stats().Degraded { // the heartbeat notices
				if time.Now().After(deadline) {
					t.Fatal("not degraded")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		t.Run("open", func(t *testing.T) {
			p, px := degrade(t)
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
		t.Run("failures", func(t *testing.T) {
			p, px := degrade(t)
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
