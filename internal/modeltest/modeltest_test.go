package modeltest

import (
	"flag"
	"sync"
	"testing"

	_ "pgregory.net/rapid" // defines -rapid.checks and -rapid.steps
)

// Budget sets rapid's flags for the test that calls it and puts them back
// when it ends.
func TestBudgetIsRestored(t *testing.T) {
	checks, steps := flag.Lookup("rapid.checks"), flag.Lookup("rapid.steps")
	before := checks.Value.String() + " " + steps.Value.String()
	t.Run("inner", func(t *testing.T) {
		Budget(t, 7, 9)
		if got := checks.Value.String() + " " + steps.Value.String(); got != "7 9" {
			t.Errorf("within the test: %s, want 7 9", got)
		}
	})
	if after := checks.Value.String() + " " + steps.Value.String(); after != before {
		t.Errorf("after the test: %s, want %s", after, before)
	}
}

// A tally counts from many goroutines, and Reset empties it.
func TestTally(t *testing.T) {
	var r Tally
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r.Add("call")
			}
		}()
	}
	wg.Wait()
	if r.m["call"] != 800 {
		t.Errorf("counted %d, want 800", r.m["call"])
	}
	r.Reset()
	if len(r.m) != 0 {
		t.Errorf("after Reset: %v", r.m)
	}
	r.Log(t)
}
