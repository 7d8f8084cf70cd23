// Package bucket implements the governor's token buckets: reservation-based,
// FIFO, with an optional adaptive rate (AIMD, or the measured-goodput
// controller) and pauses for Retry-After. A queue of
// reservations follows the bucket's rate and pauses.
//
// Times are durations since an origin of the caller's clock; the bucket
// never reads a clock itself, so it runs in virtual time, scaled time or
// real time alike. *Bucket implements state.Bucket.
package bucket

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/state"
)

// The AIMD controller's constants: halve once per one-second congestion
// event; after five quiet seconds give back 5% of the ceiling per five
// seconds.
const (
	// DecreaseFactor multiplies the rate on a congestion event.
	DecreaseFactor = 0.5
	// DecreaseInterval groups throttles into one congestion event.
	DecreaseInterval = time.Second
	// IncreaseInterval is both the quiet time after a throttle before the
	// rate may grow, and the minimum time between two increases.
	IncreaseInterval = 5 * time.Second
	// IncreaseStep is the share of the ceiling given back per increase.
	IncreaseStep = 0.05
	// MinIncrease is the smallest increase in tokens per second.
	MinIncrease = 0.01
)

// GoodputSlot is the resolution of the goodput controller's success
// counts, for fleet mode's shared counts.
const GoodputSlot = goodputSlot

// DefaultFloor is the lowest adaptive rate of a spec without a floor: a
// tiny positive rate, so that halving never reaches zero.
const DefaultFloor = 1e-3

// never is a time far enough in the past that "now - never" exceeds every
// interval without overflowing.
const never = time.Duration(math.MinInt64 / 4)

// Bucket is a token bucket. It is safe for concurrent use. The zero value
// is not usable; call New or Init.
//
// The balance lives in one atomic word, its epoch's t0: the time at which
// the balance is zero, so that the balance at time t is (t - t0) / interval, capped at
// the capacity. Taking a token moves t0 one interval
// later with a compare-and-swap, so the call path takes no lock; a
// negative balance (t0 in the future) is the queue of callers waiting, in
// arrival order. Rate changes, pauses and the AIMD state take the mutex
// and start a new epoch, whose rate and pause are fixed: a
// reservation is made in the units of one epoch, and the callers already
// queued follow theirs into the next.
type Bucket struct {
	ep    atomic.Pointer[epoch] // the current rate, pause and balance
	first epoch                 // the first epoch, in place: a new bucket is no allocation of its own

	mu  sync.Mutex
	cfg *config  // shared by every bucket of the same spec
	l   *learned // made at the first throttle or wait; mu guards it

	goodput *served // the measured-goodput controller's counts; nil for AIMD

	// slowed is the current epoch's: rate < ceiling. A copy of its own,
	// away from the balance that every reservation writes, lets Success
	// skip the lock without reading that cache line.
	slowed atomic.Bool
}

// learned is what a bucket keeps once it was throttled or waited on: a
// bucket that never was (most of a large estate's) holds a nil pointer
// instead. The bucket's mu guards it.
type learned struct {
	lastDecrease time.Duration
	lastThrottle time.Duration
	lastIncrease time.Duration
	climbs       int           // the goodput controller's climbs since the last throttle
	queuePeak    float64       // the goodput controller's longest queue, in tokens, since the last throttle
	sprinting    bool          // the goodput controller sprinted since the last throttle
	sprinted     time.Duration // when it sprinted
	mv           moving        // the goodput controller's moving mode
	wake         chan struct{} // closed at the next change; made by the first caller to wait
}

// learn returns b's learned state, making it. mu must be held.
func (b *Bucket) learn() *learned {
	if b.l == nil {
		b.l = &learned{lastDecrease: never, lastThrottle: never, lastIncrease: never}
	}
	return b.l
}

// params is a rate, immutable once published.
type params struct {
	rate     float64
	capacity float64
	interval time.Duration // the time per token, at least 1 ns
	capNS    time.Duration // capacity * interval: how far t0 may lag behind now
}

// maxSpan bounds the nanosecond spans of absurd rates (1e-300 tokens per
// second) so that the arithmetic on t0 cannot overflow: about 36 years.
const maxSpan = float64(1 << 60)

