package resilience

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/state"
)

// health is what this process saw of a leaf scope's answers since its last
// success: since when every answer failed, how many calls had a failed
// answer, and whether only throttling answered. A scope whose every answer
// for breaker_dead_seconds failed, for at least breaker_threshold distinct
// calls, is dead: its breaker opens at once, so that its calls are lost in
// seconds instead of each spending its retries at the scope's slowest rate.
// (One call's own retries never make a scope dead: the breaker's rule
// counts that call when its retries end.) It is made at the scope's first
// failed answer; the success path reads one atomic to skip it.
type health struct {
	failing atomic.Bool // a streak of failures is on: a success has something to reset

	mu        sync.Mutex
	streak    uint32        // numbers the streaks, so that a call counts once in each
	since     time.Duration // the streak's first failed answer
	calls     int           // the calls with a failed answer in the streak
	throttled bool          // every failed answer of the streak was throttling
}

// noteFailure records a failed answer at now, throttling or not, of the
// call that last counted in streak noted, and reports whether the scope is
// dead by the settings of p, whether only throttling answered, and the
// streak the call now counts in.
func (e *scopeEntry) noteFailure(p *providerSettings, now time.Duration, throttled bool, noted uint32) (dead, forGood bool, streak uint32) {
	h := e.health.Load()
	if h == nil {
		h = new(health)
		if !e.health.CompareAndSwap(nil, h) {
			h = e.health.Load()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failing.Load() {
		h.streak++
		h.since, h.calls, h.throttled = now, 0, true
		h.failing.Store(true)
	}
	if noted != h.streak {
		h.calls++
	}
	h.throttled = h.throttled && throttled
	dead = p.dead > 0 && h.calls >= p.breaker.Threshold && now-h.since >= p.dead
	return dead, h.throttled, h.streak
}

// deadAt reports whether the scope is dead at now by the settings of p,
// without a new answer: a call about to ask its breaker finds out.
func (h *health) deadAt(p *providerSettings, now time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing.Load() && p.dead > 0 && h.calls >= p.breaker.Threshold && now-h.since >= p.dead
}

// noteSuccess records an answer that proved the scope works: the streak
// of failures, if any, ends. The check is in line: a scope that never
// failed pays one atomic load.
func (e *scopeEntry) noteSuccess() {
	if h := e.health.Load(); h != nil && h.failing.Load() {
		h.end()
	}
}

// end ends the streak of failures.
func (h *health) end() {
	h.mu.Lock()
	h.failing.Store(false)
	h.mu.Unlock()
}

// tripper is the optional interface of breakers that open at once (the
// in-process breaker): Trip opens a closed breaker, and reopens a
// half-open one as its probe's failure would; it reports whether it did.
type tripper interface {
	Trip(now time.Duration) bool
}

// trip opens b at now, a dead scope's breaker: through Trip when b has it,
// or by counting failures until it opens.
func trip(b state.Breaker, now time.Duration, threshold int) bool {
	if t, ok := b.(tripper); ok {
		return t.Trip(now)
	}
	for range threshold {
		if b.Failure(now) {
			return true
		}
	}
	return false
}
