package bucket

import (
	"math"
	"runtime"
	"time"
)

// An epoch is the bucket's rate and pause between two changes of either,
// with the balance (t0) of the reservations made in it: the rate and pause
// are fixed for the epoch's life, while t0 moves with every reservation.
// A change supersedes the epoch: it freezes the old epoch's t0 for good
// (no reservation can land in it after that), gives the new epoch's t0
// the old value in the new units, and publishes the new epoch; the callers
// queued in the old epoch follow their reservations into the new one
// (Follow). A reservation is a compare-and-swap on the t0 of the epoch it
// read, so that one made in an epoch is in that epoch's units. One t0 for
// every epoch would not do: a reservation that read it and the epoch just
// before a change could land after it, once the reservations made since
// had brought t0 back to the value it read, in the new epoch's units with
// a ticket of the old, and Follow would move it a second time, beside
// another caller.
type epoch struct {
	t0     atomicDuration // the time at which the balance is zero; frozen once superseded
	p      *params        // the rate
	paused time.Duration  // no token is usable before this time
	next   *successor     // the epoch that superseded this one; set under the bucket's mu
}

// successor is an epoch that superseded another, with the move of the
// reservations made in the one before it. The first epoch of a bucket,
// embedded in it, needs no move.
type successor struct {
	epoch
	move *move // nil: reservations keep their times
}

// frozen marks the t0 of an epoch that was superseded. No real balance
// time is this far in the past.
const frozen = time.Duration(math.MinInt64)

// move maps the time of a reservation made in one epoch into the next;
// reservations due by the time of the change (from) stay as they were. A
// rate change keeps the queue as a number of tokens: a reservation k
// tokens behind the head of the queue (from) is still k tokens behind it,
// at the new rate, so that a queue made at a low rate leaves sooner when
// the rate rises and the callers keep their order. A pause shifts the
// queue by its new part.
type move struct {
	from  time.Duration
	scale float64 // new interval / old interval
	shift time.Duration
}

func (m *move) apply(t time.Duration) time.Duration {
	if m == nil || t <= m.from {
		return t
	}
	return m.from + m.shift + time.Duration(math.Min(float64(t-m.from)*m.scale, maxSpan))
}

// rescale is the move of a rate change from interval old to interval new,
// with the queue's head at from.
func rescale(from, old, new time.Duration) *move {
	return &move{from: from, scale: float64(new) / float64(old)}
}

// shiftBy is the move of a pause from start to until.
func shiftBy(start, until time.Duration) *move {
	return &move{from: start, scale: 1, shift: until - start}
}

// current returns the bucket's epoch and its balance time, waiting out the
// instant in which a change is being published. ReserveBy, on every
// call's path, reads the two words itself: current is not small enough to
// be inlined.
func (b *Bucket) current() (*epoch, time.Duration) {
	e := b.ep.Load()
	if t := e.t0.Load(); t != frozen {
		return e, t
	}
	return b.currentSlow()
}

func (b *Bucket) currentSlow() (*epoch, time.Duration) {
	for spins := 0; ; spins++ {
		e := b.ep.Load()
		if t := e.t0.Load(); t != frozen {
			return e, t
		}
		if spins > 8 {
			runtime.Gosched() // the change's writer was preempted between its two steps
		}
	}
}

// supersede publishes a new epoch with rate np and pause paused, its
// balance time and the queue's reservations mapped by m (nil: kept). It
// wakes the callers waiting in the old epoch so that they follow their
// reservations. mu must be held.
func (b *Bucket) supersede(np *params, paused time.Duration, balance func(t time.Duration) time.Duration, m *move) {
	old := b.ep.Load()
	t := time.Duration(old.t0.v.Swap(int64(frozen)))
	ne := &successor{epoch: epoch{p: np, paused: paused}, move: m}
	ne.t0.Store(balance(t))
	if old != &b.first {
		// The first epoch, embedded in the bucket, holds no ticket
		// (ticketable), so it needs no link: linked, it would keep every
		// epoch after it alive as long as the bucket. Each later epoch is
		// reachable only from the tickets made in it and the epochs
		// before it that they hold.
		old.next = ne
	}
	b.ep.Store(&ne.epoch)
	b.slowed.Store(np.rate < b.cfg.ceiling)
	if b.l != nil && b.l.wake != nil {
		close(b.l.wake)
		b.l.wake = nil
	}
}