func newParams(rate, capacity float64) *params {
	return &params{
		rate:     rate,
		capacity: capacity,
		interval: max(1, time.Duration(math.Min(1e9/rate, maxSpan))),
		// capacity*1e9/rate, not capacity/rate*1e9: for a capacity of at
		// least one token it is then never under 1e9/rate, the interval,
		// which the other order can be by a nanosecond (a full bucket
		// that never holds a whole token).
		capNS: max(1, time.Duration(math.Min(capacity*1e9/rate, maxSpan))),
	}
}

// config is what a state.BucketSpec fixes: shared by every bucket of that
// BucketSpec, so that a million buckets do not hold a million copies.
type config struct {
	ceiling  float64
	floor    float64
	ratio    float64 // capacity at the ceiling / ceiling
	adaptive bool
	initial  *params // the rate at the ceiling
}

// configs caches the config of each spec seen, up to maxConfigs specs.
// The specs a configuration makes are few; those made from them at run
// time (fleet mode's fallback, each a share among a number of processes
// that varies) may not be, and are not kept once the cache is full: a
// bucket of such a spec holds a config of its own, gone with it.
var (
	configs  sync.Map // state.BucketSpec -> *config
	nconfigs atomic.Int64
)

const maxConfigs = 4096

func configOf(s state.BucketSpec) *config {
	if c, ok := configs.Load(s); ok {
		return c.(*config)
	}
	floor := s.Floor
	if floor <= 0 {
		floor = DefaultFloor
	}
	capacity := s.Capacity()
	c := &config{
		ceiling:  s.Rate,
		floor:    math.Min(floor, s.Rate),
		ratio:    capacity / s.Rate,
		adaptive: s.Adaptive || s.Goodput,
		initial:  newParams(s.Rate, capacity),
	}
	if nconfigs.Load() >= maxConfigs {
		return c
	}
	actual, loaded := configs.LoadOrStore(s, c)
	if !loaded {
		nconfigs.Add(1)
	}
	return actual.(*config)
}

// New returns a full bucket at its ceiling.
func New(s state.BucketSpec, now time.Duration) *Bucket {
	b := new(Bucket)
	b.Init(s, now)
	return b
}

// Full returns the snapshot of a new bucket of spec s, at any time: full
// at its ceiling. It is what New(s, now).Snapshot(now) returns, made
// without a bucket, for a read of a scope whose bucket no call has made:
// the tokens a bucket keeps, which are not always its spec's Capacity (a
// rate past a token per nanosecond, a capacity past 2^60 ns of tokens, a
// capacity past a float64's range, +Inf, read as the tokens the bucket's
// nanosecond spans hold).
func Full(s state.BucketSpec) state.BucketSnapshot {
	c := configOf(s)
	p := c.initial
	return state.BucketSnapshot{Rate: p.rate, Ceiling: c.ceiling, Tokens: min(p.capacity, float64(p.capNS)/float64(p.interval))}
}

// NewAtRate returns a full bucket at rate r, brought within the spec's
// floor and ceiling, rather than at its ceiling: fleet mode's local limits
// start so from a share of the fleet's last rate. Its controller climbs
// from there towards the ceiling, as after an increase made at now (the
// first climb comes an increase interval later, IncreaseInterval, or
// GoodputClimbInterval for the goodput controller), and decreases on
// throttles as any bucket's does. A rate within a hair of the ceiling, or
// not a number, is the ceiling. decreased is how long before now r was
// last decreased, negative when that is not known: a throttle within
// DecreaseInterval of that decrease is of the same congestion event, and
// does not decrease r again (fleet mode's local limits, made from a rate
// a throttle of the fleet's had just halved, would halve it a second time
// for one event). It returns a state.Bucket, all that another module
// needs of it, so that *Bucket's methods stay this module's own.
func NewAtRate(s state.BucketSpec, r float64, now, decreased time.Duration) state.Bucket {
	b := New(s, now)
	if r = math.Max(b.cfg.floor, r); r < b.cfg.ceiling*(1-1e-9) {
		b.mu.Lock()
		l := b.learn()
		l.lastIncrease = now
		if decreased >= 0 && decreased < DecreaseInterval {
			l.lastDecrease = now - decreased
		}
		b.setRate(now, r, false, false) // full at r: the stored tokens, capped at its capacity
		b.mu.Unlock()
	}
	return b
}

