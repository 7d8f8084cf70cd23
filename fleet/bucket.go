package fleet

import (
	"context"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/state"
)

// sharedBucket is a bucket whose balance, rate and pause live in Redis. A
// process borrows a few tokens at a time (a lease) so that most calls take
// a token without a round trip; a throttle drops the lease, so that this
// process slows at once.
type sharedBucket struct {
	s        *Store
	keys     []string // bucket, breaker
	spec     state.BucketSpec
	floor    float64
	args     []any // bucketArgs: the arguments every bucket script starts with
	adaptive bool
	goodput  bool
	rateFB   atomic.Uint64 // float64 bits of the last rate Redis reported
	rates    atomic.Int64  // counts the rates Redis reported (see fallback)
	// decreased is when (mono) the fleet's rate last went down at the
	// earliest, as far as the process knows, never when it knows of no
	// decrease: a local bucket made from that rate takes a throttle within
	// bucket.DecreaseInterval of it as of the same congestion event.
	// reported is when Redis last reported a rate (setRate), never before
	// the first: a rate lower than the one it reported before went down
	// after then; a rate first reported, below the ceiling, may have gone
	// down long ago (a throttle on the local limits is a new event).
	decreased, reported atomic.Int64
	// pausedUntil is the end (mono) of the latest pause this process set
	// (Pause, or Throttle with a Retry-After): the callers holding tokens
	// granted before it look at it before they send (PausedFor).
	pausedUntil atomic.Int64
	// sharedPause is the end (mono) of the latest pause Redis reported for
	// the bucket (any process's), counted from when the request that read
	// it was sent, so that it ends no later than Redis's; pauseRead is when
	// (mono) the last such request was answered. A caller about to send
	// reads the pause again when pauseRead is a lease window old
	// (PausedFor).
	sharedPause atomic.Int64
	pauseRead   atomic.Int64
	// owedPause is the end (mono) of the latest pause this process set on
	// the local limits, while Redis did not answer, and not written to
	// Redis yet (writeOwed), 0 when none is owed.
	owedPause atomic.Int64

	mu sync.Mutex
	// owedEvents are when (mono) the congestion events came, oldest
	// first, whose throttles Redis did not run (it refused their script,
	// or did not answer) and that are not written back yet (writeOwed):
	// the first throttle of each, those within bucket.DecreaseInterval of
	// it being of the event, as the local limits count them; at most
	// maxOwedEvents, none when none is owed. owedLast is the latest such
	// throttle.
	owedEvents []time.Duration
	owedLast   time.Duration
	// owedLocal is the local bucket the latest throttle owed slowed, nil
	// when none is known, and owedDiv what the fleet's rate was divided by
	// for it (Store.sharers): its rate times owedDiv is what the
	// write-back tells of the fleet's rate (writeOwed).
	owedLocal state.Bucket
	owedDiv   float64
	// owedResend is the write-back of throttles whose answer was lost
	// (Redis may have run it), which writeOwed sends again, the same,
	// before what was owed since; nil when none. owedSeq numbers the
	// bucket's write-backs, and wbField is the field of the bucket's hash
	// that records the last one Redis applied, so that Redis applies each
	// at most once (throttledScript).
	owedResend *owedWrite
	owedSeq    int64
	wbField    string

	lease     int           // tokens borrowed and not yet used
	leaseNow  int           // how many of them, the first, are usable at once (the stored balance's)
	leaseNext time.Duration // when the next borrowed token after leaseNow is usable (mono)
	leaseStep time.Duration // the time between two borrowed tokens
	leaseEnd  time.Duration // unused borrowed tokens are given back after this (mono)
	// spaced is the earliest time (mono) the next token of the shared
	// bucket that is not usable at once may be usable: the last one's and
	// the interval. Redis's answers come back after varying delays, from
	// which their tokens' times are counted; this keeps one answer's
	// tokens from bunching against the last ones of an answer that came
	// back late. The tokens Redis says are usable now (its stored balance)
	// are not held back by it, and the others by at most lag, the round
	// trip of the last answer that gave tokens after them: an answer
	// counts its times late by at most its round trip, which is all the
	// bunching spaced undoes. Redis's queue may have moved earlier since
	// (tokens another process gave back, which spaced does not know of):
	// held back further, this process's tokens would fall a token later
	// than Redis's for each, without end.
	spaced      time.Duration
	lag         time.Duration
	queue       []*waiter // callers waiting for a lease request's answer, in arrival order
	sending     bool      // a dispatcher sends the queue's lease requests
	log         tokenLog  // the tokens handed out lately and to come
	onLocal     bool      // reservations went to the local fallback since Redis last granted one
	giveBack    int       // Cancel's tokens to give back, not yet sent: to the local limits when Redis does not take them
	unused      int       // Redis's tokens no caller will take (a lease a pause dropped, gone callers'), not yet sent: dropped when Redis does not take them
	giving      bool      // a goroutine sends them
	dropped     bool      // the governor dropped the bucket (Drop): it borrows no lease
	registered  bool      // in the store's registry of live buckets (register)
	lastUse     time.Duration
	lastUseMono time.Duration // mono at lastUse
	lastSuccess time.Duration // the last Success sent to Redis
	served      []served      // success counts not yet sent (goodput), one per slot, oldest first; flush sends them within a slot
	flush       *time.Timer   // sends them a slot after the first of them
	pauseCheck  chan struct{} // closed when the pause read by readPause is known; nil when none is being read
	settled     chan struct{} // made by closeOut for an operation in flight (sending, giving), closed by settle when none is; nil when no one waits

	localMu   sync.Mutex
	local     state.Bucket // fallback while Redis does not answer
	localEp   int64        // the episode the fallback was made for
	localRate int64        // the rate it was made from (its count: rates)
	localOut  bool         // made while the store was on local limits (an outage's)
	localDiv  float64      // what the fleet's rate was divided by for it (Store.sharers)
}

// served counts the successes of one slot of bucket.GoodputSlot, the last
// of them at at. The counts are timed by the wall clock, as Redis's TIME
// is, whatever the governor's clock.
type served struct {
	at time.Time
	n  int64
}

