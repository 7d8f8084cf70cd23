package fleet

import (
	"context"
	"math"
	"time"
)

// How a process takes the tokens of a shared bucket. A caller takes a
// token of the lease the process borrowed, without a round trip, when the
// lease has one and no caller is queued before it. Otherwise it queues for
// a lease request: a dispatcher sends them one at a time, each asking for
// a token for every caller queued when it is sent (Redis grants them all,
// however far ahead) and for the lease beyond them, so that a caller waits
// for at most two answers: the request in flight when it came, whose
// spare tokens it may take, and the one sent after it. A caller waits on
// its own context (ReserveContext). The wait a caller is given counts from
// the time Reserve returns, so that sleeping it goes at the token's time
// however long the caller waited for Redis.
//
// The tokens Redis says are usable now (the bucket's stored balance, its
// burst) are usable at once, whether a caller takes them from an answer or
// from the lease. The others are usable at the times Redis gives them,
// counted from its answer, and never sooner than the interval after the
// process's previous one of them (spaced), held back so by at most the
// round trip of the answer that one came with: the tokens of one answer
// keep their spacing from those of the last, which may have come back
// later, and follow Redis's queue when it moved earlier (tokens another
// process gave back).
// The lease's times are read on the process's monotonic clock (mono), not
// on the callers' clock readings: a caller may pass a reading taken a
// while before (the governor's, before it asked the breaker).
//
// At a switch between the shared and the local limits, the callers
// already queued (holding tokens not yet usable) keep their tokens and
// their times, and the new bucket is charged for them: they take the head
// of its queue instead of going on top of its balance.

// epoch is the origin of mono.
var epoch = time.Now()

// mono reads the process's monotonic clock.
func mono() time.Duration { return time.Since(epoch) }

// waiter is a caller queued for a lease request's answer.
type waiter struct {
	now   time.Duration // the caller's clock reading when it asked
	at    time.Duration // mono at that reading
	ready chan struct{} // closed when the caller is served
	by    time.Duration // mono: the caller takes no token usable later than this, but one usable at once (ReserveBy)
	// Set under the bucket's mu, before ready is closed:
	usable  time.Duration // mono when the token is usable
	local   bool          // Redis did not answer: the caller takes a token of the local limits
	done    bool          // served
	gone    bool          // the caller's context ended first: it takes nothing
	refused bool          // its token would be usable after by: it takes nothing, usable says when it would have been
}

// tokenLog records the times (mono) of the tokens the process handed out
// from a bucket, those of its last capacity window (a burst's worth of
// time) and those still to come, and whether Redis knows of each (it
// handed it out, or was charged for it). A switch between the shared and
// the local limits charges the new bucket, so that it starts with what the
// process has left, not full, however often the switches come: always
// with the tokens to come (the callers queued, who keep their tokens and
// their times); a new local bucket, when the process took tokens in the
// last window, with its whole burst (the shared bucket's balance is not
// known, and a busy process has drained its share of it); the shared
// bucket, back, with the tokens the local limits gave in the last window
// (up to a burst), which it refilled while it did not answer.
//
// A token Redis knows of and that is usable at once (a lease hit's, the
// common case) is not logged: only the time of the latest is kept, which
// is all the charges read of such tokens.
type tokenLog struct {
	t      []token
	head   int
	window time.Duration
	last   time.Duration // the latest token known to Redis and not logged
}

type token struct {
	at    time.Duration
	redis bool // Redis knows of it
}

// maxLogged bounds the log: a burst larger than this is charged in part.
const maxLogged = 1024

func (l *tokenLog) add(at, now time.Duration, redis bool) {
	if redis && at <= now {
		l.last = max(l.last, at)
		return
	}
	l.prune(now)
	if len(l.t)-l.head >= maxLogged {
		l.head++
	}
	l.t = append(l.t, token{at, redis})
}

func (l *tokenLog) prune(now time.Duration) {
	for l.head < len(l.t) && l.t[l.head].at <= now-l.window {
		l.head++
	}
	switch {
	case l.head == len(l.t):
		l.t, l.head = l.t[:0], 0
	case l.head >= 64 && 2*l.head >= len(l.t):
		l.t, l.head = l.t[:copy(l.t, l.t[l.head:])], 0
	}
}

