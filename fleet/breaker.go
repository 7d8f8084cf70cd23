package fleet

import (
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
	args []any // base cooldown (µs), key TTL (ms), threshold, max cooldown (µs), clock skew (µs)

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
		args: []any{spec.Cooldown.Microseconds(), s.ttlMS(), spec.Threshold, spec.MaxCooldown.Microseconds(),
			maxClockSkew.Microseconds()},
		state:   state.Closed,
		fetched: never,
	}
}

// breakerState reads a breaker's state as the scripts write it (the names
// of state.BreakerState's String); ok is false for any other.
func breakerState(v any) (st state.BreakerState, ok bool) {
	switch toString(v) {
	case state.Closed.String():
		return state.Closed, true
	case state.Open.String():
		return state.Open, true
	case state.HalfOpen.String():
		return state.HalfOpen, true
	}
	return state.Closed, false
}

// refreshBreaker updates the cached view of the breaker at key from the
// answer to a token request.
func (s *Store) refreshBreaker(key string, now time.Duration, st, waitUS, failures any) {
	v, ok := s.breakers.Load(key)
	if !ok {
		return
	}
	if b := v.(weak.Pointer[sharedBreaker]).Value(); b != nil {
		b.update(now, st, waitUS, failures)
	}
}

// maxWait is the longest wait a valid breaker can give: its longest
// cooldown, and the clock skew between Redis's servers.
func (b *sharedBreaker) maxWait() time.Duration {
	return max(b.spec.Cooldown, b.spec.MaxCooldown) + maxClockSkew
}

// update sets the cached view from a reply. A view the breaker's settings
// could not produce (an unknown state, a wait past the longest cooldown)
// is not kept: the view goes stale, and the next call asks Redis, whose
// scripts treat such a breaker as absent. It returns the state and the
// wait it kept.
func (b *sharedBreaker) update(now time.Duration, stv, waitUS, failures any) (state.BreakerState, time.Duration) {
	st, ok := breakerState(stv)
	wait := b.s.micros(waitUS)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !ok || wait > b.maxWait() {
		b.state, b.failures, b.fetched, b.until = state.Closed, 0, never, now
		return state.Closed, 0
	}
	b.state, b.failures, b.fetched = st, int(max(0, toInt(failures))), now
	b.until = now + wait
	return st, wait
}

// fallback returns the local breaker used while Redis does not answer. A
// new one starts from the last known view of the fleet's breaker, as the
// local bucket starts from the fleet's last known rate: an open breaker
// stays open until the end of its cooldown, and a half-open one until its
// probe's lease ends (the fleet's probe is out), a local probe going then;
// a closed one keeps its failures.
func (b *sharedBreaker) fallback() state.Breaker {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	if ep := b.s.episode.Load(); b.local == nil || b.localEp != ep {
		b.local = b.s.local.Breaker("", b.spec)
		b.localEp = ep
		b.seed(b.local)
	}
	return b.local
}

// tripper is the in-process breaker's Trip: it opens a closed breaker at
// once, for its base cooldown.
type tripper interface {
	Trip(now time.Duration) bool
}

// seed sets a new local breaker to the cached view.
func (b *sharedBreaker) seed(l state.Breaker) {
	b.mu.Lock()
	st, failures, until := b.state, b.failures, b.until
	b.mu.Unlock()
	switch st {
	case state.Open, state.HalfOpen:
		// Opened for the base cooldown from the time that makes it end
		// when the view's does.
		at := until - max(0, b.spec.Cooldown)
		if t, ok := l.(tripper); ok {
			t.Trip(at)
			return
		}
		for range max(1, b.spec.Threshold) {
			if l.Failure(at) {
				return
			}
		}
	default:
		for range min(failures, b.spec.Threshold-1) {
			l.Failure(until) // below the threshold: it counts, and opens nothing
		}
	}
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
	res, ok := b.s.run(allowScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().Allow(now)
	}
	st, wait := b.update(now, res[2], res[1], res[3])
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
	res, ok := b.s.run(breakerSnapshotScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().AllowProbe(now)
	}
	if st, wait := b.update(now, res[0], res[3], res[1]); st == state.Open {
		return wait, false
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
	res, ok := b.s.run(breakerSuccessScript, b.keys, b.args...)
	if !ok || len(res) < 2 {
		return b.fallback().Success()
	}
	st, known := breakerState(res[1])
	b.mu.Lock()
	b.failures = 0
	b.state = st
	if !known {
		b.fetched = never
	}
	b.mu.Unlock()
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Failure(now time.Duration) bool {
	res, ok := b.s.run(breakerFailureScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().Failure(now)
	}
	b.update(now, res[1], res[3], res[2])
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	res, ok := b.s.run(breakerSnapshotScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().Snapshot(now)
	}
	st, wait := b.update(now, res[0], res[3], res[1])
	b.mu.Lock()
	failures := b.failures
	b.mu.Unlock()
	return state.BreakerSnapshot{State: st, Failures: failures, Cooldown: min(b.s.micros(res[2]), b.maxWait()), Wait: wait}
}

func (b *sharedBreaker) Pristine() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == state.Closed && b.failures == 0
}

var _ state.Breaker = (*sharedBreaker)(nil)