// never is a time far enough in the past that "now - never" exceeds every
// interval without overflowing.
const never = time.Duration(math.MinInt64 / 4)

// controllerArgs are the adaptive controllers' constants, package bucket's,
// as the bucket scripts read them (ARGV[8] to ARGV[20]): the shared
// controllers run with the in-process bucket's numbers, whatever they are.
var controllerArgs = []any{
	ftoa(bucket.DecreaseFactor), bucket.DecreaseInterval.Microseconds(),
	bucket.IncreaseInterval.Microseconds(), ftoa(bucket.IncreaseStep), ftoa(bucket.MinIncrease),
	ftoa(bucket.GoodputShare), ftoa(bucket.GoodputCap), ftoa(bucket.GoodputStep),
	(bucket.GoodputWindow * time.Second).Microseconds(), bucket.GoodputSlot.Microseconds(),
	bucket.GoodputQuiet.Microseconds(), bucket.GoodputClimbInterval.Microseconds(), bucket.GoodputMaxDoublings,
}

// floor returns spec's lowest adaptive rate as the in-process bucket
// reads it: spec.Floor, or bucket.DefaultFloor, never above the
// ceiling.
func floor(spec state.BucketSpec) float64 {
	f := spec.Floor
	if f <= 0 {
		f = bucket.DefaultFloor
	}
	return math.Min(f, spec.Rate)
}

// newSharedBucket returns the bucket stored at bk, whose scope's breaker
// is stored at brk.
func newSharedBucket(s *Store, bk, brk string, spec state.BucketSpec) *sharedBucket {
	mode := "0"
	switch {
	case spec.Goodput:
		mode = "2"
	case spec.Adaptive:
		mode = "1"
	}
	b := &sharedBucket{
		s: s, keys: []string{bk, brk}, spec: spec, floor: floor(spec),
		adaptive: spec.Adaptive || spec.Goodput, goodput: spec.Goodput,
		lastUse: never, lastSuccess: never,
		wbField: s.wbPrefix + strconv.FormatInt(s.wbMade.Add(1), 36),
	}
	// The tokens of a burst's worth of time are logged (tokenLog).
	b.log.window = time.Duration(min(spec.Capacity()/spec.Rate, float64(time.Hour/time.Second)) * float64(time.Second))
	b.args = append([]any{ftoa(spec.Rate), ftoa(spec.Capacity() / spec.Rate), ftoa(b.floor), mode,
		s.ttlMS(), s.horizon.Microseconds(), maxClockSkew.Microseconds()}, controllerArgs...)
	b.rateFB.Store(math.Float64bits(spec.Rate))
	b.decreased.Store(int64(never))
	b.reported.Store(int64(never))
	return b
}

// argsWith returns the bucket's arguments followed by a script's own.
func (b *sharedBucket) argsWith(own ...any) []any {
	return append(b.args[:len(b.args):len(b.args)], own...)
}

// ftoa writes a number without an exponent: gopher-lua (miniredis) does not
// read "1e+09".
func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (b *sharedBucket) rate() float64 { return math.Float64frombits(b.rateFB.Load()) }

// setRate records the rate in a reply, if it is one this bucket's settings
// allow (the scripts validate what they read; this checks what they
// answer), and returns the rate in force. A rate lower than the one
// Redis reported before went down since that report (decreased), which
// is all the process knows of when.
func (b *sharedBucket) setRate(v any) float64 {
	if r, ok := number(v); ok && r >= b.floor*(1-1e-9) && r <= b.spec.Rate*(1+1e-9) {
		prev := b.reported.Swap(int64(mono()))
		if old := math.Float64frombits(b.rateFB.Swap(math.Float64bits(r))); r < old*(1-1e-9) && prev != int64(never) {
			storeMax(&b.decreased, prev)
		}
		b.rates.Add(1)
		return r
	}
	return b.rate()
}

// capacity is the shared bucket's capacity at its current rate.
func (b *sharedBucket) capacity() float64 {
	return math.Max(1, b.spec.Capacity()*b.rate()/b.spec.Rate)
}

// leaseSize is how many tokens to borrow: the tokens the current rate
// gives in one lease window, shared among the live processes.
func (b *sharedBucket) leaseSize() int {
	n := b.rate() * b.s.cfg.leaseWindow.Seconds() / float64(max(1, b.s.procs.Load()))
	return int(min(max(1, n), float64(b.s.cfg.maxLease)))
}

// count counts a success for the goodput controller, and makes sure the
// count reaches Redis within a slot, with a lease request, a throttle, or
// flushServed. mu must be held.
func (b *sharedBucket) count() {
	at := time.Now()
	slot := at.UnixNano() / int64(bucket.GoodputSlot)
	if n := len(b.served); n > 0 && b.served[n-1].at.UnixNano()/int64(bucket.GoodputSlot) == slot {
		b.served[n-1].at = at
		b.served[n-1].n++
	} else {
		if len(b.served) >= maxServed { // an outage's: the oldest go
			b.served = append(b.served[:0], b.served[1:]...)
		}
		b.served = append(b.served, served{at: at, n: 1})
	}
	if b.flush == nil {
		b.flush = time.AfterFunc(bucket.GoodputSlot, b.flushServed)
	}
}

// maxServed bounds the slots of success counts kept while Redis does not
// answer (102.4 s of them).
const maxServed = 1024

// flushServed sends the success counts no other script took along. While
// Redis does not answer it keeps them, and looks again a slot later, so
// that they reach Redis within a slot of its answering again, with the
// first script that goes then; so it does with those of a flush Redis
// surely did not run as it went away (keepUnsent).
func (b *sharedBucket) flushServed() {
	b.mu.Lock()
	b.flush = nil
	if b.s.degraded() {
		if len(b.served) > 0 && !b.s.closed() {
			b.flush = time.AfterFunc(bucket.GoodputSlot, b.flushServed)
		}
		b.mu.Unlock()
		return
	}
	kept := append([]served(nil), b.served...)
	pairs := b.takeServed()
	b.mu.Unlock()
	if pairs != nil && !b.s.closed() {
		if _, ok, unsent := b.s.runOnce(servedScript, b.keys[:1], b.argsWith(pairs...)...); !ok {
			b.keepUnsent(kept, unsent)
		}
	}
}