// Init makes b, a zero Bucket (one embedded in a larger allocation, say),
// a full bucket at its ceiling. It must not be called on a bucket in use,
// and b must not be copied afterwards.
func (b *Bucket) Init(s state.BucketSpec, now time.Duration) {
	cfg := configOf(s)
	b.cfg, b.l = cfg, nil
	if s.Goodput {
		b.goodput = newServed(now)
	}
	p := cfg.initial
	b.first = epoch{p: p, paused: never}
	b.first.t0.Store(now - p.capNS)
	b.ep.Store(&b.first)
}

// Reserve takes one token and returns how long the caller must wait before
// using it (0: at once). Reservations queue in arrival order: the balance
// goes negative and each later caller waits longer.
func (b *Bucket) Reserve(now time.Duration) (wait time.Duration) {
	tk, _ := b.ReserveBy(now, math.MaxInt64)
	return max(0, tk.at-now)
}

// ReserveBy takes one token if it may be used by latest, and returns its
// reservation and true; otherwise it takes nothing and returns false, with
// a Ticket of no queue whose At is when the token would have been usable.
// A caller that will not wait past a limit (a deadline, a max wait) asks
// this rather than reserving and cancelling: a token given back with
// other reservations queued after it stays spent (CancelAt), so callers
// that keep giving up beside a queue would push it ever later.
//
// The Ticket of a reservation that waits is the one to Follow and to
// CancelTicket: exact even when a change of rate or pause, or a caller
// queued before it giving its place up, comes before the caller has
// looked at it. The first reservation in a bucket's life that waits makes
// the bucket's first epoch one on the heap (see ticketable).
func (b *Bucket) ReserveBy(now, latest time.Duration) (Ticket, bool) {
	for {
		e := b.ep.Load()
		t := e.t0.Load()
		if t == frozen {
			b.currentSlow() // a change is being published
			continue
		}
		nt, at := e.take(t, now)
		if at > latest {
			return Ticket{at: at}, false
		}
		if at > now {
			if e == &b.first {
				// A reservation that waits is followed by its ticket,
				// which the first epoch cannot hold.
				b.ticketable()
				continue
			}
			if testHookReserve != nil {
				testHookReserve()
			}
		}
		if e.t0.CompareAndSwap(t, nt) {
			return Ticket{e: e, at: at}, true
		}
	}
}

// testHookReserve, set by tests only, runs in ReserveBy between its read
// of the balance and its compare-and-swap, for a reservation that waits.
var testHookReserve func()

// horizon bounds the balance time. A queue of reservations at an absurd
// rate, each up to maxSpan after the one before it, would otherwise run
// past the end of a Duration after eight of them and wrap into the past (a
// token free at once) or onto frozen (a caller spinning forever); the
// reservations past it all wait until it, about 146 years on.
const horizon = time.Duration(1 << 62)

// take returns the balance time after one token is taken from e at now,
// from t, and the time the token may be used.
func (e *epoch) take(t, now time.Duration) (nt, at time.Duration) {
	nt = min(max(t, max(now, e.paused)-e.p.capNS)+e.p.interval, horizon)
	return nt, max(nt, e.paused)
}

// TryReserve takes one token only if it can be used at once.
func (b *Bucket) TryReserve(now time.Duration) bool {
	for {
		e, t := b.current()
		if e.paused > now {
			return false
		}
		nt := max(t, now-e.p.capNS) + e.p.interval
		if nt > now {
			return false
		}
		if e.t0.CompareAndSwap(t, nt) {
			return true
		}
	}
}

// Cancel gives back a token reserved by a caller that will not use it,
// whichever it was: it moves the queue's end back a token (see CancelAt,
// for a caller that knows its token's time).
func (b *Bucket) Cancel(now time.Duration) {
	for {
		e, t := b.current()
		nt := max(t-e.p.interval, max(now, e.paused)-e.p.capNS)
		if nt == t || e.t0.CompareAndSwap(t, nt) {
			return
		}
	}
}

// CancelAt gives back the token of a reservation, usable at at (the time
// Reserve's wait gave, or its Ticket's, followed to date), of a caller that
// will not use it, as far as the reservations made after it allow (as
// golang.org/x/time/rate's Reservation.Cancel does): the queue's last
// reservation gives its token back, and so does one of a bucket with no
// queue (a stored token, stored again). A reservation with others queued
// after it gives nothing back: they keep their times, and the token given
// back would let the next caller go beside the last of them, more at once
// than the burst. Nor does one during a pause that no reservation waits
// behind: the pause counted it as spent (it was due before the pause
// began), and a pause leaves no stored token at its end.
func (b *Bucket) CancelAt(now, at time.Duration) {
	for {
		e, t := b.current()
		free := max(now, e.paused)
		if t > free && at != t || t <= free && now < e.paused {
			return
		}
		floor := free - e.p.capNS
		if now < e.paused {
			floor = e.paused // no token stored at the pause's end
		}
		nt := max(t-e.p.interval, floor)
		if nt == t || e.t0.CompareAndSwap(t, nt) {
			return
		}
	}
}

