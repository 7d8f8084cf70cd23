package pool

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cloudg/cloudg/internal/pace"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Progress is where a pool's work stands: its tasks by state, per scope
// and in all, and how long the queued work needs at the scopes' current
// rates, once the tokens their buckets hold are spent. It is a snapshot
// (Pool.Progress makes one), a value that nothing updates: safe to read
// from several goroutines at once; its zero value is an empty pool's.
type Progress struct {
	Queued, Running, Done, Failed int
	// Deferred counts the first calls the governor refused before sending
	// (the scope was busy after all) and whose tasks went back to their
	// queues to run again; one that a stop drops before it runs again is
	// counted in Dropped too. A refusal whose task returns after the pool
	// stopped is not: the task does not go back to its queue, and is
	// counted in Dropped alone, as a task the stop drops from its queue.
	Deferred int
	// Dropped counts the tasks never run: the pool stopped, or their own
	// contexts ended while they were queued.
	Dropped int
	// ETA is the longest of the scopes' ETAs: when the queued work, and
	// the running tasks of a paused scope, should be done if every scope
	// keeps its current rate.
	ETA    time.Duration
	Scopes []ScopeProgress // sorted by scope
}

// ScopeProgress is one scope's share of a Progress: a value of the
// snapshot, which nothing updates, safe to read from several goroutines
// at once. Its zero value is the zero scope's with no task, and a State
// of "", which is none of the states (Progress gives every scope one).
type ScopeProgress struct {
	Scope                                   resilience.Scope
	Queued, Running, Done, Failed, Deferred int
	Dropped                                 int        // its tasks never run: the pool stopped, or their contexts ended first
	State                                   ScopeState // whether its next task can go now, and if not, why
	// Wait is how long until the scope may go, when it is waiting (for a
	// half-open breaker's probe, until the probe's lease ends at the
	// latest; for a refusal of a task's first call, until the wait it
	// gave, which the pool holds the queue for even when Delay of the
	// scope cannot see it: a first call to another scope); when it is
	// open, until its breaker lets a probe through.
	Wait time.Duration
	Rate float64 // the scope's rate now, in calls per second
	// Paused is the time left in the longest pause holding the scope (its
	// leaf's, its account's or its provider's: a provider's Retry-After,
	// Guard.Pause, Guard.PauseAccount), read for a scope of a provider the
	// governor paces with tasks queued or running; 0 when none holds it. Every governed call of the scope,
	// a running task's retry or next page as well as a queued task's first
	// call, waits until it ends, or is refused when the pause outlasts its
	// deadline or its max wait (resilience.WithMaxWait).
	Paused time.Duration
	// ETA is when the scope's queued work should be done, one call per task:
	// Wait, plus the queued tasks of every scope of the pool that shares its
	// leaf bucket (the operations of a service paced as one), less the whole
	// tokens the leaf holds now (its burst, spent at once), over the leaf's
	// Rate, or, when its account has a bucket (Azure's by default) and that is
	// longer, the queued tasks of every scope of the account, less the account
	// bucket's whole tokens, over its rate, or, when its provider has a
	// provider-wide bucket (global_max_rps) and that is longer, the queued tasks
	// of every scope of the provider, less that bucket's whole tokens, over its
	// rate. A scope whose breaker is open has an ETA of 0 (its tasks run at once
	// and fail fast, taking no token), unless its provider waits for its
	// breakers' verdicts (breaker_wait): then its first task waits for the
	// breaker (Wait) and the others follow. A scope of a provider that is turned
	// off (or the zero scope) has an ETA of 0, nothing pacing its calls, unless
	// the refusal of a first call to another scope holds its queue: then its
	// Wait. A scope with tasks running has an ETA of at least its Paused, the
	// pause their next calls (a retry, a page) wait for, unless its breaker is
	// open and fails them fast, or the contexts of all its running tasks have
	// deadlines that come before the pause ends: then at least the time to the
	// latest of those deadlines, as a call whose deadline the pause outlasts
	// is refused at once; a running task whose call is in flight may be
	// done sooner. The tokens running tasks' retries (and pages) have taken
	// count through Wait, as the governor's Delay reads them: the leaf's next
	// token comes later. The ETA does not see calls made outside the pool, nor a
	// task's calls after its first (pages, retries) that have not taken a token
	// yet: how many retries a running call will make depends on answers still to
	// come, which no one knows. So a scope that throttles every call (a dead
	// scope whose breaker has not opened yet) keeps about the same ETA while its
	// running tasks' retries take its tokens, at its rate, one after the other,
	// until their attempts run out or its breaker opens and its queue fails
	// fast. Nor does it see how long the calls take, so that a queue the workers
	// (Workers) or its account's concurrency cap (max_concurrency) hold back,
	// its calls slow, is done later than its ETA says. An ETA too long for a
	// time.Duration (a million tasks at a call a day) is the longest one.
	ETA time.Duration
}

