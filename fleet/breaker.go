package fleet

import (
	"math"
	"sync"
	"time"
	"weak"

	"github.com/cloudg/cloudg/resilience"
)

// sharedBreaker is a breaker whose state lives in Redis: one process's
// give-ups open it for the fleet, and the fleet sends one probe. A process
// trusts its cached view of a closed breaker for a short while (so that
// calls through a healthy scope do not ask Redis), and of an open one until
// its cooldown ends; a half-open breaker is asked about every time. Every
// token request refreshes the view.
type sharedBreaker struct {
	s    *Store
	keys []string
	spec resilience.BreakerSpec
	args []any // base cooldown (µs), key TTL (ms), threshold, max cooldown (µs)

	mu       sync.Mutex
	state    string // closed, open, half_open
	failures int
	until    int64 // open/half-open: when Redis said a probe may go, in local time
	fetched  int64 // when the view was last refreshed, in local time

	localMu sync.Mutex
	local   resilience.Breaker
	localEp int64
}

func newSharedBreaker(s *Store, key string, spec resilience.BreakerSpec) *sharedBreaker {
	return &sharedBreaker{
		s: s, keys: []string{key}, spec: spec,
		args:    []any{spec.Cooldown.Microseconds(), s.ttlMS(), spec.Threshold, spec.MaxCooldown.Microseconds()},
		state:   "closed",
		fetched: math.MinInt64 / 4,
	}
}

// refreshBreaker updates the cached view of the breaker at key from the
// answer to a token request.
func (s *Store) refreshBreaker(key string, now int64, state, waitUS, failures any) {
	v, ok := s.breakers.Load(key)
	if !ok {
		return
	}
	if b := v.(weak.Pointer[sharedBreaker]).Value(); b != nil {
		b.update(now, toString(state), toInt(waitUS), toInt(failures))
	}
}

func (b *sharedBreaker) update(now int64, state string, waitUS, failures int64) {
	if state == "" {
		state = "closed"
	}
	b.mu.Lock()
	b.state, b.failures, b.fetched = state, int(failures), now
	b.until = now + waitUS*1000
	b.mu.Unlock()
}

func (b *sharedBreaker) fallback() resilience.Breaker {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	if ep := b.s.episode.Load(); b.local == nil || b.localEp != ep {
		b.local = b.s.local.Breaker(resilience.Scope{}, b.spec)
		b.localEp = ep
	}
	return b.local
}

func (b *sharedBreaker) Allow(now int64) (int64, bool, bool) {
	if b.s.degraded.Load() {
		return b.fallback().Allow(now)
	}
	b.mu.Lock()
	state, until, fresh := b.state, b.until, now-b.fetched < int64(b.s.cfg.breakerStale)
	b.mu.Unlock()
	switch {
	case state == "closed" && fresh:
		return 0, true, false
	case state == "open" && now < until:
		// Only a probe after the cooldown can close an open breaker: the
		// cached cooldown is exact.
		return until - now, false, false
	}
	// Half-open (the probe may close it any moment), stale, or due for a
	// probe: ask Redis.
	res, ok := b.s.run(allowScript, b.keys, b.args[0], b.args[1])
	if !ok || len(res) < 4 {
		return b.fallback().Allow(now)
	}
	st := toString(res[2])
	waitUS := toInt(res[1])
	b.update(now, st, waitUS, toInt(res[3]))
	if toInt(res[0]) == 1 {
		if st == "half_open" {
			// This process holds the probe; others see half-open with a
			// lease of one cooldown.
			b.mu.Lock()
			b.until = now + int64(b.spec.Cooldown)
			b.mu.Unlock()
			return 0, true, true
		}
		return 0, true, false
	}
	return waitUS * 1000, false, false
}

// AllowProbe lets the fleet's probe send its retries while the breaker is
// half-open or closed.
func (b *sharedBreaker) AllowProbe(now int64) (int64, bool) {
	if b.s.degraded.Load() {
		return b.fallback().AllowProbe(now)
	}
	res, ok := b.s.run(breakerSnapshotScript, b.keys, b.args[0], b.args[1])
	if !ok || len(res) < 4 {
		return b.fallback().AllowProbe(now)
	}
	if toString(res[0]) == "open" {
		return toInt(res[3]) * 1000, false
	}
	return 0, true
}

func (b *sharedBreaker) Success() bool {
	if b.s.degraded.Load() {
		return b.fallback().Success()
	}
	b.mu.Lock()
	pristine := b.state == "closed" && b.failures == 0
	b.mu.Unlock()
	if pristine {
		return false
	}
	res, ok := b.s.run(breakerSuccessScript, b.keys, b.args[0], b.args[1])
	if !ok || len(res) < 2 {
		return b.fallback().Success()
	}
	b.mu.Lock()
	b.failures = 0
	b.state = toString(res[1])
	b.mu.Unlock()
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Failure(now int64) bool {
	res, ok := b.s.run(breakerFailureScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().Failure(now)
	}
	b.update(now, toString(res[1]), toInt(res[3]), toInt(res[2]))
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Snapshot(now int64) resilience.BreakerSnapshot {
	res, ok := b.s.run(breakerSnapshotScript, b.keys, b.args[0], b.args[1])
	if !ok || len(res) < 4 {
		return b.fallback().Snapshot(now)
	}
	return resilience.BreakerSnapshot{
		State:    toString(res[0]),
		Failures: int(toInt(res[1])),
		Cooldown: time.Duration(toInt(res[2])) * time.Microsecond,
		Wait:     time.Duration(toInt(res[3])) * time.Microsecond,
	}
}

func (b *sharedBreaker) Pristine() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == "closed" && b.failures == 0
}
