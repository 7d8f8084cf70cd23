package resilience

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/state"
)

// The reclaimer drops the scopes that hold nothing learned (rate at its
// ceiling, bucket full, breaker closed, and where breaker_dead_seconds
// finds dead scopes no streak of failures, which calls still retrying may
// make dead), went unused for the reclaim
// interval and have no call in flight (entryFlags), so that a sweep over
// millions of scopes keeps only the ones in use or slowed. No goroutine of its own does it, and no call pays for
// a whole table: once per interval a pass visits every slot of every
// provider's index, a small step at a time, each step taken by a call
// that finds the pass due (Guard.Enter). A provider other than aws, azure
// and gcp whose scopes are all gone, and whose retry budget is full, is
// dropped too. The buckets a step dropped that are state.Droppers (a
// shared store's, which may hold what their process alone knows of) are
// told so once the step has released its locks.
type reclaimer struct {
	due atomic.Int64 // the time the next step may run; 0 during a pass

	mu    sync.Mutex
	start time.Duration // when the pass began
	queue []*provider   // the providers the pass has still to visit
	slot  int           // the next slot of queue[0]'s index
}

// A call that finds a pass due takes one step of it: up to reclaimStep
// entries (an empty slot counts a sixteenth), and no more than
// reclaimStepTime of wall time, read every reclaimClockEvery entries. The
// work is memory-bound (each entry is a few cache misses), so time, not
// entries, bounds what a call pays on a loaded machine.
const (
	reclaimStep       = 2048
	reclaimStepTime   = 250 * time.Microsecond
	reclaimClockEvery = 32
)

// maybeReclaim runs a step of the reclaimer when one is due. The check is
// one atomic load.
func (g *Governor) maybeReclaim(now time.Duration) {
	if now >= time.Duration(g.reclaim.due.Load()) {
		g.reclaimStep(now)
	}
}

func (g *Governor) reclaimStep(now time.Duration) {
	r := &g.reclaim
	if !r.mu.TryLock() {
		return // another call is taking this step
	}
	var drops []state.Dropper
	defer func() { // after r.mu is released: callbacks never run under a lock
		for _, d := range drops {
			d.Drop(now)
		}
	}()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		if now < time.Duration(r.due.Load()) {
			return
		}
		r.start, r.queue, r.slot = now, g.providers(), 0
		r.due.Store(0)
	}
	deadline := time.Now().Add(reclaimStepTime) // wall time, whatever the governor's clock
	for budget := reclaimStep; budget > 0 && len(r.queue) > 0 && time.Now().Before(deadline); {
		p := r.queue[0]
		visited, spent, done := p.scopes.sweep(now, r.slot, budget, deadline, &drops)
		budget -= max(spent, 1)
		r.slot += visited
		if done {
			g.forgetIfIdle(p, &drops)
			r.queue[0] = nil
			r.queue, r.slot = r.queue[1:], 0
		}
	}
	if len(r.queue) == 0 {
		r.queue = nil
		// Passes start twice per interval, so that a scope idle for the
		// interval is caught by a pass that starts within half of one.
		r.due.Store(int64(r.start + g.idle/2))
	}
}

