// Package bucket implements the governor's token buckets: reservation-based,
// FIFO, with an optional adaptive rate (AIMD) and pauses for Retry-After.
//
// Times are int64 nanoseconds on the caller's clock (any monotonic origin);
// the bucket never reads a clock itself, so it runs in virtual time, scaled
// time or real time alike.
package bucket

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The spec's AIMD constants (section 2.4).
const (
	// DecreaseFactor multiplies the rate on a congestion event.
	DecreaseFactor = 0.5
	// DecreaseInterval groups throttles into one congestion event.
	DecreaseInterval = int64(time.Second)
	// IncreaseInterval is both the quiet time after a throttle before the
	// rate may grow, and the minimum time between two increases.
	IncreaseInterval = int64(5 * time.Second)
	// IncreaseStep is the share of the ceiling given back per increase.
	IncreaseStep = 0.05
	// MinIncrease is the smallest increase in tokens per second.
	MinIncrease = 0.01

	// The opt-in "measured goodput" controller: on a congestion event the
	// rate drops to GoodputShare of what the provider served (successes per
	// second over the last GoodputWindow, or since the previous decrease),
	// never above GoodputCap of the current rate; it then climbs by
	// GoodputStep of the ceiling per IncreaseInterval. The design note's
	// model climbs by 2%; 1.5% keeps the simulator's default scenario at or
	// under 3% rejected on every one of 30 seeds (2% reaches 3.26%), with a
	// mean goodput of 98% (sim/README.md).
	GoodputShare  = 0.95
	GoodputCap    = 0.9
	GoodputStep   = 0.015
	GoodputWindow = 5 // seconds

	// goodputSlot is the resolution of the success counts.
	goodputSlot  = int64(100 * time.Millisecond)
	goodputSlots = GoodputWindow*int(int64(time.Second)/goodputSlot) + 1
)

// never is a time far enough in the past that "now - never" exceeds every
// interval without overflowing.
const never = math.MinInt64 / 4

// Spec describes a bucket.
type Spec struct {
	Rate     float64 // ceiling in tokens per second; > 0
	Burst    float64 // capacity at the ceiling; <= 0 means twice the rate; never below 1
	Floor    float64 // lowest adaptive rate; <= 0 means no floor beyond a tiny positive one
	Adaptive bool    // halve on throttles, recover on successes
	Goodput  bool    // adaptive with the measured-goodput controller instead of AIMD
}

// Capacity is the bucket's capacity at the ceiling.
func (s Spec) Capacity() float64 {
	c := s.Burst
	if c <= 0 {
		c = 2 * s.Rate
	}
	return math.Max(1, c)
}

// Bucket is a token bucket. It is safe for concurrent use. The zero value
// is not usable; call New.
//
// The balance lives in one atomic word, t0: the time at which the balance
// is zero, so that the balance at time t is (t - t0) / interval, capped at
// the capacity. Taking a token moves t0 one interval later with a
// compare-and-swap, so the call path takes no lock; a negative balance
// (t0 in the future) is the queue of callers waiting, in arrival order.
// Rate changes, pauses and the AIMD state take the mutex and rewrite t0 in
// the new units. A reservation racing a rate change may be counted in the
// old units: an error of at most one token, at the instant of the change.
type Bucket struct {
	t0     atomic.Int64           // the time at which the balance is zero
	paused atomic.Int64           // no token is usable before this time
	p      atomic.Pointer[params] // the current rate

	mu           sync.Mutex
	ceiling      float64
	floor        float64
	ratio        float64 // capacity at the ceiling / ceiling
	adaptive     bool
	lastDecrease int64
	lastThrottle int64
	lastIncrease int64

	goodput *servedWindow // the measured-goodput controller's counts; nil for AIMD

	slowed atomic.Bool // rate < ceiling: lets Success skip the lock
}

// servedWindow counts successes in slots of 100 ms for the last
// GoodputWindow seconds (a ring indexed by slot).
type servedWindow struct {
	created  int64
	served   [goodputSlots]int64
	servedAt [goodputSlots]int64 // the slot each entry counts
}

// params is a rate, immutable once published.
type params struct {
	rate     float64
	capacity float64
	interval int64 // nanoseconds per token, at least 1
	capNS    int64 // capacity * interval: how far t0 may lag behind now
}

// maxSpan bounds the nanosecond spans of absurd rates (1e-300 tokens per
// second) so that the arithmetic on t0 cannot overflow: about 36 years.
const maxSpan = float64(1 << 60)