// Throttle records a throttling answer. An adaptive bucket halves its rate
// (not below the floor) and drains its stored burst, at most once per
// DecreaseInterval; throttles within that interval are the same congestion
// event. A positive pause holds every caller until now+pause. It returns the
// rate after the event and whether this call decreased it.
func (b *Bucket) Throttle(now, pause time.Duration) (rate float64, decreased bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.learn()
	l.lastThrottle, l.climbs, l.queuePeak, l.sprinting = now, 0, 0, false
	rate = b.ep.Load().p.rate
	if b.cfg.adaptive && now-l.lastDecrease >= DecreaseInterval {
		l.lastDecrease = now
		r, back := rate*DecreaseFactor, false
		if b.goodput != nil {
			r, back = l.mv.event(b.goodput.rate(now, rate), b.cfg.ceiling, b.cfg.ratio)
		}
		if r = math.Max(b.cfg.floor, r); r < rate {
			rate, decreased = r, true
		}
		b.setRate(now, rate, true, back)
	}
	l.mv.draining = false // a throttle ends a drain, event or not
	b.pause(now, pause)
	return rate, decreased
}

// Pause holds every caller until now+pause without touching the rate.
func (b *Bucket) Pause(now, pause time.Duration) {
	b.mu.Lock()
	b.pause(now, pause)
	b.mu.Unlock()
}

// pause holds every caller until now+pause: no token is usable before it
// ends, and the pause leaves no stored burst behind, so that callers
// waiting it out leave at the bucket's rate from its end, not all at once.
// The queue of reserved tokens, and the callers waiting in it, move later
// by the new part of the pause. mu must be held.
func (b *Bucket) pause(now, pause time.Duration) {
	if pause <= 0 {
		return
	}
	until := now + pause
	e := b.ep.Load()
	if until <= e.paused {
		return // within the pause in force
	}
	start := max(now, e.paused)
	b.supersede(e.p, until, func(t time.Duration) time.Duration {
		return max(t+(until-start), until) // a queue moves; stored tokens are gone
	}, shiftBy(start, until))
}

