package resilience

import (
	"log/slog"
	"slices"

	"github.com/cloudg/cloudg/internal/bulkhead"
)

// WatchSlots calls fn each time a concurrency slot (max_concurrency) may
// have become free for a new call, so that a scheduler holding work back
// for an account whose slots were all taken (package pool) gives it one
// at that instant, rather than ask the governor again and again. fn is
// always called with an account, a Scope with Provider and Account set
// and the rest empty, never with one that names no account: as a call of
// this process gives its slot back and no call of the process waits for
// it (the slot then goes to the first of those, and fn is not called),
// whatever ended the call (End, Release, a guard the garbage collector
// found dropped, a nested call's loan coming back); as a call's wait for
// a slot ends (its context done, its max wait past) with a slot free, the
// one handed to it as it gave up passed back; and, once a Configure
// is in force, for each account the governor holds of a provider whose
// max_concurrency was changed and that has a slot free now, or that was
// turned off (its calls take no slot), once each. A call from fn says a
// slot may be free, not that it is: another call may take it first (ask
// Delay or a Survey). The bulkheads are the process's own, even with a
// fleet's store: no other process frees them.
//
// fn is called from the goroutine that freed the slot (the call's own,
// the garbage collector's cleanup, Configure's caller), with no lock of
// the governor's held, and may be called from several goroutines at
// once: it should return quickly, and may call the governor (Delay,
// Survey) but should not make a governed call. A panic in fn is
// recovered and logged once per governor. stop ends the watch without
// waiting for fn: a call of fn under way as stop returns may end after
// it, and one for a slot freed as stop ran may even begin after it (the
// watches in force are read as the slot is given back), so that fn must
// tolerate a call after stop; stop may be called from fn, or with a lock
// fn takes held. WatchSlots and stop are safe for concurrent use, and so
// is stop called more than once.
// With no watch, a call pays one atomic load as it gives its slot back.
func (g *Governor) WatchSlots(fn func(Scope)) (stop func()) {
	if fn == nil {
		panic("resilience: WatchSlots with a nil function")
	}
	g.init()
	w := &slotWatcher{fn: fn}
	g.mu.Lock()
	g.setWatchers(append(g.watchers(), w))
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.setWatchers(slices.DeleteFunc(slices.Clone(g.watchers()), func(o *slotWatcher) bool { return o == w }))
	}
}

// slotWatcher is one WatchSlots function: a pointer, for stop to find.
type slotWatcher struct{ fn func(Scope) }

// watchers returns the watches in force (nil: none).
func (g *Governor) watchers() []*slotWatcher {
	if ws := g.slotWatch.Load(); ws != nil {
		return *ws
	}
	return nil
}

// setWatchers puts ws in force, a copy the readers never see written;
// none clears the pointer, so that a slot given back pays one load. g.mu
// is held.
func (g *Governor) setWatchers(ws []*slotWatcher) {
	if len(ws) == 0 {
		g.slotWatch.Store(nil)
		return
	}
	g.slotWatch.Store(&ws)
}

// slotFreed tells the watches (WatchSlots) that b, the bulkhead of
// scope's account, was given a slot back, if one is free now. No lock is
// held.
func (g *Governor) slotFreed(b *bulkhead.Bulkhead, scope Scope) {
	ws := g.slotWatch.Load()
	if ws == nil || !b.Free() {
		return
	}
	g.tellWatchers(*ws, Scope{Provider: scope.Provider, Account: scope.Account})
}

// freedSlots is an account whose slots a Configure may have freed (its
// provider's cap changed, or its being governed), for the watches
// (WatchSlots) to be told once the change is in force.
type freedSlots struct {
	acct Scope
	b    *bulkhead.Bulkhead
	off  bool // the provider is not governed: its calls take no slot
}

// capsInForce returns each provider's settings in force, by name, for
// capsChanged. g.mu is held.
func (g *Governor) capsInForce() map[string]*providerSettings {
	ps := g.providers()
	set := make(map[string]*providerSettings, len(ps))
	for _, p := range ps {
		set[p.set.name] = p.set
	}
	return set
}

// capsChanged returns the accounts of each provider whose cap
// (max_concurrency) or whose being governed changed since before
// (capsInForce): the accounts whose slots a Configure may have freed. A
// provider no call has used yet has no account. g.mu is held.
func (g *Governor) capsChanged(before map[string]*providerSettings) []freedSlots {
	var freed []freedSlots
	for _, p := range g.providers() {
		old := before[p.set.name]
		if old == nil || old.bulkhead == p.set.bulkhead && old.enabled == p.set.enabled {
			continue
		}
		t := p.scopes
		t.mu.Lock()
		for name, a := range t.accounts {
			freed = append(freed, freedSlots{acct: Scope{Provider: p.set.name, Account: name}, b: a.bulkhead, off: !p.set.enabled})
		}
		t.mu.Unlock()
	}
	return freed
}

// slotsChanged tells the watches of each of freed, a Configure's
// (capsChanged), that has a slot free now, or whose provider is no
// longer governed. No lock is held.
func (g *Governor) slotsChanged(freed *[]freedSlots) {
	ws := g.slotWatch.Load()
	if ws == nil {
		return
	}
	for _, f := range *freed {
		if f.off || f.b.Free() {
			g.tellWatchers(*ws, f.acct)
		}
	}
}

func (g *Governor) tellWatchers(ws []*slotWatcher, acct Scope) {
	for _, w := range ws {
		g.tellWatcher(w, acct)
	}
}

// tellWatcher calls w's function, recovering a panic (see WatchSlots).
func (g *Governor) tellWatcher(w *slotWatcher, acct Scope) {
	defer func() {
		if r := recover(); r != nil {
			g.logPanicOnce(&g.watcherPanicked, "cloudg: a WatchSlots function panicked; the call went on (logged once)",
				slog.Any("panic", r))
		}
	}()
	w.fn(acct)
}