// sweep visits the slots of the index from slot from, dropping the idle
// entries, until it has spent budget (an entry costs one, an empty slot a
// sixteenth) or the wall clock passes deadline. It reports the slots visited, the budget spent and whether it
// reached the end, where it drops the accounts no entry uses and shrinks
// the index if it is mostly empty. The buckets it drops that are
// state.Droppers are added to drops, for the caller to tell once it holds
// no lock.
func (t *scopeTable) sweep(now time.Duration, from, budget int, deadline time.Time, drops *[]state.Dropper) (visited, spent int, done bool) {
	wake := false   // a call waits on an entry reclaimed: woken once mu is released
	moving := false // an entry's calls were folded: a move for the lifetime's readers
	defer func() {
		if moving {
			t.g.moves.end()
		}
		if wake {
			t.g.wake()
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	tab := t.index.tab.Load()
	if tab == nil || t.retired {
		return 0, 0, true
	}
	set := t.g.settingsOf(t)
	if from == 0 {
		// The entries the pass keeps, to rebuild a mostly empty index from
		// them at its end without scanning its slots again.
		t.kept, t.keeping = t.kept[:0], true
		t.pass++
	}
	units, end, entries := 0, from, 0 // units: sixteenths of the budget
	for ; end < len(tab.slots) && units < budget*16; end++ {
		e := tab.slots[end].e.Load()
		if e == nil {
			units++
			continue
		}
		units += 16
		if entries++; entries%reclaimClockEvery == 0 && time.Now().After(deadline) {
			break
		}
		idle := !e.flags.dead() && e.breaker.Pristine() && !(set.dead > 0 && e.failing()) && e.leaf.Idle(now, t.g.idle)
		if idle && !moving {
			// Before reclaim marks the entry dead, which hides its calls
			// from the lifetime's readers until they are folded.
			t.g.moves.begin()
			moving = true
		}
		if !idle || !e.flags.reclaim() {
			if !e.flags.dead() && e.born != t.pass { // made during the pass: kept when made
				t.keep(e, len(tab.slots))
			}
			continue
		}
		wake = wake || e.flags.watched() // after dead: see Guard.watch
		t.index.deleteAt(tab, end)
		t.g.foldCalls(e, e.calls.Swap(foldedCalls))
		addDropper(drops, e.leaf)
		if e.acct.refs--; e.acct.refs == 0 && !t.dropAccount(e.key.Account, e.acct, now, drops) {
			t.unused = append(t.unused, e.key.Account) // busy now: tried again at the end of the pass
		}
	}
	spent = units / 16
	if end < len(tab.slots) {
		return end - from, spent, false
	}
	kept := t.unused[:0]
	for _, name := range t.unused {
		if a, ok := t.accounts[name]; ok && a.refs == 0 && !t.dropAccount(name, a, now, drops) {
			kept = append(kept, name)
		}
	}
	t.unused = kept
	if t.keeping && len(t.accounts)*4 < t.accountsPeak {
		// Go maps keep their capacity, and ranging over one costs its
		// capacity (milliseconds for a million accounts gone), so the few
		// accounts left are copied by name: those of the entries the pass
		// kept, which are every live entry, and those still to be dropped.
		m := make(map[string]*accountEntry, len(t.kept)+len(t.unused))
		for _, e := range t.kept {
			if a, ok := t.accounts[e.key.Account]; ok {
				m[e.key.Account] = a
			}
		}
		for _, name := range t.unused {
			if a, ok := t.accounts[name]; ok {
				m[name] = a
			}
		}
		t.accounts, t.accountsPeak = m, len(m)
	}
	if t.keeping && t.index.sparse() {
		t.index.rebuild(t.kept)
	}
	t.kept, t.keeping = nil, false
	return max(end-from, 0), spent, true
}

// settingsOf returns the settings in force for the scopes of t: those of
// the provider whose table t is, which a Configure that kept t (one that
// changed no bucket, breaker or bulkhead setting, only, say,
// breaker_dead_seconds) made anew, or t's own, those it was made with,
// once t is no longer in force.
func (g *Governor) settingsOf(t *scopeTable) *providerSettings {
	if p := g.existing(t.set.name); p != nil && p.scopes == t {
		return p.set
	}
	return t.set
}

// keep notes an entry the pass keeps, while they are few enough for the
// index to be rebuilt smaller from them. The table's mu is held.
func (t *scopeTable) keep(e *scopeEntry, slots int) {
	if !t.keeping {
		return
	}
	if len(t.kept)*shrinkUnit >= slots {
		t.kept, t.keeping = nil, false // too many: the index is not sparse
		return
	}
	t.kept = append(t.kept, e)
}

// dropAccount removes the account name, which no entry uses, unless a call
// holds or awaits one of its slots or its bucket holds something learned;
// its bucket, when it is a state.Dropper, is added to drops. The table's
// mu is held.
func (t *scopeTable) dropAccount(name string, a *accountEntry, now time.Duration, drops *[]state.Dropper) bool {
	if !a.bulkhead.Idle() {
		return false
	}
	if a.bucket != nil && !a.bucket.Idle(now, t.g.idle) {
		return false
	}
	delete(t.accounts, name)
	addDropper(drops, a.bucket)
	return true
}

// addDropper adds b to drops when it is a state.Dropper (a nil bucket is
// none); with drops nil (a test's sweep), it adds nothing.
func addDropper(drops *[]state.Dropper, b state.Bucket) {
	if d, ok := b.(state.Dropper); ok && drops != nil {
		*drops = append(*drops, d)
	}
}

// foldCalls adds the calls of a dropped entry to its service's lifetime
// counters, or to the totals when the service has none. The entry may
// not know its service's counters: another leaf of the service (another
// operation, or an earlier entry of its own) made them.
func (g *Governor) foldCalls(e *scopeEntry, calls int64) {
	if calls <= 0 {
		return
	}
	c := e.life.Load()
	if c == nil {
		c = g.life.find(serviceScope(e.key))
	}
	if c != nil {
		c.n[callsTally].Add(calls)
		return
	}
	g.folded.Add(calls)
}

// forgetIfIdle drops a provider other than aws, azure and gcp once its
// scopes are all gone and its retry budget is full: a program that calls
// many provider names does not keep each one. Its provider bucket, when
// it is a state.Dropper, is added to drops.
func (g *Governor) forgetIfIdle(p *provider, drops *[]state.Dropper) {
	switch p.set.name {
	case "aws", "azure", "gcp":
		return
	}
	t := p.scopes
	t.mu.Lock()
	empty := t.index.len() == 0 && len(t.accounts) == 0
	t.mu.Unlock()
	if !empty || p.budget.Remaining() < float64(p.set.budget) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur, ok := g.others.Load(p.set.name); ok && cur == p {
		t.mu.Lock()
		t.retired = true // a call still holding it goes to a new one
		t.mu.Unlock()
		g.others.Delete(p.set.name)
		g.replaced()
		addDropper(drops, t.global)
	}
}