// charge returns the tokens to charge a new bucket of capacity burst with
// at now: the local limits (toRedis false), which know of none, or the
// shared bucket, which knows of those Redis handed out or was charged for.
func (l *tokenLog) charge(now time.Duration, toRedis bool, burst float64) int {
	l.prune(now)
	past, future := 0, 0
	for _, tk := range l.t[l.head:] {
		switch {
		case toRedis && tk.redis:
		case tk.at > now:
			future++
		default:
			past++
		}
	}
	if !toRedis && (past > 0 || l.last > now-l.window) {
		past = int(math.Ceil(burst))
	}
	return min(past, int(math.Ceil(burst))) + future
}

// known marks every token logged as known to Redis, which was charged for
// them.
func (l *tokenLog) known() {
	for i := l.head; i < len(l.t); i++ {
		l.t[i].redis = true
	}
}

// latest returns the index of the latest token logged, -1 when none is.
func (l *tokenLog) latest() int {
	last := -1
	for i := l.head; i < len(l.t); i++ {
		if last < 0 || l.t[i].at > l.t[last].at {
			last = i
		}
	}
	return last
}

// lastLocal reports whether the latest token logged is one Redis does not
// know of: the local limits gave it (Redis refused the request, or did not
// answer), and Redis was not charged for it since.
func (l *tokenLog) lastLocal() bool {
	last := l.latest()
	return last >= 0 && !l.t[last].redis
}

// dropLast forgets the latest token: the one a caller whose deadline it
// would pass gives back is at the end of the queue.
func (l *tokenLog) dropLast() {
	if last := l.latest(); last >= 0 {
		copy(l.t[last:], l.t[last+1:])
		l.t = l.t[:len(l.t)-1]
	}
}

// leaseOpen reports whether the lease has a token to hand out at t (mono).
// mu must be held.
func (b *sharedBucket) leaseOpen(t time.Duration) bool { return b.lease > 0 && t < b.leaseEnd }

// leaseReady reports whether the lease has a token usable at t (mono).
// mu must be held.
func (b *sharedBucket) leaseReady(t time.Duration) bool {
	return b.leaseOpen(t) && (b.leaseNow > 0 || b.leaseNext <= t)
}

// takeLease empties the lease and returns how many tokens it held. mu must
// be held.
func (b *sharedBucket) takeLease() int {
	n := b.lease
	b.lease, b.leaseNow = 0, 0
	return n
}

// peek returns the wait of the lease's next token at t (mono), as hit
// would give it, without taking it. mu must be held, and leaseOpen(t)
// true.
func (b *sharedBucket) peek(t time.Duration) time.Duration {
	if b.leaseNow > 0 {
		return 0
	}
	return max(0, b.leaseNext-t)
}

// hit takes a token of the lease at t (mono) and returns its wait: none
// for a token of the stored balance, and for the others their time, each
// at least the interval after the last. mu must be held, and leaseOpen(t)
// true.
func (b *sharedBucket) hit(t time.Duration) time.Duration {
	b.lease--
	if b.leaseNow > 0 {
		b.leaseNow--
		b.log.add(t, t, true)
		return 0
	}
	wait := max(0, b.leaseNext-t)
	b.leaseNext = max(b.leaseNext, t) + b.leaseStep
	b.spaced = max(b.spaced, b.leaseNext)
	b.log.add(t+wait, t, true)
	return wait
}

// LeaseWait reports the wait of the token a caller at now would take from
// the process's lease, as reserve gives it, without taking it: ok is false
// when the caller would take none of it (no lease open, callers queued for
// a lease request, or Redis does not answer), and the bucket's balance in
// Redis, which the lease's tokens were taken from, says when it can go.
// The governor's Delay asks it.
func (b *sharedBucket) LeaseWait(now time.Duration) (time.Duration, bool) {
	if b.s.degraded() {
		return 0, false
	}
	t := mono()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 || !b.leaseOpen(t) {
		return 0, false
	}
	return b.peek(t), true
}

// use records a use at now (the caller's clock) and t (mono). mu must be
// held.
func (b *sharedBucket) use(now, t time.Duration) {
	b.lastUse, b.lastUseMono = now, t
}

// Reserve takes a token: from the lease, from a lease request's answer,
// or, when Redis does not answer, from the local limits, and returns the
// wait from its return until the token is usable. It waits for Redis at
// most the operation timeout twice (see ReserveContext).
func (b *sharedBucket) Reserve(now time.Duration) time.Duration {
	w, _, _ := b.reserve(context.Background(), now, noLimit, false)
	return w
}

