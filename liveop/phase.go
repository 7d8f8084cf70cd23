package liveop

import "fmt"

// phase is where an operation stands. It is the operation's only state
// that says what may happen to it next; waiters counts its callers. Every
// change goes through Guard.to, which checks it against legal.
type phase uint8

const (
	phaseRunning   phase = iota // its function runs and its callers wait for the result; it is joined by its key
	phaseTimedOut               // its function, cancelled at its timeout, has not returned; its callers have the timeout refusal
	phaseAbandoned              // its function, cancelled when every caller had gone, has not returned; nobody gets its result
	phaseEnded                  // its function has returned (or panicked): its slots are free, its scopes cool down
	numPhases
)

var phaseNames = [numPhases]string{"running", "timed out", "abandoned", "ended"}

func (p phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// phases is a set of phases.
type phases uint8

func setOf(ps ...phase) phases {
	var s phases
	for _, p := range ps {
		s |= 1 << p
	}
	return s
}

func (s phases) has(p phase) bool { return s&(1<<p) != 0 }

// legal lists, for each phase, the phases an operation may move to from
// it. Staying put is no move; an ended operation moves no more.
var legal = [numPhases]phases{
	phaseRunning:   setOf(phaseTimedOut, phaseAbandoned, phaseEnded),
	phaseTimedOut:  setOf(phaseEnded),
	phaseAbandoned: setOf(phaseEnded),
	phaseEnded:     0,
}

// to moves the operation f to phase p; g.mu is held. It is the only
// writer of an operation's phase, and keeps g.flights to the operations
// that can be joined: those running with a key. A build with the
// cloudgdebug tag (the project's tests) panics on a move the table does
// not allow.
func (g *Guard) to(f *flight, p phase) {
	if checkPhases && !legal[f.phase].has(p) {
		panic(fmt.Sprintf("liveop: illegal operation transition %v -> %v", f.phase, p))
	}
	if f.phase == phaseRunning && f.key != "" && g.flights[f.key] == f {
		delete(g.flights, f.key)
	}
	f.phase = p
}