// Success records a successful call. After IncreaseInterval without a
// throttle, an AIMD bucket below its ceiling gains IncreaseStep of the
// ceiling (at least MinIncrease), at most once per IncreaseInterval; a
// goodput bucket climbs after GoodputQuiet, once per GoodputClimbInterval,
// by a step that doubles with each climb (see GoodputStep), or drains
// instead once the limit was seen to move (see GoodputDrainQuiet), and
// sprints when its queue of callers shows the demand ending (see
// GoodputSprintQuiet). It returns the rate and whether this call
// increased it.
func (b *Bucket) Success(now time.Duration) (rate float64, increased bool) {
	if b.goodput == nil && !b.slowed.Load() {
		return b.cfg.ceiling, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	rate = b.ep.Load().p.rate
	if b.goodput != nil {
		b.goodput.count(now)
		if rate, increased = b.sprint(now, rate); increased || b.l != nil && b.l.sprinting && now-b.l.sprinted < GoodputQuiet {
			return rate, increased // no climb during a sprint
		}
		if b.l != nil {
			r, held := b.l.mv.success(now, b.l.lastThrottle, rate, b.cfg.ceiling)
			if r > 0 {
				b.setRate(now, r, false, false)
				return r, true
			}
			if held {
				return rate, false // a moving bucket drains instead of climbing
			}
		}
	}
	lastThrottle, lastIncrease := never, never
	if b.l != nil {
		lastThrottle, lastIncrease = b.l.lastThrottle, b.l.lastIncrease
	}
	quiet, every, step := IncreaseInterval, IncreaseInterval, IncreaseStep
	if b.goodput != nil {
		quiet, every = GoodputQuiet, GoodputClimbInterval
	}
	if rate < b.cfg.ceiling && now-lastThrottle >= quiet && now-lastIncrease >= every {
		l := b.learn()
		if b.goodput != nil {
			step = goodputStep(l.climbs)
			l.climbs++
		}
		// The steps, added up in floating point, may end a hair below
		// the ceiling (1.5 halved and ten steps of 0.075 make
		// 1.4999999999999996): that is the ceiling.
		if rate += math.Max(step*b.cfg.ceiling, MinIncrease); rate >= b.cfg.ceiling*(1-1e-9) {
			rate = b.cfg.ceiling
		}
		b.setRate(now, rate, false, false)
		l.lastIncrease = now
		increased = true
	}
	return rate, increased
}

// setRate moves the bucket to rate r, its capacity scaling with it. Stored
// tokens are kept (capped at the new capacity; dropped when drain is set).
// A queue of callers is kept as a number of tokens: when the rate rises
// the callers already waiting leave sooner, when it falls later, in their
// order either way, and the next caller queues behind them at the new
// rate. A halved rate thus holds the whole queue to it, instead of
// letting the callers already waiting go at the rate that was throttled.
// With back, the queue also moves back by one interval at the new rate
// (the goodput controller's moving mode). mu must be held.
func (b *Bucket) setRate(now time.Duration, r float64, drain, back bool) {
	e := b.ep.Load()
	old := e.p
	np := b.cfg.initial
	if r != b.cfg.ceiling {
		np = newParams(r, math.Max(1, b.cfg.ratio*r))
	}
	at := max(now, e.paused)
	var m *move
	if np.interval != old.interval || back {
		m = rescale(at, old.interval, np.interval)
		if back {
			m.shift = np.interval
		}
	}
	b.supersede(np, e.paused, func(t time.Duration) time.Duration {
		if t >= at { // a queue
			return m.apply(t)
		}
		// Stored tokens.
		bal := math.Min(math.Min(old.capacity, float64(at-t)/float64(old.interval)), np.capacity)
		if drain {
			bal = 0
		}
		return at - time.Duration(bal*float64(np.interval))
	}, m)
}

// PausedUntil returns the end of the bucket's last pause, in force or
// over (a time far in the past if it was never paused): a caller that
// holds a token due at t, and finds the end after t, knows that a pause
// began after its token was due, which counted it as spent.
func (b *Bucket) PausedUntil() time.Duration {
	e, _ := b.current()
	return e.paused
}

// Recovering reports whether Success has anything to do: an adaptive
// bucket below its ceiling, or one whose controller counts successes.
func (b *Bucket) Recovering() bool { return b.goodput != nil || b.slowed.Load() }

// Snapshot returns the bucket's state at now. While paused, Tokens is the
// balance the pause will end with.
func (b *Bucket) Snapshot(now time.Duration) state.BucketSnapshot {
	e, t := b.current()
	p := e.p
	at := max(now, e.paused)
	t = max(t, at-p.capNS)
	return state.BucketSnapshot{
		Rate:    p.rate,
		Ceiling: b.cfg.ceiling,
		// A full bucket reads its capacity: capNS over the interval, both
		// whole nanoseconds, can be a hair over it (3 rps, 200 tokens:
		// 66666666666/333333333 = 200.000000198).
		Tokens: min(p.capacity, float64(at-t)/float64(p.interval)),
		Paused: max(0, e.paused-now),
	}
}

// Idle reports whether the bucket holds nothing a fresh bucket would not:
// it is at its ceiling, not paused, and has been full for at least minIdle.
// An idle bucket can be dropped and recreated later with the same rate,
// tokens and pause. What a goodput bucket learned is lost then: whether
// its limit was seen to move (a recreated bucket climbs after its next
// throttle rather than draining), which a scope idle for minIdle, with its
// success counts started again after GoodputWindow, has mostly lost
// already.
func (b *Bucket) Idle(now, minIdle time.Duration) bool {
	e, t := b.current()
	return e.p.rate >= b.cfg.ceiling && e.paused <= now && t+e.p.capNS <= now-minIdle
}

// atomicDuration is an atomic time.Duration.
type atomicDuration struct{ v atomic.Int64 }

func (a *atomicDuration) Load() time.Duration   { return time.Duration(a.v.Load()) }
func (a *atomicDuration) Store(d time.Duration) { a.v.Store(int64(d)) }
func (a *atomicDuration) CompareAndSwap(old, new time.Duration) bool {
	return a.v.CompareAndSwap(int64(old), int64(new))
}

var _ state.Bucket = (*Bucket)(nil)
