package fleet

import (
	"sync"
	"time"
	"weak"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/state"
)

// sharedBreaker is a breaker whose state lives in Redis: one process's
// give-ups open it for the fleet, and the fleet sends one probe. A process
// trusts its cached view of a closed breaker for a short while (so that
// calls through a healthy scope do not ask Redis), and of an open one until
// its cooldown ends; a half-open breaker is asked about every time. Every
// token request refreshes the view.
//
// Answers may cross: a lease request sent before this process opened the
// breaker may come back after the answer that opened it, with an older
// reading. A reading replaces the view only when it is newer (see newer),
// so that no answer sets the view back to what the process knows is past.
type sharedBreaker struct {
	s    *Store
	keys []string
	spec state.BreakerSpec
	args []any // base cooldown (µs), key TTL (ms), threshold, max cooldown (µs), clock skew (µs)

	mu       sync.Mutex
	state    state.BreakerState
	failures int
	cooldown time.Duration // the current cooldown: the base doubled by the fleet's failed probes
	until    time.Duration // open/half-open: when Redis said a probe may go, in local time
	fetched  time.Duration // when the view was last refreshed, in local time
	readAt   int64         // when Redis read the view's breaker, on its clock (µs)
	readBack time.Duration // when the answer that carried it came back (mono)
	told     int64         // the Store's staleTick when a success was last sent to Redis

	localMu sync.Mutex
	local   *breaker.Breaker
	localEp int64
}