func newParams(rate, capacity float64) *params {
	return &params{
		rate:     rate,
		capacity: capacity,
		interval: max(1, int64(math.Min(1e9/rate, maxSpan))),
		capNS:    max(1, int64(math.Min(capacity/rate*1e9, maxSpan))),
	}
}

// New returns a full bucket at its ceiling.
func New(s Spec, now int64) *Bucket {
	floor := s.Floor
	if floor <= 0 {
		floor = 1e-3
	}
	floor = math.Min(floor, s.Rate)
	capacity := s.Capacity()
	b := &Bucket{
		ceiling:      s.Rate,
		floor:        floor,
		ratio:        capacity / s.Rate,
		adaptive:     s.Adaptive || s.Goodput,
		lastDecrease: never,
		lastThrottle: never,
		lastIncrease: never,
	}
	if s.Goodput {
		b.goodput = &servedWindow{created: now}
	}
	p := newParams(s.Rate, capacity)
	b.p.Store(p)
	b.t0.Store(now - p.capNS)
	b.paused.Store(never)
	return b
}

// Reserve takes one token and returns how long the caller must wait before
// using it (0: at once). Reservations queue in arrival order: the balance
// goes negative and each later caller waits longer.
func (b *Bucket) Reserve(now int64) (wait int64) {
	for {
		p := b.p.Load()
		pu := b.paused.Load()
		t := b.t0.Load()
		nt := max(t, max(now, pu)-p.capNS) + p.interval
		if b.t0.CompareAndSwap(t, nt) {
			return max(0, nt-now, pu-now)
		}
	}
}

// TryReserve takes one token only if it can be used at once.
func (b *Bucket) TryReserve(now int64) bool {
	for {
		p := b.p.Load()
		if b.paused.Load() > now {
			return false
		}
		t := b.t0.Load()
		nt := max(t, now-p.capNS) + p.interval
		if nt > now {
			return false
		}
		if b.t0.CompareAndSwap(t, nt) {
			return true
		}
	}
}

// Cancel gives back a token reserved by a caller that will not use it.
func (b *Bucket) Cancel(now int64) {
	for {
		p := b.p.Load()
		t := b.t0.Load()
		nt := max(t-p.interval, max(now, b.paused.Load())-p.capNS)
		if nt == t || b.t0.CompareAndSwap(t, nt) {
			return
		}
	}
}

// Throttle records a throttling answer. An adaptive bucket halves its rate
// (not below the floor) and drains its stored burst, at most once per
// DecreaseInterval; throttles within that interval are the same congestion
// event. A positive pause holds every caller until now+pause. It returns the
// rate after the event and whether this call decreased it.
func (b *Bucket) Throttle(now, pause int64) (rate float64, decreased bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastThrottle = now
	rate = b.p.Load().rate
	if b.adaptive && now-b.lastDecrease >= DecreaseInterval {
		prev := b.lastDecrease
		b.lastDecrease = now
		r := rate * DecreaseFactor
		if b.goodput != nil {
			r = b.goodput.rate(now, rate, prev)
		}
		if r = math.Max(b.floor, r); r < rate {
			rate, decreased = r, true
		}
		b.setRate(now, rate, true)
	}
	b.pause(now, pause)
	return rate, decreased
}

// Pause holds every caller until now+pause without touching the rate.
func (b *Bucket) Pause(now, pause int64) {
	b.mu.Lock()
	b.pause(now, pause)
	b.mu.Unlock()
}

// pause holds every caller until now+pause: the balance is frozen over the
// pause (t0 moves later by the new part of it), and no token is usable
// before it ends. mu must be held.
func (b *Bucket) pause(now, pause int64) {
	if pause <= 0 {
		return
	}
	until := now + pause
	pu := b.paused.Load()
	if until <= pu {
		return // within the pause in force
	}
	start := max(now, pu)
	b.paused.Store(until)
	for {
		p := b.p.Load()
		t := b.t0.Load()
		nt := max(t, start-p.capNS) + (until - start)
		if b.t0.CompareAndSwap(t, nt) {
			return
		}
	}
}

