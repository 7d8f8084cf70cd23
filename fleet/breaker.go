package fleet

import (
	"math"
	"sync"
	"time"
	"weak"

	"github.com/cloudg/cloudg/state"
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
	spec state.BreakerSpec
	args []any // base cooldown (µs), key TTL (ms), threshold, max cooldown (µs)

	mu       sync.Mutex
	state    state.BreakerState
	failures int
	until    time.Duration // open/half-open: when Redis said a probe may go, in local time
	fetched  time.Duration // when the view was last refreshed, in local time

	localMu sync.Mutex
	local   state.Breaker
	localEp int64
}

func newSharedBreaker(s *Store, key string, spec state.BreakerSpec) *sharedBreaker {
	return &sharedBreaker{
		s: s, keys: []string{key}, spec: spec,
		args:    []any{spec.Cooldown.Microseconds(), s.ttlMS(), spec.Threshold, spec.MaxCooldown.Microseconds()},
		state:   state.Closed,
		fetched: math.MinInt64 / 4,
	}
}

// breakerState reads a breaker's state as the scripts write it (the names
// of state.BreakerState's String); a missing state is closed.
func breakerState(v any) state.BreakerState {
	switch toString(v) {
	case state.Open.String():
		return state.Open
	case state.HalfOpen.String():
		return state.HalfOpen
	}
	return state.Closed
}

// refreshBreaker updates the cached view of the breaker at key from the
// answer to a token request.
func (s *Store) refreshBreaker(key string, now time.Duration, st, waitUS, failures any) {
	v, ok := s.breakers.Load(key)
	if !ok {
		return
	}
	if b := v.(weak.Pointer[sharedBreaker]).Value(); b != nil {
		b.update(now, breakerState(st), micros(waitUS), toInt(failures))
	}
}

func (b *sharedBreaker) update(now time.Duration, st state.BreakerState, wait time.Duration, failures int64) {
	b.mu.Lock()
	b.state, b.failures, b.fetched = st, int(failures), now
	b.until = now + wait
	b.mu.Unlock()
}

func (b *sharedBreaker) fallback() state.Breaker {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	if ep := b.s.episode.Load(); b.local == nil || b.localEp != ep {
		b.local = b.s.local.Breaker("", b.spec)
		b.localEp = ep
	}
	return b.local
}

func (b *sharedBreaker) Allow(now time.Duration) (time.Duration, bool, bool) {
	if b.s.degraded.Load() {
		return b.fallback().Allow(now)
	}
	b.mu.Lock()
	st, until, fresh := b.state, b.until, now-b.fetched < b.s.cfg.breakerStale
	b.mu.Unlock()
	switch {
	case st == state.Closed && fresh:
		return 0, true, false
	case st == state.Open && now < until:
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
	st = breakerState(res[2])
	wait := micros(res[1])
	b.update(now, st, wait, toInt(res[3]))
	if toInt(res[0]) == 1 {
		if st == state.HalfOpen {
			// This process holds the probe; others see half-open with a
			// lease of one cooldown.
			b.mu.Lock()
			b.until = now + b.spec.Cooldown
			b.mu.Unlock()
			return 0, true, true
		}
		return 0, true, false
	}
	return wait, false, false
}

// AllowProbe lets the fleet's probe send its retries while the breaker is
// half-open or closed.
func (b *sharedBreaker) AllowProbe(now time.Duration) (time.Duration, bool) {
	if b.s.degraded.Load() {
		return b.fallback().AllowProbe(now)
	}
	res, ok := b.s.run(breakerSnapshotScript, b.keys, b.args[0], b.args[1])
	if !ok || len(res) < 4 {
		return b.fallback().AllowProbe(now)
	}
	if breakerState(res[0]) == state.Open {
		return micros(res[3]), false
	}
	return 0, true
}

func (b *sharedBreaker) Success() bool {
	if b.s.degraded.Load() {
		return b.fallback().Success()
	}
	if b.Pristine() {
		return false
	}
	res, ok := b.s.run(breakerSuccessScript, b.keys, b.args[0], b.args[1])
	if !ok || len(res) < 2 {
		return b.fallback().Success()
	}
	b.mu.Lock()
	b.failures = 0
	b.state = breakerState(res[1])
	b.mu.Unlock()
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Failure(now time.Duration) bool {
	res, ok := b.s.run(breakerFailureScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().Failure(now)
	}
	b.update(now, breakerState(res[1]), micros(res[3]), toInt(res[2]))
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	res, ok := b.s.run(breakerSnapshotScript, b.keys, b.args[0], b.args[1])
	if !ok || len(res) < 4 {
		return b.fallback().Snapshot(now)
	}
	return state.BreakerSnapshot{
		State:    breakerState(res[0]),
		Failures: int(toInt(res[1])),
		Cooldown: micros(res[2]),
		Wait:     micros(res[3]),
	}
}

func (b *sharedBreaker) Pristine() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == state.Closed && b.failures == 0
}

var _ state.Breaker = (*sharedBreaker)(nil)