// keepUnsent keeps the success counts kept, taken for a script that
// failed, unsent when Redis surely did not run it, for when it answers
// again (keepServed): when the failure was an outage's (the store is on
// local limits), not a refusal of the script alone, which sending them
// again would meet again.
func (b *sharedBucket) keepUnsent(kept []served, unsent bool) {
	if !unsent || !b.s.degraded() {
		return
	}
	b.mu.Lock()
	b.keepServed(kept)
	b.mu.Unlock()
}

// takeServed returns the success counts not yet sent, as the scripts read
// them (pairs of an age in microseconds and a count), and forgets them.
// mu must be held.
func (b *sharedBucket) takeServed() []any {
	pairs := servedPairs(b.served)
	b.served = b.served[:0]
	return pairs
}

// servedPairs returns success counts as the scripts read them: pairs of
// an age in microseconds, counted from now, and a count.
func servedPairs(counts []served) []any {
	if len(counts) == 0 {
		return nil
	}
	pairs := make([]any, 0, 2*len(counts))
	for _, c := range counts {
		pairs = append(pairs, time.Since(c.at).Microseconds(), c.n)
	}
	return pairs
}

// fallback returns the local bucket used while Redis does not answer: the
// bucket's settings (its ceiling, burst and floor) divided among the live
// processes, starting at the same share of the fleet's last known rate. It
// stays adaptive: it climbs from there as the configured controller does
// (AIMD, or the goodput controller), up to its share of the ceiling, so
// that a long outage does not hold the process at the rate the fleet had
// last (often one a throttle had just lowered), and it slows on this
// process's throttles, down to its share of the floor; a throttle within
// bucket.DecreaseInterval of the fleet's last decrease the process saw is
// of that congestion event, and does not decrease it again. A new one
// is charged for the tokens the process took lately and has yet to use
// (tokenLog): the callers already queued go at their times, at the head of
// its queue, instead of on top of its balance.
//
// An outage's local bucket serves that outage: a new outage makes another.
// Once the store is back on the shared state, the next fallback (an
// operation Redis refuses or does not answer, a call after Close) makes it
// again from the fleet's rate as last read when it was an outage's, or
// Redis reported a rate since it was made, so that the rate a throttle
// left on an earlier outage's local bucket, which the fleet never took,
// does not hold the process after it. A pause it set is not lost: the
// process knows of it (pausedFor), and holds the new one too. What an
// outage's local bucket learned reaches the fleet when Redis answers
// again, if this process was throttled on it: the write-back (oweThrottle, writeOwed) tells its rate
// then, climbs after the throttles included, times the processes it was a
// share among (localDiv). A local bucket never throttled writes nothing
// back, and the fleet climbs again from the rate Redis holds, as its
// controller does.
func (b *sharedBucket) fallback(now time.Duration) state.Bucket {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	ep, out := b.s.outage()
	rates := b.rates.Load()
	if !b.keepsLocal(ep, out, rates) {
		div := b.s.sharers()
		b.local = b.fromRate(now, div)
		b.localEp, b.localOut, b.localRate = ep, out, rates
		b.localDiv = float64(div)
	}
	return b.local
}

// keepsLocal reports whether fallback keeps the local bucket, in the
// outage ep (out: the store is on local limits), Redis having reported
// rates rates. localMu must be held.
func (b *sharedBucket) keepsLocal(ep int64, out bool, rates int64) bool {
	return b.local != nil && b.localEp == ep && (out || !b.localOut && b.localRate == rates)
}

// fromRate returns a new local bucket made at now: the bucket's settings
// divided by div (the processes it is a share among: Store.sharers), at
// the same share of the fleet's last known rate (see fallback), held by
// the pause the process knows of and charged for the tokens it took
// lately, up to its burst at that rate. A throttle on it within
// bucket.DecreaseInterval of the last decrease of the fleet's rate the
// process saw is of that congestion event: it does not decrease the rate
// again. It changes nothing of b: fallback installs it, and Snapshot only
// reads it.
func (b *sharedBucket) fromRate(now time.Duration, div int64) state.Bucket {
	share := func(v float64) float64 { return v / float64(div) }
	spec := b.spec
	spec.Rate = share(b.spec.Rate)
	spec.Burst = math.Max(1, share(b.spec.Capacity()))
	spec.Floor = math.Min(share(b.floor), spec.Rate) // b.floor: b.spec.Floor, or bucket.DefaultFloor
	// How long ago the fleet's rate went down at the earliest; -1: not known.
	since := time.Duration(-1)
	if at := b.decreased.Load(); at != int64(never) {
		since = max(0, mono()-time.Duration(at))
	}
	l := bucket.NewAtRate(spec, share(b.rate()), now, since)
	burst := l.Snapshot(now).Tokens // full: its capacity at the rate it starts at
	if p := b.pausedFor(mono()); p > 0 {
		// A pause known to this process (set on an earlier outage's local
		// limits, or on Redis) holds the new local limits too.
		l.Pause(now, p)
	}
	b.mu.Lock()
	owed := b.log.charge(mono(), false, burst)
	b.mu.Unlock()
	for range owed {
		l.Reserve(now)
	}
	return l
}

// localSnapshot returns the state at now of the local bucket the next
// call Redis does not take would use: the one fallback keeps, or the one
// it would make, which localSnapshot makes only to read (a read has no
// side effect: it installs no local bucket).
func (b *sharedBucket) localSnapshot(now time.Duration) state.BucketSnapshot {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	l := b.local
	if ep, out := b.s.outage(); !b.keepsLocal(ep, out, b.rates.Load()) {
		l = b.fromRate(now, b.s.sharers())
	}
	return l.Snapshot(now)
}

