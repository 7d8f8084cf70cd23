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
	last      time.Duration // its last
	calls     int           // the calls with a failed answer in the streak
	throttled bool          // every failed answer of the streak was throttling
	opened    string        // why the breaker last opened (ScopeSnapshot.OpenReason)
	tripped   bool          // the streak opened the breaker: the scope was found dead
}

// successBreaker is the optional interface of a breaker shared through a
// state store (fleet mode's): LastSuccess returns when, on the governor's
// clock, the last success of the scope that the store recorded came,
// whichever process's (the probe's that closed the breaker, or one that
// reset its failures); ok is false when it knows of none. It reads what
// the breaker knows, with no store operation.
type successBreaker interface {
	LastSuccess() (at time.Duration, ok bool)
}

// sharedOK is the last success of a scope that its shared breaker knows
// of (successBreaker); known is false when none, or the breaker is not
// shared.
type sharedOK struct {
	at    time.Duration
	known bool
}

// sharedSuccess returns the last success of the scope that its shared
// breaker knows of: another process's success ends this process's streak
// of failures that began before it, as a success of its own would, so
// that a process does not find dead (and open the fleet's breaker of) a
// scope the fleet's probe found alive.
func (e *scopeEntry) sharedSuccess() sharedOK {
	if sb, ok := e.breaker.(successBreaker); ok {
		at, known := sb.LastSuccess()
		return sharedOK{at, known}
	}
	return sharedOK{}
}

// ends reports whether the success came after the first failure of a
// streak that began at since: it ended that streak.
func (s sharedOK) ends(since time.Duration) bool { return s.known && s.at >= since }

// noteFailure records a failed answer at now, throttling or not, of the
// call that last counted in streak noted, and reports whether the scope is
// dead by the settings of p, whether only throttling answered, and the
// streak the call now counts in. A streak a success of another process
// ended (sharedSuccess) is over: the failure begins a new one.
func (e *scopeEntry) noteFailure(p *providerSettings, now time.Duration, throttled bool, noted uint32) (dead, forGood bool, streak uint32) {
	ok := e.sharedSuccess()
	h := e.healthOf()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failing.Load() || ok.ends(h.since) {
		h.streak++
		h.since, h.calls, h.throttled, h.tripped = now, 0, true, false
		h.failing.Store(true)
	}
	if noted != h.streak {
		h.calls++
	}
	h.throttled = h.throttled && throttled
	h.last = now
	return h.deadAt(p, now), h.throttled, h.streak
}

// isDead reports whether the scope is dead at now by the settings of p,
// without a new answer: a call about to ask its breaker finds out. A
// streak that ok, a success of another process, ended is not.
func (h *health) isDead(p *providerSettings, now time.Duration, ok sharedOK) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !ok.ends(h.since) && h.deadAt(p, now)
}

// isDeadClosed is isDead for a scope whose breaker the caller read
// closed: a streak that opened the breaker (tripped) and finds it closed
// again was ended by the success that closed it, its probe's (in fleet
// mode, maybe another process's, an answer this process never saw), and
// no longer makes the scope dead (see endClosed).
func (h *health) isDeadClosed(p *providerSettings, now time.Duration, ok sharedOK) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.tripped && !ok.ends(h.since) && h.deadAt(p, now)
}

// deadClosed reports whether the scope, its breaker read closed, is dead
// at now by the settings of p, without a new answer (isDeadClosed): the
// next call's admission would open the breaker and refuse it. A scope that
// never failed pays one atomic load.
func (e *scopeEntry) deadClosed(p *providerSettings, now time.Duration) bool {
	h := e.health.Load()
	return h != nil && h.failing.Load() && h.isDeadClosed(p, now, e.sharedSuccess())
}

// endClosed ends the streak if a success ended it that this process did
// not see, and reports whether it did: the streak opened the breaker,
// which the caller read closed again (see isDeadClosed), or ok, a success
// of another process, came after its first failure.
func (h *health) endClosed(ok sharedOK) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failing.Load() || !h.tripped && !ok.ends(h.since) {
		return false
	}
	h.failing.Store(false)
	return true
}

// deadAt is isDead with h.mu held: a streak of failures from at least
// breaker_threshold calls spans breaker_dead_seconds by now, and the last
// of them is recent (within half of that), so that a burst of throttling
// followed by quiet (no call, or an open breaker's cooldown) is not taken
// for a dead scope.
func (h *health) deadAt(p *providerSettings, now time.Duration) bool {
	return h.failing.Load() && p.dead > 0 && h.calls >= p.breaker.Threshold &&
		now-h.since >= p.dead && now-h.last <= p.dead/2
}

// noteSuccess records an answer that proved the scope works: the streak
// of failures, if any, ends. The check is in line: a scope that never
// failed pays one atomic load.
func (e *scopeEntry) noteSuccess() {
	if h := e.health.Load(); h != nil && h.failing.Load() {
		h.end()
	}
}

