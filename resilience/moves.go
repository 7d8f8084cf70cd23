package resilience

import (
	"runtime"
	"sync/atomic"
)

// moves counts the changes that move a scope's calls from one place to
// another while the governor runs: a sweep that folds a dropped entry's
// calls into its service's counters or the totals, and a Configure or
// Reset that retires every entry and moves or folds its calls. A read of
// the lifetime totals (Summary(nil), Lifetime) goes over several places
// one after the other; a move between two of them takes the calls from a
// place it has not read yet to one it has read already, and the read
// would report fewer calls than were made. Such a read asks moves whether
// one overlapped it, and reads again.
//
// It is two counters, so that moves may overlap one another: begun counts
// the moves begun, ended those ended. A read that saw them equal before it
// began, and begun unchanged after it ended, overlapped no move. The zero
// value has seen no move; it is safe for concurrent use.
type moves struct {
	begun, ended atomic.Uint64
}

// begin marks the start of a move: it precedes the first change to where
// a call is counted.
func (m *moves) begin() { m.begun.Add(1) }

// end marks the end of a move begun by begin: it follows the last change,
// once every call moved is where readers find it.
func (m *moves) end() { m.ended.Add(1) }

// consistentReads bounds the reads of readConsistent: a governor whose
// sweeps or Configures never stop may give a read that overlaps one.
const consistentReads = 4

// readConsistent calls read until a call of it overlaps no move, at most
// consistentReads times. read must start from nothing each time it is
// called.
func (m *moves) readConsistent(read func()) {
	for i := range consistentReads {
		ended := m.ended.Load()
		begun := m.begun.Load() // after ended: begun == ended means none was under way
		read()
		if begun == ended && m.begun.Load() == begun {
			return
		}
		if i < consistentReads-1 {
			runtime.Gosched()
		}
	}
}