// ScopeState is where a scope's queue stands: whether the pool can give
// its next task a worker now, and if not, why. Its values are strings, so
// that a Progress marshals to readable JSON, and safe for concurrent use
// as any string is. Its zero value "" is none of the states below, and
// Progress never reports it.
type ScopeState string

const (
	ScopeIdle    ScopeState = "idle"    // nothing queued
	ScopeReady   ScopeState = "ready"   // its next task can go now
	ScopeWaiting ScopeState = "waiting" // for a rate token, a pause, a half-open breaker's probe, or the end of the wait a refusal of its first call gave
	ScopeOpen    ScopeState = "open"    // its breaker is open: its tasks fail fast when run, or wait for its cooldown (breaker_wait)
	ScopeNoSlot  ScopeState = "slot"    // its account's concurrency cap is full, or its slots free are the first calls' of the account's tasks started (see Pool.Progress)
)

// Progress returns where the pool's work stands now. A queue the pool
// holds back for the first calls of its account's tasks started, still
// to come, which would take every slot the account has free (admitHold,
// 10 ms, at most each), reads ScopeNoSlot, not ScopeReady: its next task
// cannot go now, though the governor shows a slot free. It reads the
// governor, changing nothing: one resilience.Survey of the pool's scopes,
// which reads each scope's buckets once, and each account's bucket and
// provider's provider-wide bucket once for all their scopes (once per
// 100 ms of a Progress that takes longer): with a fleet's store each
// read is a round trip.
func (p *Pool) Progress() Progress {
	if p.scopes == nil {
		panic(notMade("Progress"))
	}
	p.mu.Lock()
	pr := Progress{Queued: p.queued, Running: p.running, Done: p.done, Failed: p.failed, Deferred: p.deferred, Dropped: p.dropped}
	pr.Scopes = make([]ScopeProgress, 0, len(p.scopes))
	// How long the refusal of a queue's head still holds it (see pick):
	// the pool runs none of its tasks until then, whatever Delay says of
	// its scope, which may not see the wait (a first call to another
	// scope, a pause another process of a fleet set).
	holds := make([]time.Duration, 0, len(p.scopes))
	// The queues held back for the first calls of their accounts' tasks
	// started (see Pool.holdBack): the slots Delay shows free are those
	// calls'.
	back := make([]bool, 0, len(p.scopes))
	// How long until the contexts of a queue's running tasks have all
	// reached their deadlines (-1: one has none): a pause that outlasts
	// them holds none of their calls, which are refused at once.
	ends := make([]time.Duration, 0, len(p.scopes))
	now := p.now()
	for _, q := range p.scopes {
		pr.Scopes = append(pr.Scopes, ScopeProgress{Scope: q.scope, Queued: q.n, Running: q.running, Done: q.done, Failed: q.failed, Deferred: q.deferred, Dropped: q.dropped})
		var hold time.Duration
		if q.heldUntil > now && !p.heldByAnOldState(q) {
			hold = q.heldUntil - now
		}
		holds = append(holds, hold)
		back = append(back, q.where == slotted && q.heldBack)
		ends = append(ends, p.runningEnd(q.live))
	}
	p.mu.Unlock()
	// The buckets the scopes share: a leaf (the operations of a service
	// paced as one), an account's bucket, a provider's. Each counts the
	// queued tasks that will take its tokens.
	leaves := map[resilience.Scope]*shared{}
	accounts := map[resilience.Scope]*shared{}
	providers := map[resilience.Scope]*shared{}
	type buckets struct{ leaf, account, provider *shared }
	of := make([]buckets, len(pr.Scopes))
	// One read of each scope's state, and of each account's and
	// provider's bucket for all their scopes: with a fleet's store each
	// read is a round trip.
	survey := p.gov.Survey()
	for i := range pr.Scopes {
		s := &pr.Scopes[i]
		s.State = ScopeIdle
		if s.Scope.Provider == "" {
			if s.Queued > 0 {
				s.State = ScopeReady
				held(s, holds[i])
				s.ETA = s.Wait
			}
			pr.ETA = max(pr.ETA, s.ETA)
			continue
		}
		if s.Queued == 0 || !p.gov.Enabled(s.Scope.Provider) {
			// Its snapshot alone: Delay's answer, which nothing here
			// reads, would read a breaker that is not pristine again.
			snap := survey.Inspect(s.Scope)
			s.Rate = snap.Leaf.Rate
			if s.Running > 0 && p.gov.Enabled(s.Scope.Provider) {
				// Its running tasks' next calls (a retry, a page) wait
				// for the pause holding it, unless its breaker fails them
				// fast.
				s.Paused = pausedLeft(snap)
				if snap.Breaker.State != state.Open || breakerWaits(p.gov, s.Scope.Provider) {
					s.ETA = heldFor(s.Paused, ends[i])
				}
			}
			if s.Queued > 0 {
				// Its calls go straight through, unpaced: once the hold of
				// a refusal of its first call (to a governed scope) ends,
				// if one holds it.
				s.State = ScopeReady
				held(s, holds[i])
				s.ETA = s.Wait
			}
			pr.ETA = max(pr.ETA, s.ETA)
			continue
		}
		// Read as pick reads it (see Pool.circuit): Delay, then the
		// snapshot's breaker, so that a probe's verdict between the two
		// reads shows the scope as its breaker is after it.
		look := survey.Look(s.Scope)
		snap := look.Snapshot
		s.Rate = snap.Leaf.Rate
		s.Paused = pausedLeft(snap)
		d, why := look.Wait, look.Why
		open := errors.Is(why, resilience.ErrCircuitOpen)
		switch {
		case why == nil && back[i]:
			s.State = ScopeNoSlot // as it will be once those calls are made
		case why == nil:
			s.State = ScopeReady
		case open && snap.Breaker.State == state.HalfOpen:
			s.State, s.Wait = ScopeWaiting, d // for the probe's verdict
		case open && (snap.Breaker.State == state.Open || snap.Dead != ""):
			s.State, s.Wait = ScopeOpen, d
			if !breakerWaits(p.gov, s.Scope.Provider) {
				// pick runs its tasks at once, and their calls fail fast,
				// taking no token.
				continue
			}
		case open:
			// Closed since Delay read it, on a scope not found dead: the
			// probe's success, which took the scope's token. pick parks
			// the queue as for a token, which the ETA counts.
			s.State = ScopeWaiting
		case errors.Is(why, resilience.ErrNoSlot):
			s.State = ScopeNoSlot
		default:
			s.State, s.Wait = ScopeWaiting, d
		}
		held(s, holds[i])
		of[i].leaf = share(leaves, snap.Scope, snap.Leaf, s.Queued)
		if snap.Account.Rate > 0 {
			acct := resilience.Scope{Provider: s.Scope.Provider, Account: s.Scope.Account}
			of[i].account = share(accounts, acct, snap.Account, s.Queued)
		}
		if snap.Provider.Rate > 0 {
			of[i].provider = share(providers, resilience.Scope{Provider: s.Scope.Provider}, snap.Provider, s.Queued)
		}
	}
	for i := range pr.Scopes {
		s := &pr.Scopes[i]
		if of[i].leaf == nil {
			continue
		}
		s.ETA = addETA(s.Wait, max(of[i].leaf.time(), of[i].account.time(), of[i].provider.time()))
		if s.Running > 0 {
			s.ETA = max(s.ETA, heldFor(s.Paused, ends[i])) // its running tasks' next calls wait for the pause too
		}
		pr.ETA = max(pr.ETA, s.ETA)
	}
	slices.SortFunc(pr.Scopes, func(a, b ScopeProgress) int {
		return cmp.Compare(a.Scope.Key(), b.Scope.Key())
	})
	return pr
}