// Cancel gives a reserved token back to the fleet's bucket. The token may
// be one far in the future (its wait would have passed the caller's
// deadline): the balance goes up by one, as in a local bucket, and no
// process may use it before its turn. The caller does not wait for Redis
// (it is often one whose deadline has come): the tokens given back go
// with the next lease request, or, when none is being sent, in an
// operation of their own, several at a time; until Redis took them they
// stay in the token log, so that local limits made meanwhile are charged
// for them before they are given back there (cancelLocal). A token the
// local limits gave (the latest logged is theirs: Redis refused the
// request, or did not answer, and was not charged for it since) goes back
// to them, not to Redis, which never gave it; so does every token while
// Redis does not answer. A token of Redis's usable at once is not logged
// (tokenLog): one given back while the latest logged is the local limits'
// (Redis answered a request sent before the local one was taken) goes
// back to them in its place, and the local one is forgotten, so that
// the fleet's count stays right: Redis keeps as spent the token given
// back, in place of the local one, which the next request does not charge
// it for; at worst, when no request charges it within a capacity window,
// one token stays spent, never one too many given. Only the local limits
// of that episode count a call fewer. Read by its time instead, the
// latest token would be Redis's, which would be given a token too many
// whenever the local one is the one given back.
func (b *sharedBucket) Cancel(now time.Duration) {
	b.mu.Lock()
	local := b.log.lastLocal()
	b.mu.Unlock()
	if local || b.s.degraded() {
		b.cancelLocal(now, 1)
		return
	}
	b.mu.Lock()
	b.register()
	b.spaced -= b.leaseStep // as Redis's balance, the queue's end moves back a token
	b.giveBack++
	start := !b.giving && !b.sending
	b.giving = b.giving || start
	b.mu.Unlock()
	if start {
		go b.sendGiveBack(now)
	}
}