func newSharedBreaker(s *Store, key string, spec state.BreakerSpec) *sharedBreaker {
	return &sharedBreaker{
		s: s, keys: []string{key}, spec: spec,
		args: []any{spec.Cooldown.Microseconds(), s.ttlMS(), spec.Threshold, spec.MaxCooldown.Microseconds(),
			maxClockSkew.Microseconds()},
		state:    state.Closed,
		cooldown: spec.Cooldown,
		fetched:  never,
		told:     -1,
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

// A reading is what an answer says of a breaker: its state, wait (µs),
// failures and cooldown (µs) as a script replies them, the time Redis read
// them (at, on its clock, in µs), and the time this process sent the
// request (sent, mono).
type reading struct {
	st, wait, failures, cooldown, at any
	sent                             time.Duration
}

// refreshBreaker updates the cached view of the breaker at key from the
// answer to a token request.
func (s *Store) refreshBreaker(key string, now time.Duration, r reading) {
	v, ok := s.breakers.Load(key)
	if !ok {
		return
	}
	if b := v.(weak.Pointer[sharedBreaker]).Value(); b != nil {
		b.update(now, r)
	}
}

// longest is the breaker's longest cooldown.
func (b *sharedBreaker) longest() time.Duration { return max(b.spec.Cooldown, b.spec.MaxCooldown) }

// maxWait is the longest wait a valid breaker can give: its longest
// cooldown, and the clock skew between Redis's servers.
func (b *sharedBreaker) maxWait() time.Duration { return b.longest() + maxClockSkew }

// readCooldown reads a cooldown from a reply: the base one for none (a
// breaker that never opened); ok is false for one longer than the longest.
func (b *sharedBreaker) readCooldown(v any) (d time.Duration, ok bool) {
	d = queueMicros(v)
	if d == 0 {
		return b.spec.Cooldown, true
	}
	return d, d <= b.longest()
}

// update sets the cached view from a reading, when it is newer than the
// view's. A reading the breaker's settings could not produce (an unknown
// state, a wait past the longest cooldown, a cooldown longer than it) is
// not kept: the view goes stale, and the next call asks Redis, whose
// scripts treat such a breaker as absent. It returns what the reading
// says (closed, with no wait and no failure, for one it does not keep),
// newer or not: the answer to this caller's own request.
func (b *sharedBreaker) update(now time.Duration, r reading) (state.BreakerState, time.Duration, int) {
	st, ok := breakerState(r.st)
	wait := b.s.micros(r.wait)
	cooldown, cok := b.readCooldown(r.cooldown)
	failures := int(max(0, toInt(r.failures)))
	valid := ok && cok && wait <= b.maxWait()
	if !valid {
		st, wait, failures = state.Closed, 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.newer(r) {
		return st, wait, failures
	}
	b.readAt, b.readBack = toInt(r.at), mono()
	if !valid {
		b.state, b.failures, b.cooldown, b.fetched, b.until = state.Closed, 0, b.spec.Cooldown, never, now
		return st, wait, failures
	}
	b.state, b.failures, b.cooldown, b.fetched = st, failures, cooldown, now
	b.until = now + wait
	return st, wait, failures
}

// newer reports whether reading r is newer than the view's. A request
// sent after the view's answer came back ran after it, whatever Redis's
// clock says (a new master's may be behind the old one's after a
// failover); of two that were in flight together, Redis's clock tells
// which read the breaker last. mu must be held.
func (b *sharedBreaker) newer(r reading) bool {
	return r.sent >= b.readBack || toInt(r.at) >= b.readAt
}

// fallback returns the local breaker used while Redis does not answer. A
// new one starts from the last known view of the fleet's breaker, as the
// local bucket starts from the fleet's last known rate: an open breaker
// stays open until the end of its cooldown, and a half-open one until its
// probe's lease ends (the fleet's probe is out, or this process's, whose
// retries and verdict it takes), a local probe going then; both with the
// fleet's current cooldown, so that a failed local probe doubles it from
// there, as the fleet's would; a closed one keeps its failures.
func (b *sharedBreaker) fallback() *breaker.Breaker {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	if ep := b.s.episode.Load(); b.local == nil || b.localEp != ep {
		b.local = breaker.New(b.spec)
		b.localEp = ep
		b.mu.Lock()
		b.local.Restore(b.state, b.failures, b.cooldown, b.until)
		b.mu.Unlock()
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
	sent := mono()
	res, ok := b.s.run(allowScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().Allow(now)
	}
	st, wait, _ := b.update(now, reading{st: res[2], wait: res[1], failures: res[3], at: elem(res, 4), cooldown: elem(res, 5), sent: sent})
	if toInt(res[0]) == 1 {
		if st == state.HalfOpen {
			// This process holds the probe; others see half-open with a
			// lease of one (current) cooldown.
			b.mu.Lock()
			if b.state == state.HalfOpen {
				b.until = now + b.cooldown
			}
			b.mu.Unlock()
			return 0, true, true
		}
		return 0, true, false
	}
	return wait, false, false
}

// elem returns res[i], or nil when the reply is shorter.
func elem(res []any, i int) any {
	if i < len(res) {
		return res[i]
	}
	return nil
}

// snapshot reads the breaker in Redis (breakerSnapshotScript), and keeps
// the reading as the view when it is newer.
func (b *sharedBreaker) snapshot(now time.Duration) (res []any, st state.BreakerState, wait time.Duration, failures int, ok bool) {
	sent := mono()
	res, ok = b.s.run(breakerSnapshotScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return nil, state.Closed, 0, 0, false
	}
	st, wait, failures = b.update(now, reading{st: res[0], wait: res[3], failures: res[1], cooldown: res[2], at: elem(res, 4), sent: sent})
	return res, st, wait, failures, true
}

// AllowProbe lets the fleet's probe send its retries while the breaker is
// half-open or closed.
func (b *sharedBreaker) AllowProbe(now time.Duration) (time.Duration, bool) {
	if b.s.degraded.Load() {
		return b.fallback().AllowProbe(now)
	}
	_, st, wait, _, ok := b.snapshot(now)
	if !ok {
		return b.fallback().AllowProbe(now)
	}
	if st == state.Open {
		return wait, false
	}
	return 0, true
}

// Success resets the fleet's count of consecutive failures. It is sent to
// Redis when the view shows failures or a breaker not closed, and
// otherwise (the view pristine: no failure as far as this process knows)
// when no success was sent in the current period of WithBreakerStaleness
// (the store's ticker counts them; no clock is read on this path):
// successes cost no round trip each, and yet reset the failures other
// processes counted since the view was read. The bound: while this
// process keeps succeeding, the fleet hears of a success of it at least
// once per period (at once when its view, which every lease request
// refreshes, shows a failure), so that other processes' failures count as
// consecutive across its successes only within about one period.
func (b *sharedBreaker) Success() bool {
	if b.s.degraded.Load() {
		return b.fallback().Success()
	}
	tick := b.s.staleTick.Load()
	b.mu.Lock()
	quiet := b.state == state.Closed && b.failures == 0 && b.told == tick && b.s.cfg.breakerStale > 0
	if !quiet {
		b.told = tick
	}
	b.mu.Unlock()
	if quiet {
		return false
	}
	sent := mono()
	res, ok := b.s.run(breakerSuccessScript, b.keys, b.args...)
	if !ok || len(res) < 2 {
		return b.fallback().Success()
	}
	st, known := breakerState(res[1])
	cooldown, cok := b.readCooldown(elem(res, 3))
	b.mu.Lock()
	if r := (reading{at: elem(res, 2), sent: sent}); b.newer(r) {
		b.readAt, b.readBack = toInt(r.at), mono()
		b.failures = 0
		b.state = st
		if cok {
			b.cooldown = cooldown
		}
		if !known {
			b.fetched = never
		}
	}
	b.mu.Unlock()
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Failure(now time.Duration) bool {
	sent := mono()
	res, ok := b.s.run(breakerFailureScript, b.keys, b.args...)
	if !ok || len(res) < 4 {
		return b.fallback().Failure(now)
	}
	b.update(now, reading{st: res[1], wait: res[3], failures: res[2], at: elem(res, 4), cooldown: elem(res, 5), sent: sent})
	return toInt(res[0]) == 1
}

func (b *sharedBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	res, st, wait, failures, ok := b.snapshot(now)
	if !ok {
		return b.fallback().Snapshot(now)
	}
	cooldown, cok := b.readCooldown(res[2])
	if !cok {
		cooldown = b.spec.Cooldown
	}
	return state.BreakerSnapshot{State: st, Failures: failures, Cooldown: cooldown, Wait: wait}
}

func (b *sharedBreaker) Pristine() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == state.Closed && b.failures == 0
}

var _ state.Breaker = (*sharedBreaker)(nil)
