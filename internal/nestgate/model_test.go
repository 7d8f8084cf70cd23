package nestgate

import (
	"runtime"
	"testing"

	"github.com/cloudg/cloudg/internal/modeltest"
	"pgregory.net/rapid"
)

// TestModel drives a gate with random sequences of SetOpen, Opened and
// lookups (LookIn, then LookedIn when it reported open) against a model
// of an open or closed gate, and checks after every step: a lookup finds
// the gate open exactly when the model has it open; every channel Opened
// returned is closed exactly when the gate was open then or has opened
// since; and a channel Opened returns while closed is the one the other
// waiters hold, so that one opening wakes them all.
func TestModel(t *testing.T) {
	modeltest.Budget(t, 200, 50)
	rapid.Check(t, func(t *rapid.T) {
		var g Gate
		open := false
		type taken struct {
			c     <-chan struct{}
			woken bool // the gate was open when it was taken, or opened since
		}
		var chans []taken
		t.Repeat(map[string]func(*rapid.T){
			"setOpen": func(t *rapid.T) {
				open = rapid.Bool().Draw(t, "open")
				g.SetOpen(open)
				if open {
					for i := range chans {
						chans[i].woken = true
					}
				}
			},
			"opened": func(t *rapid.T) {
				c := g.Opened()
				for _, x := range chans {
					if !x.woken && !open && x.c != c {
						t.Fatalf("Opened of a closed gate returned a channel other than the one its waiters hold")
					}
				}
				chans = append(chans, taken{c: c, woken: open})
			},
			"lookIn": func(t *rapid.T) {
				if got := g.LookIn(); got != open {
					t.Fatalf("LookIn() = %v; the gate is open: %v", got, open)
				} else if got {
					g.LookedIn()
				}
			},
			"": func(t *rapid.T) {
				for i, x := range chans {
					if closed(x.c) != x.woken {
						t.Fatalf("channel %d of Opened: closed %v; want %v (gate open: %v)", i, closed(x.c), x.woken, open)
					}
				}
			},
		})
	})
}

// Closing the gate waits for the lookups in progress: the Guard's
// goroutine writes nothing a nested call is still reading. (Not in a
// synctest bubble: a goroutine blocked on a mutex is not durably blocked
// there. The test waits until the closing goroutine holds the gate's
// lock pending, which TryRLock then refuses.)
func TestClosingWaitsForTheLookupsInProgress(t *testing.T) {
	var g Gate
	g.SetOpen(true)
	if !g.LookIn() {
		t.Fatal("LookIn of an open gate: false")
	}
	done := make(chan struct{})
	go func() {
		g.SetOpen(false)
		close(done)
	}()
	for !closed(done) && g.mu.TryRLock() {
		g.mu.RUnlock()
		runtime.Gosched()
	}
	if closed(done) {
		t.Fatal("SetOpen(false) returned while a lookup was in progress")
	}
	g.LookedIn()
	<-done
	if g.LookIn() {
		t.Fatal("LookIn of a closed gate: true")
	}
}
