package liveop

import (
	"fmt"
	"slices"
)

// waiter is a caller waiting for a slot (Request.Wait), in Guard.queue
// from its first wait until its Run starts, joins or is refused an
// operation. Its phase says where it stands and is written by
// Guard.toWait only; the rest is what the Guard knows of it.
type waiter struct {
	req    Request
	scopes []string      // req.Scopes, sorted, without duplicates
	phase  waitPhase     // written by Guard.toWait only
	ready  chan struct{} // made by the caller as it sleeps, in its testing/synctest bubble if it is in one; closed as it leaves waitAsleep
	kept   []string      // its scopes whose slot is kept for it while it waits for the others (Guard.kept): in waitAsleep or waitWoken only
	nested nesting       // whether its Run is inside an operation's function (see Guard.firstBroken); not known (inside none, to handOff) from the end of inside's function until the caller looks again
	inside *flight       // the operation whose function's context its Run has (nil: none, or its function has returned), which waits for it (see Guard.endable)
}

// waitPhase is where a waiting caller stands.
type waitPhase uint8

const (
	waitWoken  waitPhase = iota // it looks at the Guard (again), or is to: its ready is closed (or not made yet), and no slot is handed to it
	waitAsleep                  // it waits on its ready, open, for a slot or a change that lets it go on
	waitHanded                  // as waitWoken, and a slot of each of its scopes and one of the total are kept for it (Guard.held), which it is to take
	waitGone                    // off the queue: it started, joined or was refused an operation, or its context ended
	numWaitPhases
)

var waitPhaseNames = [numWaitPhases]string{"woken", "asleep", "handed", "gone"}

func (p waitPhase) String() string {
	if p < numWaitPhases {
		return waitPhaseNames[p]
	}
	return fmt.Sprintf("waitPhase(%d)", uint8(p))
}

// legalWait lists, for each phase of a waiting caller, the phases it may
// move to: it sleeps only once it has looked, it is handed slots asleep
// or woken but only once, it lets go of them (woken) before it sleeps
// again or leaves, and a caller gone moves no more.
var legalWait = [numWaitPhases][numWaitPhases]bool{
	waitWoken:  {waitAsleep: true, waitHanded: true, waitGone: true},
	waitAsleep: {waitWoken: true, waitHanded: true, waitGone: true},
	waitHanded: {waitWoken: true},
	waitGone:   {},
}

// toWait moves the waiting caller w to phase p; g.mu is held. It is the
// only writer of a waiter's phase: it closes w.ready as w leaves
// waitAsleep, so that the caller looks again. A build with the
// cloudgdebug tag (the project's tests) panics on a move the table does
// not allow.
func (g *Guard) toWait(w *waiter, p waitPhase) {
	if checkPhases && !legalWait[w.phase][p] {
		panic(fmt.Sprintf("liveop: illegal waiter transition %v -> %v", w.phase, p))
	}
	if w.phase == waitAsleep {
		close(w.ready)
	}
	w.phase = p
}

// The events of a waiting caller: enqueue, sleep, wake, hold, unhold,
// rehold, outlive and unqueue. Each starts from the waiter's phase and
// moves it only through Guard.toWait; keep and unkeep change what is kept
// for it while it waits, not its phase.

// enqueue puts a caller that is to wait for a slot of scopes at the end
// of the queue, looking (waitWoken), and returns it; g.mu is held.
func (g *Guard) enqueue(req Request, scopes []string, inside *flight) *waiter {
	w := &waiter{req: req, scopes: scopes, inside: inside, phase: waitWoken}
	g.queue = append(g.queue, w)
	return w
}

