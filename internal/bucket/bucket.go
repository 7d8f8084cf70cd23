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
	// second over the last GoodputWindow), never above GoodputCap of the
	// current rate; it then climbs by GoodputStep of the ceiling per
	// IncreaseInterval.
	GoodputShare  = 0.95
	GoodputCap    = 0.9
	GoodputStep   = 0.02
	GoodputWindow = 5 // seconds
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
type Bucket struct {
	mu       sync.Mutex
	rate     float64 // current rate, tokens per second
	capacity float64 // current capacity; scales with the rate
	tokens   float64 // balance as of last; negative while callers queue
	last     int64   // time of tokens; in the future while paused

	ceiling      float64
	floor        float64
	ratio        float64 // capacity at the ceiling / ceiling
	adaptive     bool
	lastDecrease int64
	lastThrottle int64
	lastIncrease int64

	// Measured goodput: successes per whole second, for the last
	// GoodputWindow seconds (ring indexed by second).
	goodput  bool
	created  int64
	served   [GoodputWindow + 1]int64
	servedAt [GoodputWindow + 1]int64 // the second each slot counts

	slowed atomic.Bool // rate < ceiling: lets Success skip the lock
}

// New returns a full bucket at its ceiling.
func New(s Spec, now int64) *Bucket {
	floor := s.Floor
	if floor <= 0 {
		floor = 1e-3
	}
	floor = math.Min(floor, s.Rate)
	capacity := s.Capacity()
	return &Bucket{
		rate:         s.Rate,
		capacity:     capacity,
		tokens:       capacity,
		last:         now,
		ceiling:      s.Rate,
		floor:        floor,
		ratio:        capacity / s.Rate,
		adaptive:     s.Adaptive || s.Goodput,
		goodput:      s.Goodput,
		created:      now,
		lastDecrease: never,
		lastThrottle: never,
		lastIncrease: never,
	}
}

// refill adds the tokens earned since last. It must be called with mu held.
func (b *Bucket) refill(now int64) {
	if now <= b.last {
		return
	}
	b.tokens = math.Min(b.capacity, b.tokens+float64(now-b.last)*b.rate/1e9)
	b.last = now
}

// Reserve takes one token and returns how long the caller must wait before
// using it (0: at once). Reservations queue in arrival order: the balance
// goes negative and each later caller waits longer.
func (b *Bucket) Reserve(now int64) (wait int64) {
	b.mu.Lock()
	b.refill(now)
	b.tokens--
	if b.last > now {
		wait = b.last - now
	}
	if b.tokens < 0 {
		wait += int64(-b.tokens / b.rate * 1e9)
	}
	b.mu.Unlock()
	return wait
}

// TryReserve takes one token only if it can be used at once.
func (b *Bucket) TryReserve(now int64) bool {
	b.mu.Lock()
	b.refill(now)
	ok := b.last <= now && b.tokens >= 1
	if ok {
		b.tokens--
	}
	b.mu.Unlock()
	return ok
}

// Cancel gives back a token reserved by a caller that will not use it.
func (b *Bucket) Cancel(now int64) {
	b.mu.Lock()
	b.refill(now)
	b.tokens = math.Min(b.capacity, b.tokens+1)
	b.mu.Unlock()
}

// Throttle records a throttling answer. An adaptive bucket halves its rate
// (not below the floor) and drains its stored burst, at most once per
// DecreaseInterval; throttles within that interval are the same congestion
// event. A positive pause holds every caller until now+pause. It returns the
// rate after the event and whether this call decreased it.
func (b *Bucket) Throttle(now, pause int64) (rate float64, decreased bool) {
	b.mu.Lock()
	b.refill(now)
	b.lastThrottle = now
	if b.adaptive && now-b.lastDecrease >= DecreaseInterval {
		b.lastDecrease = now
		r := b.rate * DecreaseFactor
		if b.goodput {
			r = b.goodputRate(now)
		}
		if r = math.Max(b.floor, r); r < b.rate {
			b.setRate(r)
			decreased = true
		}
		b.tokens = math.Min(b.tokens, 0)
	}
	if pause > 0 && now+pause > b.last {
		b.last = now + pause
	}
	rate = b.rate
	b.mu.Unlock()
	return rate, decreased
}