// runningEnd is how long until the contexts of the tasks running have
// all reached their deadlines, at least 0, in the governor's clock's time
// as the pauses it is compared with (the deadlines are wall time); -1
// when one has no deadline. p.mu is held.
func (p *Pool) runningEnd(running []*task) time.Duration {
	end := time.Duration(0)
	for _, t := range running {
		dl, ok := t.deadlineAt()
		if !ok {
			return -1
		}
		end = max(end, time.Until(dl))
	}
	return pace.ToClock(p.clock, end)
}

// heldFor is how long a pause with paused left holds the running tasks of
// a scope whose contexts have all reached their deadlines in end (-1:
// one has none): until the pause ends, or until their deadlines, when
// those come first (a call whose deadline the pause outlasts is refused
// at once, and the task's context ends by its deadline).
func heldFor(paused, end time.Duration) time.Duration {
	if end >= 0 {
		return min(paused, end)
	}
	return paused
}

// pausedLeft is the time left in the longest pause of snap's buckets:
// its leaf's, its account's and its provider's.
func pausedLeft(snap state.ScopeSnapshot) time.Duration {
	return max(snap.Leaf.Paused, snap.Account.Paused, snap.Provider.Paused, 0)
}

// held makes s, a queued scope whose queue a refusal holds for hold more
// (0: none), wait for at least that: not an open breaker whose calls fail
// fast, which pick runs at once whatever holds it.
func held(s *ScopeProgress, hold time.Duration) {
	if hold > 0 {
		s.State, s.Wait = ScopeWaiting, max(s.Wait, hold)
	}
}