// ReserveContext is Reserve bounded by ctx: a caller queued for a lease
// request's answer stops waiting when ctx ends, takes nothing and returns
// ctx's error.
func (b *sharedBucket) ReserveContext(ctx context.Context, now time.Duration) (time.Duration, error) {
	w, _, err := b.reserve(ctx, now, noLimit, false)
	return w, err
}

// ReserveBy is ReserveContext for a caller that will not use a token
// usable after latest (its deadline, or its max wait; on its clock, as
// now): it takes one only if it is usable at once or by then, and
// otherwise takes nothing and returns how long it would have waited and
// false. A token of the lease is looked at without taking it, so that such
// a refusal costs no Redis operation; one of an answer the caller waited
// for stays in the lease for the callers after it. Taken and given back
// (Cancel), it would have cost an operation to give back, and moved the
// fleet's queue earlier under the callers queued after it.
func (b *sharedBucket) ReserveBy(ctx context.Context, now, latest time.Duration) (time.Duration, bool, error) {
	return b.reserve(ctx, now, latest, false)
}

// noLimit is a latest no token passes.
const noLimit = time.Duration(math.MaxInt64)

// reserve is ReserveBy; read tells that the caller has read the bucket's
// pause (readPause) already.
func (b *sharedBucket) reserve(ctx context.Context, now, latest time.Duration, read bool) (time.Duration, bool, error) {
	t := mono()
	b.mu.Lock()
	b.use(now, t)
	if b.s.degraded() {
		// Local limits: the lease's tokens are the shared bucket's, whose
		// queued callers the local bucket was charged for; the lease goes.
		b.takeLease()
		b.mu.Unlock()
		w, ok := b.reserveLocal(now, latest)
		return w, ok, nil
	}
	if !read && len(b.queue) == 0 && b.leaseOpen(t) && b.pauseStale(t) {
		// The lease was borrowed a while ago: another process may have
		// paused the bucket since (see PausedFor), which drops it.
		b.mu.Unlock()
		if err := b.readPause(ctx, t); err != nil {
			return 0, false, err
		}
		return b.reserve(ctx, now+mono()-t, latest, true)
	}
	by := noLimit // mono
	if d := latest - now; latest != noLimit && d < noLimit-t {
		by = t + d
	}
	if len(b.queue) == 0 && b.leaseOpen(t) {
		if wait := b.peek(t); wait > 0 && t+wait > by {
			b.mu.Unlock()
			return wait, false, nil // nothing taken
		}
		wait := b.hit(t)
		b.mu.Unlock()
		b.s.hits.Add(1)
		return wait, true, nil
	}
	b.register()
	w := &waiter{now: now, at: t, by: by, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	start := !b.sending
	b.sending = true
	b.mu.Unlock()
	if start {
		if ctx.Done() == nil {
			b.dispatch(w) // nothing to stop it: this caller sends its own request
		} else {
			go b.dispatch(nil)
		}
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
		b.mu.Lock()
		gone := !w.done
		w.gone = gone
		b.mu.Unlock()
		if gone {
			return 0, false, ctx.Err()
		}
	}
	if w.local {
		// The caller's clock has run on while it waited.
		wait, ok := b.reserveLocal(w.now+mono()-w.at, latest)
		return wait, ok, nil
	}
	return max(0, w.usable-mono()), !w.refused, nil
}

// reserveLocal takes a token of the local limits at now, if it is usable
// by latest (see ReserveBy).
func (b *sharedBucket) reserveLocal(now, latest time.Duration) (time.Duration, bool) {
	local := b.fallback(now)
	var wait time.Duration
	if lb, ok := local.(interface {
		ReserveBy(now, latest time.Duration) (time.Duration, bool)
	}); ok {
		if wait, ok = lb.ReserveBy(now, latest); !ok {
			return wait, false
		}
	} else {
		wait = local.Reserve(now)
	}
	t := mono()
	b.mu.Lock()
	b.onLocal = true
	b.log.add(t+wait, t, false)
	b.mu.Unlock()
	return wait, true
}

// serve ends w's wait. mu must be held.
func (w *waiter) serve() {
	w.done = true
	close(w.ready)
}

// compact removes the callers served or gone from the queue. mu must be
// held.
func (b *sharedBucket) compact() {
	q := b.queue[:0]
	for _, w := range b.queue {
		if !w.done && !w.gone {
			q = append(q, w)
		}
	}
	clear(b.queue[len(q):])
	b.queue = q
}

// serveFromLease gives the queued callers, in order, the lease's tokens
// while it has some; a caller whose limit the next token would pass
// (ReserveBy) is refused, and the token left for the next. mu must be
// held.
func (b *sharedBucket) serveFromLease() {
	b.compact()
	n, refused := 0, 0
	for _, w := range b.queue {
		t := mono()
		if !b.leaseOpen(t) {
			break
		}
		if p := b.peek(t); p > 0 && t+p > w.by {
			w.usable, w.refused = t+p, true
			w.serve()
			refused++
			continue
		}
		w.usable = t + b.hit(t)
		w.serve()
		n++
	}
	b.s.misses.Add(int64(n))
	if n+refused > 0 {
		b.compact()
	}
}

// dispatch sends the queue's lease requests until no caller is queued.
// Each takes along the success counts not sent yet, kept for Redis when
// it surely did not run the request as it went away (keepUnsent).
// With self, the caller that started it sends the first request itself,
// and leaves the rest to a goroutine once it is served.
func (b *sharedBucket) dispatch(self *waiter) {
	for {
		b.mu.Lock()
		b.serveFromLease()
		if len(b.queue) == 0 || self != nil && self.done {
			more := len(b.queue) > 0
			b.sending = more
			give := !more && b.giveBack+b.unused > 0 && !b.giving // those that came after the last request
			b.giving = b.giving || give
			b.settle()
			now := b.lastUse
			b.mu.Unlock()
			if more {
				go b.dispatch(nil)
			}
			if give {
				go b.sendGiveBack(now)
			}
			return
		}
		batch := append([]*waiter(nil), b.queue...)
		cancels := b.giveBack
		give := cancels + b.unused
		b.giveBack, b.unused = 0, 0
		give += b.takeLease() // expired: its tokens are the fleet's again
		charge := 0
		if b.onLocal {
			charge, b.onLocal = b.log.charge(mono(), true, b.capacity()), false
		}
		kept := append([]served(nil), b.served...)
		pairs := b.takeServed()
		size := b.leaseSize()
		if b.dropped {
			size = 0 // see Drop
		}
		want := max(size, len(batch))
		b.mu.Unlock()

		sent := mono()
		res, ok, unsent := b.s.runOnce(takeScript, b.keys, b.argsWith(append([]any{want, give, "0", b.s.cfg.leaseWindow.Microseconds(), len(batch), charge, b.s.longestWait.Load()}, pairs...)...)...)
		answered := mono()
		if !ok {
			b.keepUnsent(kept, unsent)
		}
		if ok && toInt(res[0]) < int64(len(batch)) {
			// Fewer tokens than callers: the script grants one for each
			// caller the request asks for, however far ahead. Asked again,
			// such an answer would keep them waiting without end.
			b.s.unreadable(b.keys[0], res)
			ok = false
		}
		b.mu.Lock()
		if !ok {
			b.onLocal = b.onLocal || charge > 0 // still owed to the shared bucket
			for _, w := range batch {
				if !w.done && !w.gone {
					w.local = true
					w.serve()
				}
			}
			b.mu.Unlock()
			// Cancel's tokens go back to the local limits (cancelLocal); the
			// lease's and the unused ones were Redis's, which the local
			// limits never had: they are dropped.
			if cancels > 0 {
				b.cancelLocal(batch[0].now+answered-batch[0].at, cancels)
			}
			continue
		}
		b.learnPause(sent, answered, b.s.micros(elem(res, 11)))
		if charge > 0 {
			b.log.known()
		}
		for range cancels { // Redis took them back
			b.log.dropLast()
		}
		// The first usable of the k tokens are the stored balance's: usable
		// at once. Redis's "now" was during the round trip: the others'
		// times count from its answer, not from before the request, and
		// never before the last such token's and the interval.
		k := int(min(max(0, toInt(res[0])), int64(want)))
		step := b.s.micros(res[2])
		b.setRate(res[3])
		usable := int(min(max(0, toInt(res[7])), int64(k)))
		// Token usable's: held back by spaced by at most the lag it was
		// counted with (see spaced).
		next := answered + queueMicros(res[8])
		next = max(next, min(b.spaced, next+b.lag))
		at := func(i int) time.Duration {
			if i < usable {
				return answered
			}
			return next + time.Duration(i-usable)*step
		}
		i := 0
		for _, w := range batch {
			if w.done || w.gone || i == k {
				continue
			}
			if i >= usable && at(i) > w.by {
				// Past its limit (ReserveBy): it takes nothing, and the
				// token is the next caller's, or the lease's.
				w.usable, w.refused = at(i), true
				w.serve()
				continue
			}
			w.usable = at(i)
			b.log.add(w.usable, answered, true)
			w.serve()
			i++
		}
		b.s.misses.Add(int64(i))
		if i > usable {
			b.spaced = max(b.spaced, at(i))
		}
		if k > usable { // the next tokens are this answer's (or follow its lease's)
			b.lag = answered - sent
		}
		b.leaseStep = step
		if b.dropped {
			size = 0 // dropped while the request was in flight: see Drop
		}
		if extra := k - i - size; extra > 0 {
			// The tokens of the callers gone (their contexts ended while
			// they waited for this answer) or refused (past their limit),
			// past a lease's worth, go back (the answer's last: the queue's
			// end in Redis, but for what another process reserved since),
			// so that a process whose callers give up holds no more of the
			// fleet's tokens than its lease.
			k -= extra
			b.unused += extra
		}
		if spare := k - i; spare > 0 {
			b.lease = spare
			b.leaseNow = min(spare, max(0, usable-i))
			b.leaseNext = at(max(i, usable))
			b.leaseEnd = max(answered, at(k)) + b.s.cfg.leaseWindow
		}
		now := batch[0].now + answered - batch[0].at // the breaker's cache is on the callers' clock
		b.mu.Unlock()
		b.s.refreshBreaker(b.keys[1], now, reading{st: res[4], wait: res[5], failures: res[6], at: elem(res, 9), cooldown: elem(res, 10), why: elem(res, 12), ok: elem(res, 13), sent: sent})
	}
}

// TryReserve takes a token only if it is usable at once: from the lease,
// or with a request of its own, which queues behind no other.
func (b *sharedBucket) TryReserve(now time.Duration) bool { return b.tryReserve(now, false) }

// tryReserve is TryReserve; read tells that the caller has read the
// bucket's pause (readPause) already.
func (b *sharedBucket) tryReserve(now time.Duration, read bool) bool {
	t := mono()
	b.mu.Lock()
	b.use(now, t)
	if b.s.degraded() {
		b.takeLease() // see reserve
		b.mu.Unlock()
		return b.tryLocal(now)
	}
	if !read && len(b.queue) == 0 && b.leaseReady(t) && b.pauseStale(t) {
		b.mu.Unlock() // see reserve
		b.readPause(context.Background(), t)
		return b.tryReserve(now+mono()-t, true)
	}
	if len(b.queue) == 0 && b.leaseReady(t) {
		b.hit(t)
		b.mu.Unlock()
		b.s.hits.Add(1)
		return true
	}
	give := 0
	if !b.sending { // not usable now: the fleet's again
		give = b.takeLease()
	}
	charge := 0
	if b.onLocal {
		charge, b.onLocal = b.log.charge(t, true, b.capacity()), false
	}
	kept := append([]served(nil), b.served...)
	pairs := b.takeServed()
	b.register()
	b.mu.Unlock()
	sent := mono()
	res, ok, unsent := b.s.runOnce(takeScript, b.keys, b.argsWith(append([]any{1, give, "1", b.s.cfg.leaseWindow.Microseconds(), 1, charge, b.s.longestWait.Load()}, pairs...)...)...)
	if !ok {
		b.keepUnsent(kept, unsent)
		return b.tryLocal(now) // which owes the charge again
	}
	b.s.misses.Add(1)
	b.setRate(res[3])
	b.learnPause(sent, mono(), b.s.micros(elem(res, 11)))
	b.s.refreshBreaker(b.keys[1], now, reading{st: res[4], wait: res[5], failures: res[6], at: elem(res, 9), cooldown: elem(res, 10), why: elem(res, 12), ok: elem(res, 13), sent: sent})
	granted := toInt(res[0]) >= 1
	t = mono()
	b.mu.Lock()
	if charge > 0 {
		b.log.known()
	}
	if granted {
		b.spaced = max(b.spaced, t+b.s.micros(res[2]))
		b.lag = t - sent
		b.log.add(t, t, true)
	}
	b.mu.Unlock()
	return granted
}

// tryLocal is TryReserve on the local limits.
func (b *sharedBucket) tryLocal(now time.Duration) bool {
	ok := b.fallback(now).TryReserve(now)
	b.mu.Lock()
	b.onLocal = true
	if ok {
		t := mono()
		b.log.add(t, t, false)
	}
	b.mu.Unlock()
	return ok
}