// Pause holds every caller until now+pause without touching the rate.
func (b *Bucket) Pause(now, pause int64) {
	if pause <= 0 {
		return
	}
	b.mu.Lock()
	b.refill(now)
	if now+pause > b.last {
		b.last = now + pause
	}
	b.mu.Unlock()
}

// Success records a successful call. After IncreaseInterval without a
// throttle, an adaptive bucket below its ceiling gains IncreaseStep of the
// ceiling (at least MinIncrease), at most once per IncreaseInterval. It
// returns the rate and whether this call increased it.
func (b *Bucket) Success(now int64) (rate float64, increased bool) {
	if !b.goodput && !b.slowed.Load() {
		return b.ceiling, false
	}
	b.mu.Lock()
	step := IncreaseStep
	if b.goodput {
		b.countServed(now)
		step = GoodputStep
	}
	if b.rate < b.ceiling && now-b.lastThrottle >= IncreaseInterval && now-b.lastIncrease >= IncreaseInterval {
		b.refill(now)
		b.setRate(math.Min(b.ceiling, b.rate+math.Max(step*b.ceiling, MinIncrease)))
		b.lastIncrease = now
		increased = true
	}
	rate = b.rate
	b.mu.Unlock()
	return rate, increased
}

// countServed counts one success in the current second. mu must be held.
func (b *Bucket) countServed(now int64) {
	sec := now / int64(time.Second)
	i := int(sec % (GoodputWindow + 1))
	if i < 0 {
		i += GoodputWindow + 1
	}
	if b.servedAt[i] != sec {
		b.servedAt[i], b.served[i] = sec, 0
	}
	b.served[i]++
}

// goodputRate is the rate the goodput controller moves to on a congestion
// event: GoodputShare of the successes per second over the last
// GoodputWindow whole seconds and the current part of one (or since the
// bucket was made, if later), never above GoodputCap of the current rate.
// With nothing served it halves. mu must be held.
func (b *Bucket) goodputRate(now int64) float64 {
	sec := now / int64(time.Second)
	var n int64
	for i, at := range b.servedAt {
		if at >= sec-GoodputWindow && at <= sec {
			n += b.served[i]
		}
	}
	window := GoodputWindow + float64(now%int64(time.Second))/1e9
	window = math.Min(window, float64(now-b.created)/1e9)
	if n == 0 || window <= 0 {
		return b.rate * DecreaseFactor
	}
	return math.Min(GoodputCap*b.rate, GoodputShare*float64(n)/math.Max(window, 1))
}

// setRate changes the rate and scales the capacity with it. mu must be held.
func (b *Bucket) setRate(r float64) {
	b.rate = r
	b.capacity = math.Max(1, b.ratio*r)
	b.tokens = math.Min(b.tokens, b.capacity)
	b.slowed.Store(r < b.ceiling)
}

// State is a snapshot of a bucket.
type State struct {
	Rate     float64 // current rate
	Ceiling  float64 // configured rate
	Tokens   float64 // balance now (negative: callers queued)
	PausedNS int64   // time left in a pause, 0 when not paused
}

// Snapshot returns the bucket's state at now.
func (b *Bucket) Snapshot(now int64) State {
	b.mu.Lock()
	b.refill(now)
	s := State{Rate: b.rate, Ceiling: b.ceiling, Tokens: b.tokens}
	if b.last > now {
		s.PausedNS = b.last - now
	}
	b.mu.Unlock()
	return s
}

// Idle reports whether the bucket holds nothing a fresh bucket would not:
// it is at its ceiling, full, not paused, and unused for at least minIdle.
// An idle bucket can be dropped and recreated later without any caller
// noticing.
func (b *Bucket) Idle(now, minIdle int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate < b.ceiling || b.last > now-minIdle {
		return false
	}
	return b.tokens+float64(now-b.last)*b.rate/1e9 >= b.capacity
}
