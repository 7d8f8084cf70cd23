// Package breaker implements the governor's circuit breaker: closed, open,
// and half-open with a single probe that holds a lease of one cooldown.
//
// Times are durations since an origin of the caller's clock. *Breaker
// implements state.Breaker.
package breaker

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/state"
)

// Breaker is safe for concurrent use. The zero value is not usable; call
// New or Init.
type Breaker struct {
	// sf is the state.BreakerState and the consecutive failures while
	// closed, in one word (state<<stateShift | failures) that the hot path
	// reads without the lock; it is written under mu.
	sf        atomic.Int32
	doublings int32 // failed probes since the breaker last closed; the cooldown is doubled this many times, up to MaxCooldown

	mu    sync.Mutex
	spec  *state.BreakerSpec // shared by every breaker of the same spec
	until time.Duration      // Open: end of the cooldown; HalfOpen: end of the probe's lease
	wake  chan struct{}      // closed at the next verdict; made by the first caller to wait for one
}

// stateShift places the state above the failures in sf, which counts up
// to MaxThreshold.
const stateShift = 28

// MaxThreshold is the largest threshold a breaker opens at: its state and
// its consecutive failures share a word, whose count stops at
// MaxThreshold-1 (a threshold above it would never be reached).
const MaxThreshold = 1 << stateShift

func (b *Breaker) load() (state.BreakerState, int) {
	v := b.sf.Load()
	return state.BreakerState(v >> stateShift), int(v & (1<<stateShift - 1))
}

// set writes the state and the failures. mu must be held.
func (b *Breaker) set(st state.BreakerState, failures int) {
	b.sf.Store(int32(st)<<stateShift | int32(min(failures, 1<<stateShift-1)))
}

// cooldown is the current cooldown: the BreakerSpec's, doubled once per
// failed probe since the breaker last closed, up to MaxCooldown. mu must be
// held.
func (b *Breaker) cooldown() time.Duration {
	c := b.spec.Cooldown
	for range b.doublings {
		if c >= b.spec.MaxCooldown || c <= 0 || c > math.MaxInt64/2 {
			break
		}
		c *= 2
	}
	return min(c, b.spec.MaxCooldown)
}

// New returns a closed breaker.
func New(s state.BreakerSpec) *Breaker {
	b := new(Breaker)
	b.Init(s)
	return b
}

// Init makes b, a zero Breaker (one embedded in a larger allocation, say),
// a closed breaker. It must not be called on a breaker in use. A
// threshold below 1 is read as 1, and one above MaxThreshold, which its
// count of failures would never reach, as MaxThreshold.
func (b *Breaker) Init(s state.BreakerSpec) {
	s.Threshold = min(max(s.Threshold, 1), MaxThreshold)
	if s.MaxCooldown < s.Cooldown {
		s.MaxCooldown = s.Cooldown
	}
	b.spec = specOf(s)
}

// specs holds one copy of each spec seen, so that a million breakers do
// not hold a million copies.
var specs sync.Map // state.BreakerSpec -> *state.BreakerSpec

func specOf(s state.BreakerSpec) *state.BreakerSpec {
	if p, ok := specs.Load(s); ok {
		return p.(*state.BreakerSpec)
	}
	p, _ := specs.LoadOrStore(s, &s)
	return p.(*state.BreakerSpec)
}

// Allow reports whether a call may be sent now. When it may not, wait is
// how long until the breaker lets a probe through, never more than one
// cooldown (a clock set back does not lengthen it). An open breaker whose
// cooldown has ended turns half-open and lets this caller through as the
// probe (probe is true), with a lease of one cooldown; if the probe never
// reports back, the next caller after the lease becomes the probe.
func (b *Breaker) Allow(now time.Duration) (wait time.Duration, ok, probe bool) {
	if st, _ := b.load(); st == state.Closed {
		return 0, true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rebase(now)
	switch st, _ := b.load(); st {
	case state.Closed:
		return 0, true, false
	case state.Open:
		if now < b.until {
			return b.until - now, false, false
		}
		b.set(state.HalfOpen, 0)
	default: // HalfOpen
		if now < b.until {
			return b.until - now, false, false
		}
	}
	b.until = now + b.cooldown() // the probe's lease
	return 0, true, true
}

// AllowProbe lets the probe of a half-open breaker send again (its retry):
// true while the breaker is half-open or closed, false once it is open.
func (b *Breaker) AllowProbe(now time.Duration) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rebase(now)
	if st, _ := b.load(); st == state.Open {
		return max(0, b.until-now), false
	}
	return 0, true
}

// rebase brings the end of a cooldown or of a probe's lease that lies
// more than one cooldown after now back to one cooldown after now: the
// caller's clock was set back (a wall clock stepped back, a Clock without
// a monotonic reading), and a cooldown is a span of that clock's time,
// not a date, so that the step back does not hold the breaker open (or
// its probe's lease) for as long again. mu must be held.
func (b *Breaker) rebase(now time.Duration) {
	if st, _ := b.load(); st != state.Closed {
		if c := b.cooldown(); b.until-now > c {
			b.until = now + c
		}
	}
}

