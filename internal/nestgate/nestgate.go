// Package nestgate is the gate of the calls nested in a governed call's
// attempt: a call made with a context that leads to the Guard of an
// enclosing call reads what that Guard holds (its slot, its probe) only
// while the gate is open, that is while the enclosing call's attempt runs
// and its own goroutine leaves the Guard still. The context may outlive
// the attempt (a goroutine the attempt started and did not wait for, a
// dial net/http goes on with, an SDK's background refresh): the gate
// orders such a call's reads before what the Guard's goroutine writes once
// the attempt is over, and a call made once it is over is not nested in
// it. It is the one gate package resilience gives the calls of
// resilience.WithNestedCalls and, through package attemptctx, the
// integrations that send an attempt with a context of their own.
package nestgate

import "sync"

// Gate orders the lookups of the calls nested in a Guard's attempts with
// the goroutine that drives the Guard. Its zero value is closed. It is
// safe for concurrent use.
type Gate struct {
	mu sync.RWMutex
	st chan struct{} // isOpen while open; while closed nil, or Opened's channel, closed as the gate opens
}

// isOpen is the state of an open Gate; it is never closed.
var isOpen = make(chan struct{})

// opened is Opened's answer for a gate open now: closed already.
var opened = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// SetOpen opens or closes the gate. Closing it waits for the lookups in
// progress, so that none of them reads what the Guard's goroutine writes
// after it. Opening it closes the channel Opened returned meanwhile.
func (g *Gate) SetOpen(open bool) {
	g.mu.Lock()
	switch {
	case !open:
		if g.st == isOpen {
			g.st = nil
		}
	case g.st == nil:
		g.st = isOpen
	case g.st != isOpen:
		close(g.st) // the lookups waiting for the next attempt look again
		g.st = isOpen
	}
	g.mu.Unlock()
}

// LookIn reports whether the gate is open; when it is, it stays open
// until LookedIn, which the caller calls once it has read the Guard.
func (g *Gate) LookIn() bool {
	g.mu.RLock()
	if g.st != isOpen {
		g.mu.RUnlock()
		return false
	}
	return true
}

// LookedIn ends what LookIn began.
func (g *Gate) LookedIn() { g.mu.RUnlock() }

// Opened returns a channel closed once the gate opens: a lookup that
// found it closed (the Guard between its attempts) and waits looks again
// as the Guard's next attempt begins. It is closed already when the gate
// is open now.
func (g *Gate) Opened() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.st {
	case isOpen:
		return opened
	case nil:
		g.st = make(chan struct{})
	}
	return g.st
}

// Attach makes g the gate of guard's attempts, guard being a
// *resilience.Guard, which has no gate yet: from then on a call nested in
// guard's attempt reads guard only while g is open. Package resilience
// sets it (package attemptctx, which imports resilience, calls it), so
// that resilience exports nothing for it.
var Attach func(guard any, g *Gate)