// CancelAt gives back a token due at at (on the caller's clock, as now)
// that the caller will not use. One usable by now goes back into the
// lease while the lease lasts and holds tokens (one a throttle or a pause
// dropped holds none), usable at once by the next caller, with no Redis
// operation (it goes back to Redis with the lease's other tokens when the
// lease ends); at a bucket paused now it is kept instead, due
// before the pause began, which counted it as spent (see resilience's
// cancel). Any other is given back as Cancel gives it.
func (b *sharedBucket) CancelAt(now, at time.Duration) {
	if at <= now {
		if b.KnownPause() > 0 {
			return
		}
		t := mono()
		b.mu.Lock()
		if !b.s.degraded() && !b.onLocal && b.leaseOpen(t) {
			b.lease++
			b.leaseNow++
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
	b.Cancel(now)
}

// sendGiveBack gives the tokens of Cancel, and those Redis granted that
// no caller will take (unused), back to Redis, until none is left. When
// Redis does not take them, Cancel's go to the local limits, as Cancel
// gives them there while Redis does not answer; the unused ones are
// dropped: they were Redis's, and the local limits never had them.
func (b *sharedBucket) sendGiveBack(now time.Duration) {
	for {
		b.mu.Lock()
		n, unused := b.giveBack, b.unused
		b.giveBack, b.unused = 0, 0
		b.giving = n+unused > 0
		b.settle()
		b.mu.Unlock()
		if n+unused == 0 {
			return
		}
		_, ok := b.s.run(giveScript, b.keys[:1], b.argsWith(n+unused)...)
		switch {
		case n == 0:
		case ok: // Redis took them back
			b.mu.Lock()
			for range n {
				b.log.dropLast()
			}
			b.mu.Unlock()
		default:
			b.cancelLocal(now, n)
		}
	}
}

// cancelLocal gives n tokens back to the local limits and forgets them in
// the token log. Local limits made now are charged for them first (they
// are still logged), so that a token given back there once counts once:
// taken out of the charge and given back on top, it put them a token
// ahead of the callers queued.
func (b *sharedBucket) cancelLocal(now time.Duration, n int) {
	local := b.fallback(now)
	b.mu.Lock()
	for range n {
		b.log.dropLast()
	}
	b.mu.Unlock()
	for range n {
		local.Cancel(now)
	}
}

// Throttle sends the success counts not yet sent with the throttle: the
// goodput controller measures what the fleet was served up to now. While
// Redis does not answer they are kept for it (flushServed), and so are
// those sent with a throttle Redis surely did not run as it went away
// (an error reply such as LOADING, a connection not made: keepUnsent),
// which go with its write-back (writeOwed) or before it.
func (b *sharedBucket) Throttle(now, pause time.Duration) (float64, bool) {
	at := max(1, mono())
	b.paused(pause)
	b.mu.Lock()
	// The lease goes, so that this process slows at once. With a pause,
	// its tokens go back with the throttle: the pause would move them past
	// its end, where they would hold the fleet's first tokens after it
	// back and count as callers queued until then. Without one, they stay
	// spent: at most a lease window of the fleet's tokens, at the rate
	// before the throttle. Given back, they would move the fleet's queue
	// back under the tokens other processes borrowed after them, which
	// keep their times at that rate, and the tokens granted after the
	// throttle would go among those (a pause moves them all past its end).
	unused := b.takeLease()
	if pause <= 0 {
		unused = 0
	}
	var pairs []any
	var kept []served
	if !b.s.degraded() { // else kept for Redis (flushServed)
		kept = append(kept, b.served...)
		pairs = b.takeServed()
	}
	b.mu.Unlock()
	sent := mono()
	res, ok, unsent := b.s.runOnce(throttleScript, b.keys[:1], b.argsWith(append([]any{pause.Microseconds(), unused}, pairs...)...)...)
	if !ok || len(res) < 2 {
		b.keepUnsent(kept, unsent)
		// The local limits slow first, so that the write-back of the
		// throttle (oweThrottle) reads their rate after it.
		r, dec := b.fallback(now).Throttle(now, pause)
		b.oweThrottle(at)
		b.owe(pause)
		return r, dec
	}
	r, dec := b.setRate(res[1]), toInt(res[0]) == 1
	if dec {
		storeMax(&b.decreased, int64(sent)) // this throttle's: Redis decreased the rate after it was sent
	}
	return r, dec
}

// oweThrottle records that a throttle that came at at (mono), whose
// script Redis did not run or did not answer, is to be written to Redis
// when it answers again (the store's writeBack), as of then
// (throttledScript), so that it slows the fleet, as the local limits it
// slowed, and the next local limits, made from the fleet's rate, start
// from the rate it left: the cut the local limits made is not lost with
// them. A throttle Redis ran, whose answer was lost, counts once, as
// does one of a congestion event a throttle Redis ran counted already.
// Each congestion event owed is written back (the latest maxOwedEvents),
// its first throttle standing for it, with the rate of the local limits
// the throttle slowed (the local bucket fallback keeps) when they are an
// outage's, which sets the rate the write-back leaves (writeOwed). Local
// limits made for one operation (its answer late or lost, Redis answering
// the rest) tell nothing of the rate: they measured nothing, and the
// event counts as Redis counts it. After Close, nothing is written
// back (Store.hold).
func (b *sharedBucket) oweThrottle(at time.Duration) {
	if !b.adaptive {
		return
	}
	b.localMu.Lock()
	l, div, out := b.local, b.localDiv, b.localOut
	b.localMu.Unlock()
	b.mu.Lock()
	switch {
	case l != nil && out:
		b.owedLocal, b.owedDiv = l, div
	case l != nil:
		// One operation's fallback, not an outage's: Redis ran or will
		// be told of each event, and its own measure stands.
		b.owedLocal = nil
	}
	n := len(b.owedEvents)
	if n == 0 || at > b.owedLast {
		b.owedLast = at
	}
	if n == 0 || at-b.owedEvents[n-1] >= bucket.DecreaseInterval {
		if n == maxOwedEvents {
			b.owedEvents = append(b.owedEvents[:0], b.owedEvents[1:]...)
		}
		b.owedEvents = append(b.owedEvents, at)
	}
	b.mu.Unlock()
	if b.s.hold(&b.s.owed, b) {
		b.s.pending.Store(true)
	}
}

// maxOwedEvents bounds the congestion events owed to Redis
// (oweThrottle), the latest kept: 16 halvings take AIMD's rate from its
// ceiling to 2^-16 of it, and the floor is often lower (the default,
// bucket.DefaultFloor, for a ceiling above 65.5 rps), where the local
// limits' more events took them; the next increase, a step of the
// ceiling, leaves the two a hair apart.
const maxOwedEvents = 16

func (b *sharedBucket) Pause(now, pause time.Duration) {
	if pause <= 0 {
		return
	}
	b.paused(pause)
	b.mu.Lock()
	unused := b.takeLease() // given back with the pause
	b.mu.Unlock()
	if _, ok := b.s.run(pauseScript, b.keys[:1], b.argsWith(pause.Microseconds(), unused)...); !ok {
		b.owe(pause)
		b.fallback(now).Pause(now, pause)
	}
}

// owe records that a pause of d from now, set on the local limits, is to
// be written to Redis when it answers again (the store's writeBack), so
// that the pause holds the other processes, and this one's calls on the
// shared state, until it ends. After Close, nothing is written back, and
// the store keeps no bucket for it (Store.hold).
func (b *sharedBucket) owe(d time.Duration) {
	if d <= 0 {
		return
	}
	until := int64(mono() + d)
	for {
		old := b.owedPause.Load()
		if old >= until || b.owedPause.CompareAndSwap(old, until) {
			break
		}
	}
	if b.s.hold(&b.s.owed, b) {
		b.s.pending.Store(true)
	}
}

// writeOwed writes to Redis what the local limits owe it: the congestion
// events Redis did not run a throttle of, each as of its time
// (oweThrottle: their ages when sent, and the operation timeout, the
// longest the write-back may take to reach Redis, so that one slow on its
// way counts once), but for those older than the horizon (the keys' TTL
// and the longest pause), which the fleet has forgotten, and dropped; with
// the success counts not sent yet (the goodput controller's event
// measures them, as a throttle's on the shared state does), with what the
// local limits the throttles slowed tell of the fleet's rate (their rate
// now, whatever it climbed back to, times what the fleet's was divided by
// for them), which sets the rate the write-back leaves (throttledScript),
// and the rest of the pause owed (owe); false when Redis did not answer,
// what was not written then still owed. When Redis surely did not run the
// write-back (an error reply, a connection not made), its events and
// counts are owed again, before those owed since; when its answer was
// lost (Redis may have run it), it is kept as it was sent (owedResend),
// and the next writeOwed sends it again, the same, before what was owed
// since (writeOwedAgain): Redis applies each write-back at most once, by
// its number, so that what the outage taught reaches the fleet once,
// whether the first send ran or not.
func (b *sharedBucket) writeOwed() bool {
	if !b.writeOwedAgain() {
		return false
	}
	b.mu.Lock()
	now := mono()
	events, last := b.owedEvents, b.owedLast
	b.owedEvents = nil
	if len(events) > 0 && now-last > b.s.horizon {
		// The latest too old: all are, dropped, and with them the local
		// limits whose rate they would have told.
		events, b.owedLocal = nil, nil
	}
	var w *owedWrite
	if len(events) > 0 {
		b.owedSeq++
		w = &owedWrite{seq: b.owedSeq, first: now, events: events, last: last, est: b.owedEstimate(),
			served: append([]served(nil), b.served...)}
		b.served = b.served[:0]
	}
	b.mu.Unlock()
	if w != nil {
		b.s.calls.Add(1)
		res, err := b.s.call(throttledScript, b.keys[:1], b.owedArgs(w, now))
		if !b.owedAnswered(err) {
			if notRun(err) {
				b.reowe(w.events, w.last, w.served, true)
			} else { // Redis may have run it: sent again, the same (writeOwedAgain)
				b.mu.Lock()
				b.owedResend = w
				b.mu.Unlock()
			}
			return false
		}
		b.owedWritten(res, err)
	}
	until := b.owedPause.Load()
	d := time.Duration(until) - mono()
	if until != 0 && d > 0 {
		b.s.calls.Add(1)
		if _, err := b.s.call(pauseScript, b.keys[:1], b.argsWith(d.Microseconds())); !b.owedAnswered(err) {
			return false
		}
	}
	b.owedPause.CompareAndSwap(until, 0)
	b.s.owed.Delete(b)
	b.mu.Lock()
	owed := len(b.owedEvents) > 0 || b.owedResend != nil
	b.mu.Unlock()
	if owed || b.owedPause.Load() != 0 { // owed meanwhile
		b.s.owed.Store(b, struct{}{})
	}
	return true
}

// An owedWrite is what one write-back of a bucket's throttles carries
// (writeOwed), its times mono ones, so that sending it again sends the
// same events, their ages counted from the new send: its number (seq),
// when it was first sent (first), the congestion events and the latest
// throttle, what the local limits told of the fleet's rate (est, -1 for
// nothing), and the success counts it took along.
type owedWrite struct {
	seq         int64
	first, last time.Duration
	events      []time.Duration
	est         float64
	served      []served
}

// owedEstimate returns what the local limits the throttles owed slowed
// tell of the fleet's rate: their rate now, times what the fleet's was
// divided by for them; -1 when no local bucket is known. mu must be held.
func (b *sharedBucket) owedEstimate() float64 {
	if b.owedLocal == nil {
		return -1
	}
	return b.owedLocal.Snapshot(0).Rate * b.owedDiv
}

// owedArgs returns the arguments of throttledScript for the write-back w
// sent at t (mono): each time as how long before t it was, the events
// older than the horizon left out.
func (b *sharedBucket) owedArgs(w *owedWrite, t time.Duration) []any {
	args := []any{(t - w.last).Microseconds(), b.s.cfg.timeout.Microseconds(), 0}
	k := 0
	for _, at := range w.events {
		if t-at <= b.s.horizon {
			args = append(args, (t - at).Microseconds())
			k++
		}
	}
	args[2] = k
	args = append(args, ftoa(w.est), b.wbField, (3 * b.s.cfg.heartbeat).Microseconds(), w.seq)
	return b.argsWith(append(args, servedPairs(w.served)...)...)
}

// owedWritten takes Redis's answer to a write-back of throttles (err nil,
// or a refusal): the local bucket is let go of when nothing was owed
// meanwhile, and the rate Redis left is the fleet's.
func (b *sharedBucket) owedWritten(res []any, err error) {
	b.mu.Lock()
	if len(b.owedEvents) == 0 { // none owed meanwhile: nothing to tell of it
		b.owedLocal = nil
	}
	b.mu.Unlock()
	if err == nil && len(res) >= 2 {
		b.setRate(res[1])
	}
}

// writeOwedAgain sends again the write-back of throttles whose answer was
// lost (owedResend), if one is owed: the same events and counts, their
// ages counted from this send, so that Redis, which applies it only when
// it did not apply it before (its number tells), places them where the
// first send would have. One first sent longer ago than the keys' TTL
// less the operation timeout, or whose latest throttle is past the
// horizon, is dropped: Redis may have forgotten its record of the
// write-backs it applied, and the fleet what it carried. It reports
// false when Redis did not answer, the write-back then kept for the next
// try.
func (b *sharedBucket) writeOwedAgain() bool {
	b.mu.Lock()
	w := b.owedResend
	b.mu.Unlock()
	if w == nil {
		return true
	}
	t := mono()
	if b.s.resendable(w.first, t) && t-w.last <= b.s.horizon {
		b.s.calls.Add(1)
		res, err := b.s.call(throttledScript, b.keys[:1], b.owedArgs(w, t))
		if !b.owedAnswered(err) {
			return false
		}
		b.owedWritten(res, err)
	}
	b.mu.Lock()
	b.owedResend = nil
	b.mu.Unlock()
	return true
}

// reowe puts back what writeOwed took to write back and Redis did not
// run: the congestion events owed and the latest throttle, before those
// owed since, and, with counts, the success counts kept, before those
// counted since (the oldest go past maxServed).
func (b *sharedBucket) reowe(events []time.Duration, last time.Duration, kept []served, counts bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.owedEvents) == 0 || last > b.owedLast {
		b.owedLast = last
	}
	b.owedEvents = append(events, b.owedEvents...)
	if n := len(b.owedEvents); n > maxOwedEvents {
		b.owedEvents = b.owedEvents[n-maxOwedEvents:]
	}
	if counts {
		b.keepServed(kept)
	}
}

// keepServed puts back the success counts kept, taken for a script Redis
// surely did not run, before those counted since (the oldest go past
// maxServed), and makes sure they reach Redis (flushServed, or the next
// script that takes them along). mu must be held.
func (b *sharedBucket) keepServed(kept []served) {
	if len(kept) == 0 {
		return
	}
	b.served = append(kept, b.served...)
	if n := len(b.served); n > maxServed {
		b.served = b.served[n-maxServed:]
	}
	if b.flush == nil && !b.s.closed() {
		b.flush = time.AfterFunc(bucket.GoodputSlot, b.flushServed)
	}
}

// owedAnswered reports whether Redis answered a write-back of what is
// owed (writeOwed), err its error: false when it did not (an outage, which
// it counts unless the store is closing), and what was owed stays owed; a
// refusal is reported (refused) and the debt dropped, as sending it again
// would be refused again.
func (b *sharedBucket) owedAnswered(err error) bool {
	switch {
	case err != nil && unavailable(err):
		if !b.s.closed() { // else Close's: no outage reported (see run)
			b.s.errors.Add(1)
		}
		return false
	case err != nil && !b.s.closed():
		b.s.refused(b.keys[0], err) // no use sending it again
	}
	return true
}

// paused records a pause of d this process sets, from now. Its end is
// read on the process's clock before Redis sets it, so that it ends no
// later than Redis's.
func (b *sharedBucket) paused(d time.Duration) {
	if d > 0 {
		storeMax(&b.pausedUntil, int64(mono()+d))
	}
}

// storeMax sets v to x when x is more.
func storeMax(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if old >= x || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// learnPause records a reading of the bucket's pause in Redis, made by a
// request sent at sent and answered at answered (mono): p still to run
// when Redis read it, 0 when it was not paused (or did not answer: the
// pause is read again a lease window later at the earliest). The pause's
// end counts from sent, so that it ends no later than Redis's; the
// reading is as of its answer, so that a lease, which lasts a lease window
// from its answer but for the tokens it holds past it, is read again only
// when such a token is used.
func (b *sharedBucket) learnPause(sent, answered, p time.Duration) {
	storeMax(&b.pauseRead, int64(answered))
	if p > 0 {
		storeMax(&b.sharedPause, int64(sent+p))
	}
}

// PausedFor returns how long the bucket is still paused: by a pause this
// process set (Pause, or Throttle with a Retry-After), or by one Redis
// reported (another process's), 0 when it is not. The governor asks it
// for a call before it is sent: a token granted before the pause began is
// not held by it (Redis gave its time before), and a paused scope sends
// nothing until the pause ends, so that the call takes another token,
// which Redis gives after the pause. When this process has not read the
// bucket's pause in Redis for a lease window (a lease request's answer
// reads it), it reads it first, one round trip for every caller of the
// bucket at that time, bounded by ctx: a call is sent at most a lease
// window and a round trip after another process paused the scope.
func (b *sharedBucket) PausedFor(ctx context.Context) (time.Duration, error) {
	t := mono()
	if b.pauseStale(t) && !b.s.degraded() && !b.s.shut.Load() {
		if err := b.readPause(ctx, t); err != nil {
			return 0, err
		}
		t = mono()
	}
	return b.pausedFor(t), nil
}

// KnownPause returns how long the bucket is still paused as far as this
// process knows now (a pause it set, or one Redis reported), with no
// round trip: the governor asks it for a token given back, which a pause
// in force counted as spent.
func (b *sharedBucket) KnownPause() time.Duration { return b.pausedFor(mono()) }

// pauseStale reports whether the process last read the bucket's pause in
// Redis more than a lease window before t (mono).
func (b *sharedBucket) pauseStale(t time.Duration) bool {
	return t-time.Duration(b.pauseRead.Load()) > b.s.cfg.leaseWindow
}

// pausedFor returns how long the bucket is still paused at t (mono), as
// far as the process knows.
func (b *sharedBucket) pausedFor(t time.Duration) time.Duration {
	return max(0, time.Duration(max(b.pausedUntil.Load(), b.sharedPause.Load()))-t)
}

// readPause reads the bucket's pause in Redis, unless another caller did
// since t (mono): the callers that come while it is read wait for its
// answer, each until its ctx ends.
func (b *sharedBucket) readPause(ctx context.Context, t time.Duration) error {
	b.mu.Lock()
	ch := b.pauseCheck
	if ch == nil {
		if !b.pauseStale(t) {
			b.mu.Unlock()
			return nil
		}
		ch = make(chan struct{})
		b.pauseCheck = ch
		b.mu.Unlock()
		if ctx.Done() == nil {
			b.readPauseNow(ch)
			return nil
		}
		go b.readPauseNow(ch)
	} else {
		b.mu.Unlock()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readPauseNow is readPause's round trip. A pause it finds drops the
// lease's tokens that are due before the pause ends: borrowed before it
// began, they go back to Redis (unused) with the request in flight's
// successor (see dispatch) or, when none is in flight, in an operation of
// their own (sendGiveBack), so that they do not wait for a call that may
// never come; they are dropped when Redis does not take them. The callers
// take tokens Redis gives after the pause.
func (b *sharedBucket) readPauseNow(ch chan struct{}) {
	sent := mono()
	res, ok := b.s.run(bucketSnapshotScript, b.keys[:1], b.args...)
	var p time.Duration
	if ok && len(res) >= 3 {
		b.setRate(res[0])
		p = b.s.micros(res[2])
	}
	b.learnPause(sent, mono(), p)
	b.mu.Lock()
	give := false
	if p > 0 && b.lease > 0 && (b.leaseNow > 0 || b.leaseNext < sent+p) {
		b.unused += b.takeLease()
		give = !b.sending && !b.giving // else with the next request (see dispatch), or sendGiveBack's
		b.giving = b.giving || give
	}
	now := b.lastUse
	b.pauseCheck = nil
	close(ch)
	b.mu.Unlock()
	if give {
		go b.sendGiveBack(now)
	}
}

// Success counts a success for the goodput controller (see count), and
// asks Redis for an increase at most once per second per process: the
// fleet-wide rules (AIMD's one increase per bucket.IncreaseInterval after
// as long without a throttle, the goodput controller's one climb per
// bucket.GoodputClimbInterval after bucket.GoodputQuiet) are Redis's to
// apply, and most successes have nothing to ask.
func (b *sharedBucket) Success(now time.Duration) (float64, bool) {
	if b.s.degraded() {
		if b.goodput { // for Redis too, when it answers again (flushServed)
			b.mu.Lock()
			b.count()
			b.mu.Unlock()
		}
		return b.fallback(now).Success(now)
	}
	r := b.rate()
	var pairs []any
	b.mu.Lock()
	if b.goodput {
		b.count()
	}
	due := b.adaptive && r < b.spec.Rate && now-b.lastSuccess >= b.s.cfg.successPeriod
	if due {
		b.lastSuccess = now
		pairs = b.takeServed()
	}
	b.mu.Unlock()
	if !due {
		return r, false
	}
	res, ok := b.s.run(successScript, b.keys[:1], b.argsWith(pairs...)...)
	if !ok || len(res) < 2 {
		return b.fallback(now).Success(now)
	}
	return b.setRate(res[1]), toInt(res[0]) == 1
}

// Recovering reports whether Success has anything to do: count for the
// goodput controller, recover for AIMD below the ceiling.
func (b *sharedBucket) Recovering() bool {
	if b.s.degraded() {
		return true // let the fallback count; cheap compared to an outage
	}
	return b.goodput || b.adaptive && b.rate() < b.spec.Rate
}

// Snapshot reads the bucket in Redis. Its balance there is the fleet's,
// less the tokens this process's lease holds and no caller took yet: while
// the lease lasts they are counted back, as if given back (up to the
// bucket's capacity), so that a balance below zero counts callers waiting
// for their tokens, as in one process, not tokens borrowed in advance.
// Once it ended they are no caller's (they go back with the next request,
// if one comes), and count as taken, as another process reads them. The
// tokens other processes' leases hold are not known here: they count as
// taken until their times, at most a lease window ahead but for those of
// callers refused or gone while they waited for a lease answer, and later
// when a pause set meanwhile moved them (see Leases in the package
// documentation). While Redis does not answer, or refuses the read, it
// returns the state of the local bucket the next call would reserve on
// (localSnapshot), installing none.
func (b *sharedBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	res, ok := b.s.run(bucketSnapshotScript, b.keys[:1], b.args...)
	if !ok || len(res) < 3 {
		s := b.localSnapshot(now)
		s.Ceiling = b.spec.Rate
		return s
	}
	r := b.setRate(res[0])
	tokens, ok := number(res[1])
	if !ok {
		tokens = 0
	}
	leased := 0
	b.mu.Lock()
	if b.leaseOpen(mono()) {
		leased = b.lease
	}
	b.mu.Unlock()
	if leased > 0 && tokens < b.capacity() {
		tokens = math.Min(b.capacity(), tokens+float64(leased))
	}
	return state.BucketSnapshot{Rate: r, Ceiling: b.spec.Rate, Tokens: tokens, Paused: b.s.micros(res[2])}
}

// Idle: the local object can be dropped when it holds no lease a caller
// may still take a token of (an ended lease's tokens no caller took go
// back to Redis when the governor drops the bucket: Drop), no tokens to
// give back to Redis (giveBack, unused: dropped with it, they would stay
// spent there) and no operation giving them back, the fleet's rate was at
// its ceiling at the last answer, and it went unused. The state in Redis
// lives on until its key expires. Idle only reads.
func (b *sharedBucket) Idle(now, minIdle time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	// An ended lease is no caller's (Drop gives its tokens back); its end
	// is read on the caller's clock, from the last use.
	noLease := b.lease == 0 || now-b.lastUse >= b.leaseEnd-b.lastUseMono
	return noLease && b.giveBack+b.unused == 0 && !b.giving && len(b.queue) == 0 && !b.sending &&
		b.rate() >= b.spec.Rate && now-b.lastUse >= minIdle
}

// Drop gives back to Redis, once the governor dropped the bucket, the
// tokens of its lease that no caller took: Redis counts them as taken, and
// they would have gone back with the bucket's next lease request, which a
// dropped bucket does not send (a quiet scope's lease ends with them; while
// other processes keep the bucket drained, they were lost to the fleet).
// Drop does not wait for Redis: they go with the other tokens the bucket
// has to give back, in an operation the store's senders of dropped
// buckets send (a few at a time, however many buckets the governor drops
// at once), or with a give-back or a lease request already on its way;
// as every give-back of Redis's tokens, they are dropped when Redis does
// not take them. A call that held the bucket as it was dropped may still
// take a token of it: the bucket borrows no lease after Drop, which no one
// would give back (the governor tells it once), and the tokens of an
// answer in flight beyond its callers' go back too (dispatch). A bucket
// with an operation in flight stays among the store's live buckets, so
// that Store.Close waits for that operation and gives back what it
// brings.
func (b *sharedBucket) Drop(now time.Duration) {
	b.mu.Lock()
	b.dropped = true
	b.unused += b.takeLease()
	busy := b.giving || b.sending
	give := b.giveBack+b.unused > 0 && !busy
	b.giving = b.giving || give
	registered := b.registered
	b.mu.Unlock()
	if !busy && registered {
		// An operation in flight (a lease request, a give-back) may bring
		// tokens to give back after it, which Close waits for: the
		// bucket stays among the store's live ones until then.
		b.s.forget(b)
	}
	if give {
		b.s.giveBackDropped(b, now)
	}
}

// closeOut is Close's Drop: it gives back, before it returns, the tokens
// of the bucket's lease that no caller took and those it has to give back
// (giveBack, unused), and marks it dropped, so that it borrows no lease
// after. An operation of the bucket's in flight (a lease request, a
// give-back) is waited for, as the tokens it brings back or has yet to
// send are the bucket's to give back too: settle signals its end
// (settled); the wait ends at Close's deadline (Store.closeBy), past
// which the store sends nothing.
func (b *sharedBucket) closeOut() {
	for {
		b.mu.Lock()
		b.dropped = true
		b.unused += b.takeLease()
		busy := b.giving || b.sending
		give := !busy && b.giveBack+b.unused > 0
		b.giving = b.giving || give
		now := b.lastUse
		var settled chan struct{}
		if busy {
			if b.settled == nil {
				b.settled = make(chan struct{})
			}
			settled = b.settled
		}
		b.mu.Unlock()
		switch {
		case give:
			b.sendGiveBack(now)
		case !busy || !b.s.closeWait(settled):
			return
		}
	}
}

// register puts the bucket in the store's registry of live buckets, whose
// tokens Close gives back, before its first operation that takes tokens
// of Redis's or gives some back (a lease request, a give-back), once: a
// bucket that never did (made for a read, the governor's Inspect of a
// scope it holds no entry of) has none to give back, and the store keeps
// no entry for it. Once Close began, the bucket is dropped instead: it
// borrows no lease. A dropped bucket is not registered again. mu must be
// held (the store's lock is taken under it).
func (b *sharedBucket) register() {
	if b.registered || b.dropped {
		return
	}
	b.registered = true
	b.s.mu.Lock()
	if b.s.closing {
		b.dropped = true // Close gave the leases back: it borrows none
	} else {
		b.s.live[weak.Make(b)] = struct{}{}
	}
	b.s.mu.Unlock()
}

// settle closes settled, which closeOut waits on, once the bucket has no
// operation in flight (neither sending nor giving). Whoever ends an
// operation calls it. mu must be held.
func (b *sharedBucket) settle() {
	if b.settled != nil && !b.sending && !b.giving {
		close(b.settled)
		b.settled = nil
	}
}

var (
	_ state.Bucket  = (*sharedBucket)(nil)
	_ state.Dropper = (*sharedBucket)(nil)
)
