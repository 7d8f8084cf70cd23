package fleet

import (
	"slices"
	"strconv"
	"sync"
	"time"

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
//
// While Redis does not answer, a local breaker stands in, started from the
// view (fallback); what it learns (it opened, let a probe through, closed
// after one; the failures it counted, a success that reset them) is
// written back to Redis when Redis answers again (writeBack). Once it
// holds nothing unwritten, a newer view (or a new outage) replaces it at
// its next use, so that a local breaker of an earlier outage does not
// decide calls after the fleet's breaker moved on.
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
	view     int64         // counts the view's changes (see fallback)
	why      string        // why the breaker last opened, as the process that opened it said ("" when none did)
	told     int64         // the Store's staleTick when a success was last sent to Redis
	// lastOK is when (on the callers' clock) the last success Redis
	// recorded for the scope came, any process's (see LastSuccess); okKnown
	// is false while the view knows of none.
	lastOK  time.Duration
	okKnown bool
	// clockNow and clockMono are one instant read on the callers' clock
	// and on mono, so that a time on one converts to the other.
	clockNow, clockMono time.Duration

	// unwritten is set while the local breaker holds what writeBack has
	// not sent yet; such a breaker is not Pristine, so that the governor
	// keeps its scope (and this breaker) until it is written back (or,
	// once the store is closed, until its local breaker is pristine), and
	// the store holds it meanwhile (Store's unwrittenBreakers), so that
	// one the governor let go of all the same (a Reset, a Configure that
	// replaced it) is written back too. mu guards it, so that Pristine
	// reads it at no cost; setUnwritten changes it.
	unwritten bool

	localMu sync.Mutex
	local   *breaker.Breaker
	localEp int64 // the episode the local breaker was made for or kept into
	// localView is the view (its count of changes) the local breaker was
	// made from: a newer one replaces it once it holds nothing unwritten.
	localView int64
	learned   time.Duration // mono when the local breaker last changed its state; 0: not since it was made or written back
	// The local breaker's count of failures since it was made, its state
	// last changed or a success last reset it: known are those Redis may
	// have counted (from the view, or sent to Redis without an answer),
	// fails the mono times of those it never heard of, the latest
	// maxFailTimes, and older the count of those before them, which came
	// from olderFirst to olderLast (see addFail). okAt is the mono
	// time of the last success that reset a count (0: none since the local
	// breaker was made, its state changed, or it was written back); run
	// counts the resets, so that failures taken out for a write-back are put
	// back only into the run they belong to.
	known      int
	fails      []time.Duration
	older      int
	olderFirst time.Duration
	olderLast  time.Duration
	okAt       time.Duration
	run        int64
	// ended is when (mono) the latest success Redis ran was sent
	// (succeeded): it ended the failures the local breaker alone counted
	// before it, and no others, so that a write-back Redis did not run
	// puts back those it carried that came after it, and one sent again
	// (resend) sends only those.
	ended time.Duration
	// sending is set while writeBack sends what the local breaker
	// learned, which it took out of it: fallback keeps the local breaker
	// meanwhile, so that failures Redis did not run go back into it.
	sending bool
	// resend is the write-back whose answer was lost (Redis may have run
	// it), which writeBack sends again, the same, before what the local
	// breaker learned since; nil when none. fallback keeps the local
	// breaker while one is owed, and the breaker stays unwritten.
	resend *learnedWrite
	// wbSeq numbers the breaker's write-backs, and wbField is the field of
	// the breaker's hash in Redis that records the last one Redis applied
	// (the store's wbPrefix and the breaker's number in the store), so that
	// Redis applies each at most once, however often it is sent.
	wbSeq   int64
	wbField string
}