// shared is a bucket that scopes of the pool share: its rate, the whole
// tokens it holds now, and the tasks queued for its tokens.
type shared struct {
	rate   float64
	tokens float64
	queued int
}

// share counts queued tasks of a scope whose bucket, read as snap, has
// key: the bucket in m, made if new.
func share(m map[resilience.Scope]*shared, key resilience.Scope, snap state.BucketSnapshot, queued int) *shared {
	b := m[key]
	if b == nil {
		b = &shared{rate: snap.Rate}
		if snap.Tokens > 0 { // not NaN, nor a balance callers queue in
			b.tokens = math.Floor(snap.Tokens)
		}
		m[key] = b
	}
	b.queued += queued
	return b
}

// time is how long b's queued tasks need, a token each: those its tokens
// cover go at once, the others at its rate (0 for no bucket, or one that
// does not pace).
func (b *shared) time() time.Duration {
	if b == nil || b.rate <= 0 {
		return 0
	}
	left := float64(b.queued) - b.tokens
	if left <= 0 {
		return 0
	}
	ns := left / b.rate * float64(time.Second)
	if ns >= math.MaxInt64 {
		return math.MaxInt64 // too long for a Duration: the longest one, not a wrapped one
	}
	return time.Duration(ns)
}

// addETA returns a+b, both at least 0, or the longest Duration when the
// sum is too long for one.
func addETA(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// breakerWaits reports whether the calls of provider wait for an open
// breaker's verdict (breaker_wait) instead of failing at once: then a
// task's first call is deferred until the breaker lets a probe through.
func breakerWaits(g *resilience.Governor, provider string) bool {
	return g.Config().Provider(provider).BreakerWait
}

// String renders the progress as one line:
//
//	done 310/726 (2 failed), running 16, queued 400 (3 scopes waiting, 1 open), ETA 12s
//
// The total counts every task submitted, the dropped ones too: a pool
// stopped with tasks queued reads "done 9/12 (3 dropped)". One scope
// waiting reads "(1 scope waiting, 0 open)". Running tasks of scopes a
// pause holds (ScopeProgress.Paused) are said after the running count,
// with the longest pause left: "running 1 (1 in a paused scope, 46s
// left)", or "(3 in paused scopes, 46s left)" for more than one scope.
func (pr Progress) String() string {
	waiting, open := 0, 0
	for _, s := range pr.Scopes {
		switch s.State {
		case ScopeWaiting, ScopeNoSlot:
			waiting++
		case ScopeOpen:
			open++
		}
	}
	total := pr.Done + pr.Failed + pr.Running + pr.Queued + pr.Dropped
	line := fmt.Sprintf("done %d/%d", pr.Done+pr.Failed, total)
	switch {
	case pr.Failed > 0 && pr.Dropped > 0:
		line += fmt.Sprintf(" (%d failed, %d dropped)", pr.Failed, pr.Dropped)
	case pr.Failed > 0:
		line += fmt.Sprintf(" (%d failed)", pr.Failed)
	case pr.Dropped > 0:
		line += fmt.Sprintf(" (%d dropped)", pr.Dropped)
	}
	line += fmt.Sprintf(", running %d", pr.Running)
	held, scopes, left := 0, 0, time.Duration(0)
	for _, s := range pr.Scopes {
		if s.Running > 0 && s.Paused > 0 {
			held += s.Running
			scopes++
			left = max(left, s.Paused)
		}
	}
	if held > 0 {
		where := "a paused scope"
		if scopes > 1 {
			where = "paused scopes"
		}
		line += fmt.Sprintf(" (%d in %s, %s left)", held, where, left.Round(time.Second))
	}
	line += fmt.Sprintf(", queued %d", pr.Queued)
	if waiting+open > 0 {
		noun := "scopes"
		if waiting == 1 {
			noun = "scope"
		}
		line += fmt.Sprintf(" (%d %s waiting, %d open)", waiting, noun, open)
	}
	return line + fmt.Sprintf(", ETA %s", pr.ETA.Round(time.Second))
}