// Success records a successful call. After IncreaseInterval without a
// throttle, an adaptive bucket below its ceiling gains IncreaseStep of the
// ceiling (at least MinIncrease), at most once per IncreaseInterval. It
// returns the rate and whether this call increased it.
func (b *Bucket) Success(now int64) (rate float64, increased bool) {
	if b.goodput == nil && !b.slowed.Load() {
		return b.ceiling, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	step := IncreaseStep
	if b.goodput != nil {
		b.goodput.count(now)
		step = GoodputStep
	}
	rate = b.p.Load().rate
	if rate < b.ceiling && now-b.lastThrottle >= IncreaseInterval && now-b.lastIncrease >= IncreaseInterval {
		rate = math.Min(b.ceiling, rate+math.Max(step*b.ceiling, MinIncrease))
		b.setRate(now, rate, false)
		b.lastIncrease = now
		increased = true
	}
	return rate, increased
}

// setRate moves the bucket to rate r, its capacity scaling with it. Stored
// tokens are kept (capped at the new capacity; dropped when drain is set).
// A queue of callers is kept as a time, not as a number of tokens: the
// callers already waiting go at the times they were given, and the next
// caller after them at the new rate. mu must be held.
func (b *Bucket) setRate(now int64, r float64, drain bool) {
	old := b.p.Load()
	np := newParams(r, math.Max(1, b.ratio*r))
	b.p.Store(np)
	for {
		t := b.t0.Load()
		at := max(now, b.paused.Load())
		nt := t
		if t < at { // stored tokens
			bal := math.Min(math.Min(old.capacity, float64(at-t)/float64(old.interval)), np.capacity)
			if drain {
				bal = 0
			}
			nt = at - int64(bal*float64(np.interval))
		}
		if nt == t || b.t0.CompareAndSwap(t, nt) {
			break
		}
	}
	b.slowed.Store(r < b.ceiling)
}

// count counts one success in the current slot. The bucket's mu must be
// held.
func (b *servedWindow) count(now int64) {
	slot := now / goodputSlot
	i := int(slot % int64(goodputSlots))
	if i < 0 {
		i += goodputSlots
	}
	if b.servedAt[i] != slot {
		b.servedAt[i], b.served[i] = slot, 0
	}
	b.served[i]++
}

// rate is the rate the goodput controller moves to on a congestion event:
// GoodputShare of the successes per second the provider served, never
// above GoodputCap of the current rate. The successes are counted from the
// latest of: GoodputWindow ago, the bucket's creation, and the slot after
// the previous decrease (what was served before that was served at a rate
// already given up). With nothing served it halves. The bucket's mu must
// be held.
func (b *servedWindow) rate(now int64, rate float64, prevDecrease int64) float64 {
	from := max(now-GoodputWindow*int64(time.Second), b.created)
	if prevDecrease > never {
		from = max(from, (prevDecrease/goodputSlot+1)*goodputSlot)
	}
	var n int64
	for i, at := range b.servedAt {
		if at >= from/goodputSlot && at <= now/goodputSlot && b.served[i] > 0 {
			n += b.served[i]
		}
	}
	window := float64(now-from) / 1e9
	if n == 0 || window <= 0 {
		return rate * DecreaseFactor
	}
	return math.Min(GoodputCap*rate, GoodputShare*float64(n)/math.Max(window, 1))
}

// Recovering reports whether Success has anything to do: an adaptive
// bucket below its ceiling, or one whose controller counts successes.
func (b *Bucket) Recovering() bool { return b.goodput != nil || b.slowed.Load() }

// State is a snapshot of a bucket.
type State struct {
	Rate     float64 // current rate
	Ceiling  float64 // configured rate
	Tokens   float64 // balance now (negative: callers queued)
	PausedNS int64   // time left in a pause, 0 when not paused
}

// Snapshot returns the bucket's state at now. While paused, Tokens is the
// balance the pause will end with.
func (b *Bucket) Snapshot(now int64) State {
	p := b.p.Load()
	pu := b.paused.Load()
	at := max(now, pu)
	t := max(b.t0.Load(), at-p.capNS)
	return State{
		Rate:     p.rate,
		Ceiling:  b.ceiling,
		Tokens:   float64(at-t) / float64(p.interval),
		PausedNS: max(0, pu-now),
	}
}

// Idle reports whether the bucket holds nothing a fresh bucket would not:
// it is at its ceiling, not paused, and has been full for at least minIdle.
// An idle bucket can be dropped and recreated later without any caller
// noticing.
func (b *Bucket) Idle(now, minIdle int64) bool {
	p := b.p.Load()
	return p.rate >= b.ceiling && b.paused.Load() <= now && b.t0.Load()+p.capNS <= now-minIdle
}