// Ticket is a reservation: the time its token may be used, and the epoch
// it was made in. The zero Ticket is no reservation. A Ticket is a value
// that nothing changes (Follow returns the ticket brought up to date):
// copies of one may be used from several goroutines at once.
type Ticket struct {
	e  *epoch
	at time.Duration
}

// ReserveTicket is Reserve that also returns the reservation (see
// ReserveBy), which Follow moves when the bucket's rate or pause changes.
func (b *Bucket) ReserveTicket(now time.Duration) (time.Duration, Ticket) {
	tk, _ := b.ReserveBy(now, math.MaxInt64)
	return max(0, tk.at-now), tk
}

// TicketAt is a ticket of no bucket's queue, whose token may be used at
// at: a reservation of a bucket whose queue does not move, kept beside
// the tickets of those whose queues do. Follow leaves it as it is.
func TicketAt(at time.Duration) Ticket { return Ticket{at: at} }

// ticketable returns the bucket's epoch and balance time, as current does,
// but never the first epoch, which is embedded in the bucket (so that a
// bucket no caller ever waited on costs no allocation of its own): the
// first caller to need a ticket supersedes it with an epoch of the same
// rate and pause on the heap, once in the bucket's life. A ticket holds
// its epoch, and an epoch the epochs after it; were the embedded epoch
// one, every epoch of a bucket that changes its rate for hours (a
// congested goodput scope: a few changes a second) would live as long as
// the bucket.
func (b *Bucket) ticketable() (*epoch, time.Duration) {
	if e, t := b.current(); e != &b.first {
		return e, t
	}
	b.mu.Lock()
	if e := b.ep.Load(); e == &b.first {
		b.supersede(e.p, e.paused, func(t time.Duration) time.Duration { return t }, nil)
	}
	b.mu.Unlock()
	return b.current()
}

// CancelTicket gives back the token of the reservation tk, whose caller
// will not use it. A reservation with others queued after it does not
// stay spent, as CancelAt's does: every reservation after it moves one
// token earlier, as a change of rate moves them (their callers, woken,
// follow their tickets), and the queue is as if it had never been made.
// Callers that give up their places in a queue (their contexts cancelled
// while they wait) would otherwise push it later each time: under a load
// above the rate, with callers that give up, without end. The last
// reservation of the queue, one due already, and a ticket that does not
// follow the bucket's epochs (TicketAt's, and one of a reservation due at
// once made in the bucket's first epoch) are given back as CancelAt gives
// them back.
func (b *Bucket) CancelTicket(now time.Duration, tk Ticket) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for tk.e != nil && tk.e.next != nil {
		n := tk.e.next
		tk.e, tk.at = &n.epoch, n.move.apply(tk.at)
	}
	e, t := b.current()
	free := max(now, e.paused)
	if tk.e != e || tk.at <= free || tk.at >= t {
		b.CancelAt(now, tk.at)
		return
	}
	floor := free - e.p.capNS
	if now < e.paused {
		floor = e.paused
	}
	i := e.p.interval
	b.supersede(e.p, e.paused, func(t time.Duration) time.Duration { return max(t-i, floor) }, &move{from: tk.at, scale: 1, shift: -i})
}

// At returns the time the ticket's token may be used, as of its last
// Follow.
func (tk Ticket) At() time.Duration { return tk.at }

// Follow brings tk up to date with the bucket's changes since it was
// taken: the ticket it returns has the time its token may now be used
// (At), and moved is closed at the bucket's next change, when the time may
// move again. Follow takes the bucket's lock: it is for callers that wait.
func (b *Bucket) Follow(tk Ticket) (_ Ticket, moved <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for tk.e != nil && tk.e.next != nil {
		n := tk.e.next
		tk.e, tk.at = &n.epoch, n.move.apply(tk.at)
	}
	l := b.learn()
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return tk, l.wake
}