// Success records a call that proved the scope works: the failure count
// resets, and a half-open breaker closes with its base cooldown restored.
// It reports whether it closed the breaker.
func (b *Breaker) Success() (closed bool) {
	if b.sf.Load() == 0 { // closed, no failures
		return false
	}
	b.mu.Lock()
	st, _ := b.load()
	switch st {
	case state.HalfOpen:
		b.set(state.Closed, 0)
		b.doublings = 0
		closed = true
	default:
		b.set(st, 0)
	}
	b.verdict()
	b.mu.Unlock()
	return closed
}

// Failure records a call that failed after its retries. It reports whether
// the breaker opened because of it: the threshold was reached while closed,
// or the half-open probe failed (the cooldown then doubles, up to
// MaxCooldown).
func (b *Breaker) Failure(now time.Duration) (opened bool) {
	opened, _ = b.FailureFrom(now)
	return opened
}

// FailureFrom is Failure, and also reports the state the failure found, so
// that a caller that reports the breaker's change says where it was (a
// call let through while closed may fail once it is half-open).
func (b *Breaker) FailureFrom(now time.Duration) (opened bool, from state.BreakerState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, failures := b.load()
	return b.failure(now, st, failures), st
}

// failure records a failure found in state st with failures counted. mu
// must be held.
func (b *Breaker) failure(now time.Duration, st state.BreakerState, failures int) (opened bool) {
	switch st {
	case state.Closed:
		if failures+1 < b.spec.Threshold {
			b.set(state.Closed, failures+1)
			return false
		}
	case state.HalfOpen:
		if b.cooldown() < b.spec.MaxCooldown {
			b.doublings++
		}
	default: // already open: a late report changes nothing
		return false
	}
	b.set(state.Open, 0)
	b.until = now + b.cooldown()
	b.verdict()
	return true
}

// Trip opens the breaker at once, whatever its count of failures: the
// governor found its scope dead (every answer failed for a while). A
// half-open breaker reopens as when its probe fails, with its cooldown
// doubled; an open one is left as it is. It reports whether it opened the
// breaker.
func (b *Breaker) Trip(now time.Duration) (opened bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch st, _ := b.load(); st {
	case state.Open:
		return false
	case state.HalfOpen:
		if b.cooldown() < b.spec.MaxCooldown {
			b.doublings++
		}
	}
	b.set(state.Open, 0)
	b.until = now + b.cooldown()
	b.verdict()
	return true
}

// Restore sets the breaker to a state kept elsewhere (a shared breaker's,
// read from another store): st, with failures counted while closed;
// cooldown, its current cooldown, which it takes as its BreakerSpec's
// doubled as often as it takes to reach it, up to MaxCooldown, so that a
// failed probe doubles it from there; and until, while open the end of the cooldown,
// while half-open the end of the probe's lease. It wakes the callers
// waiting for a verdict.
func (b *Breaker) Restore(st state.BreakerState, failures int, cooldown, until time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.doublings = 0
	// c > 0 and the bound: a base of 0 never doubles off it, and a
	// doubling past the largest duration would wrap to one below it.
	for c := b.spec.Cooldown; c > 0 && c < cooldown && c < b.spec.MaxCooldown && c <= math.MaxInt64/2; c *= 2 {
		b.doublings++
	}
	switch st {
	case state.Open, state.HalfOpen:
		b.set(st, 0)
		b.until = until
	default:
		b.set(state.Closed, max(0, min(failures, b.spec.Threshold-1)))
		b.until = 0
	}
	b.verdict()
}

// Verdict returns a channel closed at the breaker's next verdict on its
// scope: a success that resets its failures or closes it, or a failure
// that opens it. A caller waiting for the scope to work again waits on it
// (with a timer for the end of a cooldown or of a probe's lease, which
// need no verdict).
func (b *Breaker) Verdict() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wake == nil {
		b.wake = make(chan struct{})
	}
	return b.wake
}

// verdict wakes the callers waiting for one. mu must be held.
func (b *Breaker) verdict() {
	if b.wake != nil {
		close(b.wake)
		b.wake = nil
	}
}

// Snapshot returns the breaker's state at now.
func (b *Breaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, failures := b.load()
	s := state.BreakerSnapshot{State: st, Failures: failures, Cooldown: b.cooldown()}
	if s.State != state.Closed && b.until > now {
		s.Wait = min(b.until-now, s.Cooldown) // as rebase reads it
	}
	return s
}

// ProbeLease returns the time left at now in the lease of a half-open
// breaker's probe, and false when the breaker is not half-open or the
// lease is over: Snapshot's Wait, without the rest of the snapshot. The
// governor reads it as Allow lets a probe through, to know when the
// probe's lease ends (see resilience.Guard).
func (b *Breaker) ProbeLease(now time.Duration) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st, _ := b.load(); st != state.HalfOpen || b.until <= now {
		return 0, false
	}
	return min(b.until-now, b.cooldown()), true
}

// Pristine reports whether the breaker is indistinguishable from a new one.
func (b *Breaker) Pristine() bool { return b.sf.Load() == 0 }

var _ state.Breaker = (*Breaker)(nil)