// sleep makes the waiting caller w, which has looked and let go of what
// was handed to it, wait on a new ready, which it returns, with nested,
// what it has found of whether its Run is inside an operation's function;
// g.mu is held. The channel is made by the caller that waits on it,
// inside its testing/synctest bubble if it is in one.
func (g *Guard) sleep(w *waiter, nested nesting) <-chan struct{} {
	if checkPhases && w.phase != waitWoken {
		panic(fmt.Sprintf("liveop: a waiter %v slept", w.phase))
	}
	w.nested = nested
	w.ready = make(chan struct{})
	g.toWait(w, waitAsleep)
	return w.ready
}

// wake makes the waiting caller w look again; g.mu is held. A caller
// awake already (woken or handed) stays so.
func (g *Guard) wake(w *waiter) {
	if w.phase == waitAsleep || (checkPhases && w.phase == waitGone) {
		g.toWait(w, waitWoken)
	}
}

// hold keeps for the waiting caller w a slot of each of its scopes and
// one of the total, which it is to take (see Guard.handOff), in place of
// the free slots kept for it while it waited for the others, and wakes
// it; g.mu is held.
func (g *Guard) hold(w *waiter) {
	g.toWait(w, waitHanded)
	g.unkeep(w)
	for _, s := range w.scopes {
		g.held[s]++
	}
	g.heldAll++
}

// unhold frees the slots kept for the waiting caller w (nil: none), which
// stays awake, and returns what they were, for rehold; g.mu is held.
func (g *Guard) unhold(w *waiter) (was keptSlots) {
	if w == nil {
		return keptSlots{}
	}
	was = keptSlots{holds: w.phase == waitHanded, scopes: w.kept}
	g.unkeep(w)
	if !was.holds {
		return was
	}
	g.toWait(w, waitWoken)
	for _, s := range w.scopes {
		if g.held[s]--; g.held[s] <= 0 {
			delete(g.held, s)
		}
	}
	g.heldAll--
	return was
}

// outlive notes that the function of the operation the waiting caller w
// has the context of (w.inside) has returned: its Run is inside it no
// more, and until it has looked again, and found out whether it runs on
// another operation's goroutine, it counts as inside none. g.mu is held.
func (g *Guard) outlive(w *waiter) {
	w.inside, w.nested = nil, nesting{}
}

// unqueue takes the caller w (nil: none) off the queue and frees the
// slots kept for it, handing them to nobody: for a caller about to take
// them, whose Guard.start hands on what is left once it has, so that the
// next waiting caller is not handed a slot the caller takes; g.mu is
// held.
func (g *Guard) unqueue(w *waiter) {
	if w == nil {
		return
	}
	g.unhold(w)
	g.toWait(w, waitGone)
	g.queue = slices.DeleteFunc(g.queue, func(x *waiter) bool { return x == w })
}

// keep keeps for the waiting caller w, which the caps hold back, the
// free slots of its scopes; g.mu is held.
func (g *Guard) keep(w *waiter) {
	for _, s := range w.scopes {
		if g.active[s]+g.held[s]+g.kept[s] < g.cfg.maxPerScope {
			g.kept[s]++
			w.kept = append(w.kept, s)
		}
	}
}

// unkeep frees the slots keep kept for the waiting caller w; g.mu is
// held.
func (g *Guard) unkeep(w *waiter) {
	for _, s := range w.kept {
		if g.kept[s]--; g.kept[s] <= 0 {
			delete(g.kept, s)
		}
	}
	w.kept = nil
}

// keptSlots is what unhold freed of a waiting caller's: the slots handed
// to it (holds), or those of its scopes kept for it while it waits for
// the others.
type keptSlots struct {
	holds  bool
	scopes []string
}

// rehold keeps again for the waiting caller w (nil: none) the slots
// unhold freed, was, which nothing has taken since (g.mu was held), while
// the caller looks something up with the lock let go and before it looks
// at the Guard again; g.mu is held.
func (g *Guard) rehold(w *waiter, was keptSlots) {
	if w == nil {
		return
	}
	if was.holds {
		g.hold(w)
	}
	for _, s := range was.scopes {
		g.kept[s]++
	}
	w.kept = slices.Clip(was.scopes) // keep starts a list of its own
}