// A learnedWrite is what one write-back of a breaker carries (writeBack), its
// times mono ones, so that sending it again sends the same events, their
// ages counted from the new send: its number (seq), when it was first sent
// (first), the local breaker's state and cooldown then and the end of its
// wait, when its state last changed (changed) and a success last reset
// its count (okAt), 0 for none, and the failures it alone counted (fails,
// and older before them, from olderFirst to olderLast: see addFail).
type learnedWrite struct {
	seq                   int64
	first                 time.Duration
	st                    state.BreakerState
	cooldown, waitEnd     time.Duration
	changed, okAt         time.Duration
	fails                 []time.Duration
	older                 int
	olderFirst, olderLast time.Duration
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
		wbField:  s.wbPrefix + strconv.FormatInt(s.wbMade.Add(1), 36),
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
// them (at, on its clock, in µs), how long before that the last success
// Redis recorded for it came (ok, in µs; -1 or absent: none), and the time
// this process sent the request (sent, mono).
type reading struct {
	st, wait, failures, cooldown, at any
	why                              any // why the breaker last opened (see whyOf)
	ok                               any
	sent                             time.Duration
}

// whyOf reads why a breaker opened, as the scripts reply it: one of the
// reasons the governor gives (resilience's CircuitOpenError.Reason), ""
// for any other value or none.
func whyOf(v any) string {
	switch w := toString(v); w {
	case "throttling", "errors", "throttled for good", "down":
		return w
	}
	return ""
}

// refreshBreaker updates the cached view of the breakers at key (one for
// each spec: see Store.Breaker) from the answer to a token request.
func (s *Store) refreshBreaker(key string, now time.Duration, r reading) {
	v, ok := s.breakers.Load(key)
	if !ok {
		return
	}
	for _, w := range v.(*breakerRefs).ws {
		if b := w.Value(); b != nil {
			b.update(now, r)
		}
	}
}

// longest is the breaker's longest cooldown.
func (b *sharedBreaker) longest() time.Duration { return max(b.spec.Cooldown, b.spec.MaxCooldown) }

// maxWait is the longest wait a valid breaker can give: its longest
// cooldown, and the clock skew between Redis's servers.
func (b *sharedBreaker) maxWait() time.Duration { return b.longest() + maxClockSkew }

// far is the longest cooldown or wait a reading may give and be valid:
// the store's horizon (the key's TTL and the longest pause), or the
// breaker's longest wait when that is longer. Past its own longest, a
// reading within it (another process's settings, with a longer cooldown,
// gave it) is brought down to the breaker's own, as the scripts do.
func (b *sharedBreaker) far() time.Duration { return max(b.maxWait(), b.s.horizon) }

// readCooldown reads a cooldown from a reply: the base one for none (a
// breaker that never opened), the longest for one longer within far; ok
// is false for one past far.
func (b *sharedBreaker) readCooldown(v any) (d time.Duration, ok bool) {
	d = queueMicros(v)
	if d == 0 {
		return b.spec.Cooldown, true
	}
	return min(d, b.longest()), d <= b.far()
}

// update sets the cached view from a reading, when it is newer than the
// view's. A reading no settings could produce (an unknown state, a wait
// or a cooldown past far) is not kept: the view goes stale, and the next
// call asks Redis, whose scripts treat such a breaker as absent; a wait
// past the longest cooldown, or a cooldown longer than it, within far, is
// brought down to it (see far). It returns what the reading
// says (closed, with no wait and no failure, for one it does not keep),
// newer or not: the answer to this caller's own request.
func (b *sharedBreaker) update(now time.Duration, r reading) (state.BreakerState, time.Duration, int) {
	st, ok := breakerState(r.st)
	wait := queueMicros(r.wait)
	cooldown, cok := b.readCooldown(r.cooldown)
	failures := int(max(0, toInt(r.failures)))
	valid := ok && cok && wait <= b.far()
	wait = min(wait, b.maxWait())
	if !valid {
		st, wait, failures = state.Closed, 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.newer(r) {
		return st, wait, failures
	}
	b.readAt, b.readBack = toInt(r.at), mono()
	b.clockNow, b.clockMono = now, b.readBack
	b.view++
	if !valid {
		b.state, b.failures, b.cooldown, b.fetched, b.until, b.why = state.Closed, 0, b.spec.Cooldown, never, now, ""
		return st, wait, failures
	}
	b.state, b.failures, b.cooldown, b.fetched, b.why = st, failures, cooldown, now, whyOf(r.why)
	b.until = now + wait
	if age, ok := number(r.ok); ok && age >= 0 {
		// Counted from before the request was sent, at the earliest: a
		// streak of failures that began after the success is not ended by
		// it for a round trip's error.
		at := now - queueMicros(r.ok) - max(0, b.readBack-r.sent)
		if !b.okKnown || at > b.lastOK {
			b.lastOK, b.okKnown = at, true
		}
	}
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

// fallback returns the local breaker used while Redis does not take an
// operation. A new one starts from the last known view of the fleet's
// breaker, as the local bucket starts from the fleet's last known rate: an
// open breaker stays open until the end of its cooldown, and a half-open
// one until its probe's lease ends (the fleet's probe is out, or this
// process's, whose retries and verdict it takes), a local probe going
// then; both with the fleet's current cooldown, so that a failed local
// probe doubles it from there, as the fleet's would; a closed one keeps
// its failures.
//
// The local breaker is made again from the view when a new outage began
// or the view changed since it was made, unless it changed state or a
// success reset its count since it was made or last written back (what
// it learned is newer than the view until Redis has it: it is kept, and
// the write-back merges it with the fleet's), or a write-back is on its
// way or owed again (resend). The failures it alone counted (fails) are counted again on the new
// one, and still written back, until a success ends their run (the local
// breaker's, or one Redis ran: succeeded). So a local breaker left from an earlier
// outage, written back since, is not reused after Close, or for a single
// operation Redis refuses or leaves unanswered: the fallback starts from
// what the fleet last told this process, not from a cooldown it may have
// ended.
func (b *sharedBreaker) fallback() *breaker.Breaker {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	return b.fallbackLocked()
}

// fallbackLocked is fallback with localMu held.
func (b *sharedBreaker) fallbackLocked() *breaker.Breaker {
	ep, _ := b.s.outage()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keepsLocal(ep) {
		b.localEp = ep // kept into the new outage when it changed: what it learned waits for Redis
		return b.local
	}
	l, known, openedAt := b.fromView(b.clockNow + mono() - b.clockMono)
	b.local = l
	b.localEp, b.localView, b.learned, b.okAt = ep, b.view, 0, 0
	b.run++
	b.known = known
	if len(b.fails) == 0 {
		b.setUnwritten(false)
		return l
	}
	if openedAt != 0 {
		// Its failures opened it: the change of state is written back, as
		// of the failure that opened it, as when the local breaker counts
		// them as they come.
		b.learned, b.known = openedAt, 0
		b.clearFails()
		b.run++
	}
	if b.setUnwritten(true) {
		b.s.pending.Store(true)
	}
	return l
}

// keepsLocal reports whether fallback keeps the local breaker for the
// outage ep (see fallback): it was made for ep from the current view, or
// it holds what it learned and Redis does not have yet (a write-back on
// its way or owed again among it). localMu and mu must be held.
func (b *sharedBreaker) keepsLocal(ep int64) bool {
	return b.local != nil && (b.localEp == ep && b.localView == b.view || b.learned != 0 || b.okAt != 0 || b.sending ||
		b.resend != nil)
}

// fromView returns a new local breaker made at now (on the callers'
// clock) from the view, with the failures the local breaker alone counted
// (fails) counted again on it, each at its own time, so that one that
// opens it opens it as of the failure that reached the threshold in time,
// its cooldown running from then, as the write-back opens the fleet's
// (Redis sorts the failures it is told of with those it holds). The
// view's failures came by the time it was read (readBack), at the latest:
// when they are counted, the failure that opens it opens it as of the
// later of its own time and theirs, unless the failures it alone counted
// reached the threshold before it by themselves. known is the count of
// failures it took from the view, and openedAt the time (mono) as of which
// the failures it alone counted opened it, 0 when they did not. It changes
// nothing of b: fallback installs what it returns, and localSnapshot only
// reads it. mu must be held.
func (b *sharedBreaker) fromView(now time.Duration) (l *breaker.Breaker, known int, openedAt time.Duration) {
	l = breaker.New(b.spec)
	l.Restore(b.state, b.failures, b.cooldown, b.until)
	known = l.Snapshot(b.until).Failures
	view := b.readBack
	if known > 0 && b.older+len(b.fails) >= b.spec.Threshold {
		th := b.olderLast // among those before the times kept: at the latest the last of them
		if i := b.spec.Threshold - 1 - b.older; i >= 0 {
			th = slices.Sorted(slices.Values(b.fails))[i]
		}
		view = min(view, th)
	}
	t := mono()
	count := func(f time.Duration) (time.Duration, bool) {
		at := f
		if known > 0 {
			at = max(f, view)
		}
		opened, _ := l.FailureFrom(now - max(0, t-at))
		return at, opened
	}
	if b.older > 0 {
		// All as of the last of them: the first finds the state the others
		// would, and a closed breaker counts the others at once, up to the
		// one before the threshold (one by one, up to the threshold, held
		// the locks for seconds). An open breaker counts none of them.
		if at, opened := count(b.olderLast); opened {
			return l, known, at
		}
		if snap := l.Snapshot(now); snap.State == state.Closed && b.older > 1 {
			rest := min(b.older-1, b.spec.Threshold-1-snap.Failures)
			l.Restore(state.Closed, snap.Failures+rest, snap.Cooldown, 0)
			if rest < b.older-1 {
				if at, opened := count(b.olderLast); opened {
					return l, known, at
				}
			}
		}
	}
	for _, f := range b.fails {
		if at, opened := count(f); opened {
			return l, known, at
		}
	}
	return l, known, 0
}

// at returns the local breaker for a call at now on the callers' clock,
// which it notes as the clock's latest reading (see writeBack).
func (b *sharedBreaker) at(now time.Duration) *breaker.Breaker {
	b.clock(now)
	return b.fallback()
}

// clock notes now, on the callers' clock, as the clock's latest reading.
func (b *sharedBreaker) clock(now time.Duration) {
	t := mono()
	b.mu.Lock()
	b.clockNow, b.clockMono = now, t
	b.mu.Unlock()
}

// restart notes that the local breaker's count of failures started again
// at t (mono): its state changed (changed), or a success reset it. What
// the local breaker learned is then written back to Redis when it answers
// again. localMu must be held.
func (b *sharedBreaker) restart(t time.Duration, changed bool) {
	if changed {
		b.learned, b.okAt = t, 0
	} else {
		b.okAt = t
	}
	b.known = 0
	b.clearFails()
	b.run++
	b.noteUnwritten()
}

// noteUnwritten marks the breaker as holding what writeBack has not sent,
// and the store as having such a breaker. localMu must be held.
func (b *sharedBreaker) noteUnwritten() {
	b.mu.Lock()
	held := b.setUnwritten(true)
	b.mu.Unlock()
	if held {
		b.s.pending.Store(true)
	}
}

// setUnwritten sets unwritten to v, and the store holds the breaker while
// it is set (Store.hold), so that the heartbeat writes back what it
// learned whoever still holds it; it reports whether the store holds it
// (false once Close began: nothing is written back any more). mu must be
// held.
func (b *sharedBreaker) setUnwritten(v bool) bool {
	switch {
	case v && !b.unwritten:
		b.unwritten = true
		return b.s.hold(&b.s.unwrittenBreakers, b)
	case !v && b.unwritten:
		b.unwritten = false
		b.s.unwrittenBreakers.Delete(b)
	}
	return v && !b.s.closed()
}

// The local breaker's operations, for when Redis does not answer. Each
// runs under localMu, from getting the local breaker (fallbackLocked) to
// its note of what the local breaker learned, so that the notes are in
// the order of the operations, and no operation's goes to a local breaker
// made again meanwhile (its failure would be lost).

func (b *sharedBreaker) localAllow(now time.Duration) (time.Duration, bool, bool) {
	b.clock(now)
	b.localMu.Lock()
	defer b.localMu.Unlock()
	wait, ok, probe := b.fallbackLocked().Allow(now)
	if probe {
		b.restart(max(1, mono()), true)
	}
	return wait, ok, probe
}

func (b *sharedBreaker) localSuccess() bool {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	closed := b.fallbackLocked().Success()
	if closed || b.known > 0 || len(b.fails) > 0 {
		b.restart(max(1, mono()), closed)
	}
	return closed
}

// localFailure counts a failure on the local breaker; unsent is true when
// Redis never heard of it (no script was sent for it, or Redis did not run
// the one sent: it refused it, or the connection could not be made), so
// that the write-back counts it, and false when a script was sent without
// an answer: Redis may have counted it, and a failure is counted at most
// once.
func (b *sharedBreaker) localFailure(now time.Duration, unsent bool) bool {
	b.clock(now)
	b.localMu.Lock()
	defer b.localMu.Unlock()
	opened, from := b.fallbackLocked().FailureFrom(now)
	switch {
	case opened:
		b.restart(max(1, mono()), true)
	case from != state.Closed: // a late report: not counted
	case unsent:
		b.addFail(max(1, mono()))
		b.noteUnwritten()
	default:
		b.known++
	}
	return opened
}

func (b *sharedBreaker) localAllowProbe(now time.Duration) (time.Duration, bool) {
	return b.at(now).AllowProbe(now)
}

// localSnapshot returns the state at now of the local breaker the next
// call Redis does not take would use: the local breaker, when fallback
// keeps it, and otherwise the one fallback would make from the view,
// which it makes only to read (a read has no side effect: it installs no
// local breaker, notes no clock reading, and schedules no write-back,
// even when the failures the local breaker alone counted would open the
// new one).
func (b *sharedBreaker) localSnapshot(now time.Duration) state.BreakerSnapshot {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	ep, _ := b.s.outage()
	b.mu.Lock()
	l := b.local
	if !b.keepsLocal(ep) {
		l, _, _ = b.fromView(now)
	}
	b.mu.Unlock()
	return l.Snapshot(now)
}

// writeBack writes to Redis what the local breaker learned while Redis
// did not take its operations, since it was made from the view or last
// written back (of this outage or of an earlier one: fallback keeps a
// local breaker until it holds nothing unwritten): a change of its state,
// with how long ago it last changed, so that the newer of Redis's state
// and its own wins; the failures it alone counted, with how long ago each
// was (the latest maxFailTimes, and the count of those before, with how
// long ago the first and the last of them were), and the last success
// that reset its count, so that Redis merges them with the fleet's
// failures in the order they came (breakerLearnedScript; learnedArgs
// tells how the ages are sent). The answer becomes the view. It reports
// false when Redis did not answer. When Redis refused the script or the
// connection was not made (it did not run it), the failures go back into
// the local breaker's count, and the change and the success stay with
// it, for the next try. When the answer was lost (Redis may have run it),
// the write-back is kept as it was sent (resend), and the next writeBack
// sends it again, the same, before what the local breaker learned since
// (writeResend): each write-back carries its number, and Redis records
// the last one of the breaker it applied, so that it applies each at most
// once, and the failures the local breaker counted while Redis was away
// reach the fleet whether the lost answer's script ran or not.
func (b *sharedBreaker) writeBack() bool {
	if !b.writeResend() {
		return false
	}
	b.localMu.Lock()
	l, learned, okAt, fails, run := b.local, b.learned, b.okAt, b.fails, b.run
	older, olderFirst, olderLast := b.older, b.olderFirst, b.olderLast
	if l == nil || (learned == 0 && okAt == 0 && len(fails) == 0) {
		b.mu.Lock()
		b.setUnwritten(false)
		b.mu.Unlock()
		b.localMu.Unlock()
		return true
	}
	b.clearFails() // sent once (put back below when Redis did not run the script)
	b.sending = true
	b.wbSeq++
	b.mu.Lock()
	t := mono()
	now := b.clockNow + t - b.clockMono
	b.mu.Unlock()
	snap := l.Snapshot(now)
	w := &learnedWrite{seq: b.wbSeq, first: t, st: snap.State, cooldown: snap.Cooldown, waitEnd: t + snap.Wait,
		changed: learned, okAt: okAt, fails: fails, older: older, olderFirst: olderFirst, olderLast: olderLast}
	b.localMu.Unlock()
	b.s.calls.Add(1)
	res, err := b.s.call(breakerLearnedScript, b.keys, b.learnedArgs(w, t))
	answered := b.learnedAnswer(now, t, res, err)
	b.localMu.Lock()
	defer b.localMu.Unlock()
	b.sending = false
	if !answered {
		if notRun(err) {
			if b.run == run {
				b.putBackFails(fails, older, olderFirst, olderLast)
			}
			return false // the change and the success stay for the next try
		}
		b.resend = w // Redis may have run it: sent again, the same (writeResend)
	}
	if b.learned == learned {
		b.learned = 0
	}
	if b.okAt == okAt {
		b.okAt = 0
	}
	if b.resend == nil && b.learned == 0 && b.okAt == 0 && len(b.fails) == 0 {
		b.mu.Lock()
		b.setUnwritten(false) // else what came meanwhile goes at the next heartbeat (pending)
		b.mu.Unlock()
	}
	return answered
}

// writeResend sends again the write-back whose answer was lost (resend),
// if one is owed: the same events, their ages counted from this send, so
// that Redis, which applies it only when it did not apply it before (its
// number tells), places them where the first send would have. Of its
// failures, those a success Redis ran since ended (ended) are not sent
// again, as putBackFails does not put them back. A write-back first sent
// longer ago than the keys' TTL less the operation timeout is dropped:
// Redis may have forgotten its record of the write-backs it applied (the
// breaker's key, or the record alone, past that TTL: breakerLearnedScript),
// and what it carried is that old. It reports false when Redis did not
// answer, the write-back then kept for the next try.
func (b *sharedBreaker) writeResend() bool {
	b.localMu.Lock()
	w := b.resend
	if w == nil {
		b.localMu.Unlock()
		return true
	}
	t := mono()
	if !b.s.resendable(w.first, t) {
		b.resend = nil // writeBack's next steps let go of the breaker when nothing else is unwritten
		b.localMu.Unlock()
		return true
	}
	w.fails = since(w.fails, b.ended)
	if w.older > 0 && w.olderFirst < b.ended {
		w.older = 0
	}
	b.sending = true
	b.mu.Lock()
	now := b.clockNow + t - b.clockMono
	b.mu.Unlock()
	b.localMu.Unlock()
	b.s.calls.Add(1)
	res, err := b.s.call(breakerLearnedScript, b.keys, b.learnedArgs(w, t))
	answered := b.learnedAnswer(now, t, res, err)
	b.localMu.Lock()
	b.sending = false
	if answered {
		b.resend = nil
	}
	b.localMu.Unlock()
	return answered
}

// learnedArgs returns the arguments of breakerLearnedScript for the
// write-back w sent at t (mono): each time as how long before t it was.
// Redis reads each age from when its script runs, which is later than t
// by the time the write-back takes to reach it: up to the operation
// timeout. Every time is read that much late at most. The success is sent
// as of the earliest it may have come: counted from the latest the script
// may run (the timeout after t), so that it ends no failure it may have
// come before (a local success read late ended the failures that followed
// the fleet's last reset, when it came shortly before it). The wait is
// what is left of it at t.
func (b *sharedBreaker) learnedArgs(w *learnedWrite, t time.Duration) []any {
	ago := func(at time.Duration) int64 {
		if at == 0 {
			return -1
		}
		return (t - at).Microseconds()
	}
	okAge := ago(w.okAt)
	if okAge >= 0 {
		okAge += b.s.cfg.timeout.Microseconds()
	}
	args := append(b.args[:len(b.args):len(b.args)], w.st.String(), w.cooldown.Microseconds(),
		max(0, w.waitEnd-t).Microseconds(), ago(w.changed), okAge, w.older, ago(w.olderFirst), ago(w.olderLast),
		b.wbField, w.seq)
	for _, f := range w.fails {
		args = append(args, ago(f))
	}
	return args
}

// learnedAnswer takes Redis's answer to a write-back sent at t (mono), at
// now on the callers' clock: it reports false when Redis did not answer
// (an outage, which it counts unless the store is closing); a refusal is
// reported (refused), as sending it again would be refused again, and an
// answer becomes the view.
func (b *sharedBreaker) learnedAnswer(now, t time.Duration, res []any, err error) bool {
	switch {
	case err != nil && unavailable(err):
		if !b.s.closed() { // else Close's: no outage reported (see Store.run)
			b.s.errors.Add(1)
		}
		return false
	case err != nil && !b.s.closed():
		b.s.refused(b.keys[0], err) // no use sending it again
	case err != nil: // refused at Close: not sent again either
	case len(res) >= 5:
		b.update(now, reading{st: res[0], failures: res[1], cooldown: res[2], wait: res[3], at: res[4], why: elem(res, 5), ok: elem(res, 6), sent: t})
	}
	return true
}

// Allow asks the view of the fleet's breaker, or Redis when the view
// cannot answer alone (see the cases below). While Redis does not answer,
// and once the store is closed, the local breaker decides: after Close a
// closed view, however fresh, does not let a call through that the local
// breaker, which counts the failures after Close, refuses.
func (b *sharedBreaker) Allow(now time.Duration) (time.Duration, bool, bool) {
	if b.s.degraded() || b.s.shut.Load() {
		return b.localAllow(now)
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
		return b.localAllow(now)
	}
	st, wait, _ := b.update(now, reading{st: res[2], wait: res[1], failures: res[3], at: elem(res, 4), cooldown: elem(res, 5), why: elem(res, 6), ok: elem(res, 7), sent: sent})
	if toInt(res[0]) != 1 && st == state.Closed {
		// A refusal of a closed breaker (or of one whose reading its
		// settings could not give): no script answers so. The local
		// breaker decides, as when Redis refuses the operation.
		b.s.unreadable(b.keys[0], res)
		return b.localAllow(now)
	}
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
	st, wait, failures = b.update(now, reading{st: res[0], wait: res[3], failures: res[1], cooldown: res[2], at: elem(res, 4), why: elem(res, 5), ok: elem(res, 6), sent: sent})
	return res, st, wait, failures, true
}

// AllowProbe lets the fleet's probe send its retries while the breaker is
// half-open or closed.
func (b *sharedBreaker) AllowProbe(now time.Duration) (time.Duration, bool) {
	if b.s.degraded() {
		return b.localAllowProbe(now)
	}
	_, st, wait, _, ok := b.snapshot(now)
	if !ok {
		return b.localAllowProbe(now)
	}
	if st == state.Open {
		return wait, false
	}
	return 0, true
}

// Success resets the fleet's count of consecutive failures. It is sent to
// Redis when the view shows failures or a breaker not closed, or the
// local breaker holds what was not written back (failures Redis refused
// to count, which the success ends: succeeded), and
// otherwise (the view pristine: no failure as far as this process knows)
// when no success was sent in the current period of WithBreakerStaleness
// (the store's ticker counts them; no clock is read on this path):
// successes cost no round trip each, and yet reset the failures other
// processes counted since the view was read. The bound: while this
// process keeps succeeding, the fleet hears of a success of it at least
// once per period (at once when its view, which every lease request
// refreshes, shows a failure), so that other processes' failures count as
// consecutive across its successes only within about one period. Redis
// records every success sent as the scope's last (LastSuccess), whether
// or not it found failures to reset, so that it ends the other processes'
// streaks of failed answers too.
func (b *sharedBreaker) Success() bool {
	if b.s.degraded() {
		return b.localSuccess()
	}
	tick := b.s.staleTick.Load()
	b.mu.Lock()
	quiet := b.state == state.Closed && b.failures == 0 && !b.unwritten && b.told == tick && b.s.cfg.breakerStale > 0
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
		return b.localSuccess()
	}
	st, known := breakerState(res[1])
	cooldown, cok := b.readCooldown(elem(res, 3))
	b.mu.Lock()
	if r := (reading{at: elem(res, 2), sent: sent}); b.newer(r) {
		b.readAt, b.readBack = toInt(r.at), mono()
		b.view++
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
	b.succeeded(sent)
	return toInt(res[0]) == 1
}

// succeeded notes that Redis ran a success sent at t (mono): it ended the
// run of the failures the local breaker alone counted before t (fails),
// which the write-back no longer sends (Redis would merge them with the
// failures after the scope's last success only) and which no local
// breaker counts again (fallback), and a success the local breaker noted
// before it, which Redis has now (okAt). A local breaker that holds
// nothing else unwritten is made again from the view at its next use.
func (b *sharedBreaker) succeeded(t time.Duration) {
	b.localMu.Lock()
	defer b.localMu.Unlock()
	if b.local == nil || (len(b.fails) == 0 && b.okAt == 0 && !b.sending && b.resend == nil) {
		return
	}
	b.ended = max(b.ended, t) // of those a write-back on its way sends, only the later ones are put back
	b.fails = since(b.fails, t)
	if b.older > 0 && b.olderFirst < t {
		b.older, b.olderFirst, b.olderLast = 0, 0, 0 // those of them after t not known: dropped
	}
	if b.okAt < t {
		b.okAt = 0
	}
	if b.learned != 0 || b.okAt != 0 || b.sending || b.resend != nil {
		return
	}
	b.local = nil // its count holds the failures before t
	if len(b.fails) == 0 {
		b.mu.Lock()
		b.setUnwritten(false)
		b.mu.Unlock()
	}
}

func (b *sharedBreaker) Failure(now time.Duration) bool { return b.FailureFor(now, "") }

// maxFailTimes bounds the times of the failures the local breaker alone
// counted (fails) to the latest, as the fleet's breaker keeps the latest
// times of its failures (ft): with a high threshold and a long outage, one
// time per failure, up to the threshold, grew without bound, and the
// write-back sent each as an argument.
const maxFailTimes = 64

// addFail notes a failure at f (mono) the local breaker alone counted,
// keeping the latest maxFailTimes times: those before are counted
// (older), with the times of the first and the last of them. localMu
// must be held.
func (b *sharedBreaker) addFail(f time.Duration) {
	b.fails = append(b.fails, f)
	b.trimFails()
}

// trimFails moves the failures before the latest maxFailTimes into
// older. localMu must be held.
func (b *sharedBreaker) trimFails() {
	n := len(b.fails) - maxFailTimes
	if n <= 0 {
		return
	}
	if b.older == 0 {
		b.olderFirst = b.fails[0]
	}
	b.olderLast = max(b.olderLast, b.fails[n-1])
	b.older += n
	b.fails = append(b.fails[:0:0], b.fails[n:]...)
}

// clearFails forgets the failures the local breaker alone counted.
// localMu must be held.
func (b *sharedBreaker) clearFails() {
	b.fails, b.older, b.olderFirst, b.olderLast = nil, 0, 0, 0
}

// putBackFails puts back the failures a write-back Redis did not run
// carried (fails, and older before them, from first to last), before
// those counted since, but for those a success Redis ran ended (ended):
// of older, all of them when the first came before it (those after it
// are not known). localMu must be held.
func (b *sharedBreaker) putBackFails(fails []time.Duration, older int, first, last time.Duration) {
	kept := since(fails, b.ended)
	if older > 0 && first < b.ended {
		older = 0
	}
	if older == 0 && len(kept) > 0 {
		first = kept[0]
	}
	if b.older > 0 { // those since fill the times kept: the ones put back are all before them
		if n := older + len(kept); n > 0 {
			b.older += n
			b.olderFirst = first
		}
		return
	}
	if older > 0 {
		b.older, b.olderFirst, b.olderLast = older, first, last
	}
	b.fails = append(kept, b.fails...)
	b.trimFails()
}

// since returns the times of fails (mono) at or after t, in order.
func since(fails []time.Duration, t time.Duration) []time.Duration {
	var kept []time.Duration
	for _, f := range fails {
		if f >= t {
			kept = append(kept, f)
		}
	}
	return kept
}

// FailureFor is Failure from a call that says why a failure that opens the
// breaker opened it ("throttling", "errors", "throttled for good" or
// "down"; "" when it does not say): Redis keeps it with the breaker, so
// that every process reads it (OpenReason), as the one that opened it.
func (b *sharedBreaker) FailureFor(now time.Duration, why string) bool {
	if b.s.degraded() {
		return b.localFailure(now, true)
	}
	sent := mono()
	res, ok, unsent := b.s.runOnce(breakerFailureScript, b.keys, append(b.args[:len(b.args):len(b.args)], why)...)
	if !ok || len(res) < 4 {
		return b.localFailure(now, unsent)
	}
	b.update(now, reading{st: res[1], wait: res[3], failures: res[2], at: elem(res, 4), cooldown: elem(res, 5), why: elem(res, 6), ok: elem(res, 7), sent: sent})
	return toInt(res[0]) == 1
}

// LastSuccess returns when (on the callers' clock) the last success of the
// scope that Redis recorded came, whichever process's: the fleet's probe
// that closed the breaker, or a success Success sent (one that reset
// failures, or found none: a process whose view shows none sends the
// first of each WithBreakerStaleness period); ok is
// false when the view knows of none. It reads the view: no Redis
// operation. The governor ends a streak of failures this process saw
// before it (a scope it would otherwise find dead), as a success of its
// own would.
func (b *sharedBreaker) LastSuccess() (at time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastOK, b.okKnown
}

// OpenReason returns why the breaker last opened, as the process that
// opened it said, as far as this process's view of it knows: "" when no
// process said (it opened while Redis did not answer, or by a process of
// an earlier version), or the view never saw it open.
func (b *sharedBreaker) OpenReason() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.why
}

func (b *sharedBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	res, st, wait, failures, ok := b.snapshot(now)
	if !ok {
		return b.localSnapshot(now)
	}
	cooldown, cok := b.readCooldown(res[2])
	if !cok {
		cooldown = b.spec.Cooldown
	}
	return state.BreakerSnapshot{State: st, Failures: failures, Cooldown: cooldown, Wait: wait}
}

// Stale reports whether the view is past WithBreakerStaleness at now, so
// that the next Allow of a closed breaker asks Redis instead of trusting
// it (the governor's Delay then reads the breaker in Redis, which another
// process may have opened, rather than Pristine). While Redis does not
// answer, the local breaker, which Pristine accounts for, decides: never.
func (b *sharedBreaker) Stale(now time.Duration) bool {
	if b.s.degraded() {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return now-b.fetched >= b.s.cfg.breakerStale
}

// Pristine reports whether the breaker is closed with no failures as far
// as this process knows, and its local breaker holds nothing that was not
// written back to Redis yet (so that the governor does not drop a scope
// whose breaker learned something while Redis did not answer). Once the
// store is closed, nothing is written back any more, and the local
// breaker of one that learned something decides the scope's calls alone:
// the breaker is Pristine when that local breaker is (closed with no
// failures), so that the governor drops its scope as it drops one of an
// in-process breaker, not never.
func (b *sharedBreaker) Pristine() bool {
	b.mu.Lock()
	pristine, unwritten := b.state == state.Closed && b.failures == 0, b.unwritten
	b.mu.Unlock()
	if !unwritten {
		return pristine
	}
	if !b.s.closed() {
		return false
	}
	b.localMu.Lock()
	l := b.local
	b.localMu.Unlock()
	return l != nil && l.Pristine()
}

var _ state.Breaker = (*sharedBreaker)(nil)
