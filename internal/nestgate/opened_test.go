package nestgate

import "testing"

// Opened's channel closes as the gate opens, not as it closes, and is
// closed already while the gate is open.
func TestOpenedClosesAsTheGateOpens(t *testing.T) {
	var g Gate
	c := g.Opened()
	g.SetOpen(false)
	if closed(c) {
		t.Fatal("Opened's channel closed as the closed gate was closed again, want open until the gate opens")
	}
	if g.LookIn() {
		t.Fatal("LookIn of a closed gate with a lookup waiting: true, want false")
	}
	g.SetOpen(true)
	if !closed(c) {
		t.Fatal("Opened's channel still open once the gate opened")
	}
	if !closed(g.Opened()) {
		t.Fatal("Opened of an open gate: a channel not closed, want one closed already")
	}
	if !g.LookIn() {
		t.Fatal("LookIn of an open gate: false")
	}
	g.LookedIn()
	g.SetOpen(false)
	if c := g.Opened(); closed(c) {
		t.Fatal("Opened of a gate closed again: a channel closed already, want one the next opening closes")
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