// failing reports whether a streak of failures of the scope is on: what
// it learned, which the next failure may make dead (the reclaimer keeps
// the scope, as it keeps a breaker that counted failures, where
// breaker_dead_seconds finds dead scopes).
func (e *scopeEntry) failing() bool {
	h := e.health.Load()
	return h != nil && h.failing.Load()
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

// trip opens b at now, a dead scope's breaker, for why: through Trip when
// b has it, or by counting failures until it opens (saying why, to a
// breaker that keeps it).
func trip(b state.Breaker, now time.Duration, threshold int, why string) bool {
	if t, ok := b.(tripper); ok {
		return t.Trip(now)
	}
	rb, _ := b.(reasonBreaker)
	for range threshold {
		if rb != nil && rb.FailureFor(now, why) || rb == nil && b.Failure(now) {
			return true
		}
	}
	return false
}

// report returns how the scope is dead by the settings of p ("throttled
// for good", "down", or "" when it is not): its streak of failures, from
// breaker_threshold calls, spans breaker_dead_seconds (between its first
// and last failure, or by now, as the next call's admission finds it:
// deadAt) or opened its breaker, and no success ended it since (nor
// closed the breaker it opened: closed, as its snapshot reads it; nor ok,
// a success of another process). While the breaker is closed, the scope
// is dead only as the next call's admission finds it (isDeadClosed), which
// Governor.Delay says too. It also returns why its breaker last opened.
// h.mu is held.
func (h *health) report(p *providerSettings, now time.Duration, closed bool, ok sharedOK) (dead string, opened string) {
	switch {
	case !h.failing.Load() || h.calls < p.breaker.Threshold || p.dead <= 0 || ok.ends(h.since):
	case closed && (h.tripped || !h.deadAt(p, now)):
		// A closed breaker's scope is dead as the next call's admission
		// finds it, and Delay says (isDeadClosed): not when the breaker
		// the streak opened closed since (a success did it), nor when its
		// failures, which spanned breaker_dead_seconds while the breaker
		// was open (and which another process's probe closed), are long
		// past.
	case !h.tripped && h.last-h.since < p.dead && !h.deadAt(p, now):
		// Its failures do not span the time that makes a scope dead, nor
		// would the next call find it dead, and they did not open its
		// breaker.
	case h.throttled:
		dead = "throttled for good"
	default:
		dead = "down"
	}
	return dead, h.opened
}

// snapshot returns the streak at now as Inspect shows it
// (state.ScopeSnapshot's Failing), by the settings of p, its times on the
// governor's clock that began at epoch: the zero StreakSnapshot when no
// streak is on, or ok, a success of another process, ended it. h.mu is
// held.
func (h *health) snapshot(p *providerSettings, epoch time.Time, ok sharedOK) state.StreakSnapshot {
	if !h.failing.Load() || ok.ends(h.since) {
		return state.StreakSnapshot{}
	}
	s := state.StreakSnapshot{
		Since:      epoch.Add(h.since),
		Last:       epoch.Add(h.last),
		Calls:      h.calls,
		Throttled:  h.throttled,
		CallsShort: max(0, p.breaker.Threshold-h.calls),
	}
	if p.dead > 0 {
		s.DeadFrom = epoch.Add(h.since + p.dead)
	}
	return s
}

// read returns report and snapshot of one moment, under one hold of h.mu:
// a scope read dead shows the streak that makes it so, whatever answer
// comes as it is read.
func (h *health) read(p *providerSettings, epoch time.Time, now time.Duration, closed bool, ok sharedOK) (dead, opened string, streak state.StreakSnapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	dead, opened = h.report(p, now, closed, ok)
	return dead, opened, h.snapshot(p, epoch, ok)
}

// noteOpened records why the scope's breaker opened.
func (e *scopeEntry) noteOpened(reason string, dead bool) {
	h := e.healthOf()
	h.mu.Lock()
	h.opened = reason
	h.tripped = dead && h.failing.Load()
	h.mu.Unlock()
}

// openReason returns why the scope's breaker last opened: as the process
// that opened it said, for a breaker shared through a state store that
// keeps it (reasonBreaker); else as this process saw it, "" when it never
// did.
func (e *scopeEntry) openReason() string {
	if rb, ok := e.breaker.(reasonBreaker); ok {
		if why := rb.OpenReason(); why != "" {
			return why
		}
	}
	h := e.health.Load()
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.opened
}

// onlyThrottled reports whether every failed answer of the streak was
// throttling.
func (h *health) onlyThrottled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.throttled
}

// healthOf returns the scope's health, made by the first failure or trip
// that needs it (a scope that never fails carries none).
func (e *scopeEntry) healthOf() *health {
	if h := e.health.Load(); h != nil {
		return h
	}
	h := new(health)
	if !e.health.CompareAndSwap(nil, h) {
		h = e.health.Load()
	}
	return h
}
