// Package breaker implements the governor's circuit breaker: closed, open,
// and half-open with a single probe that holds a lease of one cooldown.
//
// Times are int64 nanoseconds on the caller's clock.
package breaker

import (
	"sync"
	"sync/atomic"
)

// State is a breaker's position.
type State int32

const (
	Closed   State = iota // calls flow
	Open                  // calls are rejected until the cooldown ends
	HalfOpen              // one probe call is out; the others are rejected
)

func (s State) String() string {
	switch s {
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	default:
		return "closed"
	}
}

// Spec describes a breaker.
type Spec struct {
	Threshold   int   // consecutive failures that open it; >= 1
	Cooldown    int64 // base open time
	MaxCooldown int64 // the cooldown doubles on a failed probe up to this
}

// Breaker is safe for concurrent use. The zero value is not usable; call New.
type Breaker struct {
	state    atomic.Int32 // State; read without the lock on the hot path
	failures atomic.Int32 // consecutive failures while closed

	mu       sync.Mutex
	spec     Spec
	cooldown int64 // current cooldown
	until    int64 // Open: end of the cooldown; HalfOpen: end of the probe's lease
}

// New returns a closed breaker.
func New(s Spec) *Breaker {
	if s.Threshold < 1 {
		s.Threshold = 1
	}
	if s.MaxCooldown < s.Cooldown {
		s.MaxCooldown = s.Cooldown
	}
	return &Breaker{spec: s, cooldown: s.Cooldown}
}

// Allow reports whether a call may be sent now. When it may not, wait is
// how long until the breaker lets a probe through. An open breaker whose
// cooldown has ended turns half-open and lets this caller through as the
// probe (probe is true), with a lease of one cooldown; if the probe never
// reports back, the next caller after the lease becomes the probe.
func (b *Breaker) Allow(now int64) (wait int64, ok, probe bool) {
	if State(b.state.Load()) == Closed {
		return 0, true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch State(b.state.Load()) {
	case Closed:
		return 0, true, false
	case Open:
		if now < b.until {
			return b.until - now, false, false
		}
		b.state.Store(int32(HalfOpen))
	default: // HalfOpen
		if now < b.until {
			return b.until - now, false, false
		}
	}
	b.until = now + b.cooldown // the probe's lease
	return 0, true, true
}

// AllowProbe lets the probe of a half-open breaker send again (its retry):
// true while the breaker is half-open or closed, false once it is open.
func (b *Breaker) AllowProbe(now int64) (wait int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if State(b.state.Load()) == Open {
		return max(0, b.until-now), false
	}
	return 0, true
}

// Success records a call that proved the scope works: the failure count
// resets, and a half-open breaker closes with its base cooldown restored.
// It reports whether it closed the breaker.
func (b *Breaker) Success() (closed bool) {
	if State(b.state.Load()) == Closed && b.failures.Load() == 0 {
		return false
	}
	b.mu.Lock()
	b.failures.Store(0)
	if State(b.state.Load()) == HalfOpen {
		b.state.Store(int32(Closed))
		b.cooldown = b.spec.Cooldown
		closed = true
	}
	b.mu.Unlock()
	return closed
}

// Failure records a call that failed after its retries. It reports whether
// the breaker opened because of it: the threshold was reached while closed,
// or the half-open probe failed (the cooldown then doubles, up to
// MaxCooldown).
func (b *Breaker) Failure(now int64) (opened bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch State(b.state.Load()) {
	case Closed:
		if int(b.failures.Add(1)) < b.spec.Threshold {
			return false
		}
	case HalfOpen:
		b.cooldown = min(2*b.cooldown, b.spec.MaxCooldown)
	default: // already open: a late report changes nothing
		return false
	}
	b.failures.Store(0)
	b.state.Store(int32(Open))
	b.until = now + b.cooldown
	return true
}

// Snapshot is a breaker's state at a time.
type Snapshot struct {
	State    State
	Failures int
	Cooldown int64 // current cooldown
	Wait     int64 // Open: time left; HalfOpen: time left in the probe's lease
}

// Snapshot returns the breaker's state at now.
func (b *Breaker) Snapshot(now int64) Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{State: State(b.state.Load()), Failures: int(b.failures.Load()), Cooldown: b.cooldown}
	if s.State != Closed && b.until > now {
		s.Wait = b.until - now
	}
	return s
}

// Pristine reports whether the breaker is indistinguishable from a new one.
func (b *Breaker) Pristine() bool {
	return State(b.state.Load()) == Closed && b.failures.Load() == 0
}
