// Package modeltest holds what the stateful model tests (pgregory.net/rapid
// state machines) share: their default budget of sequences, and a tally
// of what the sequences of a run reached, so that a run that never drove
// the system into some state says so.
package modeltest

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Budget makes rapid run checks sequences of about steps steps for the
// rest of t (rapid's -rapid.checks and -rapid.steps), unless the command
// line set them: a test's budget is a default, and a soak raises it. The
// caller imports pgregory.net/rapid, which defines the flags.
func Budget(t testing.TB, checks, steps int) {
	t.Helper()
	for name, v := range map[string]int{"rapid.checks": checks, "rapid.steps": steps} {
		f := flag.Lookup(name)
		if f == nil {
			t.Fatalf("modeltest: no flag -%s: the test does not import pgregory.net/rapid", name)
		}
		if set(name) {
			continue
		}
		old := f.Value.String()
		if err := f.Value.Set(strconv.Itoa(v)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Value.Set(old) })
	}
}

// set reports whether the command line set the flag name.
func set(name string) bool {
	found := false
	flag.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// Tally counts what the sequences of a run reached (events, states, ends
// of calls). It is safe for concurrent use; its zero value is empty.
type Tally struct {
	mu sync.Mutex
	m  map[string]int
}

// Reset empties the tally.
func (r *Tally) Reset() {
	r.mu.Lock()
	r.m = nil
	r.mu.Unlock()
}

// Add counts one more of what.
func (r *Tally) Add(what string) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]int{}
	}
	r.m[what]++
	r.mu.Unlock()
}

// Log logs the tally, sorted, when the test runs with -v.
func (r *Tally) Log(t testing.TB) {
	if !testing.Verbose() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(r.m)) {
		fmt.Fprintf(&b, "\n  %-70s %d", k, r.m[k])
	}
	t.Logf("reached:%s", b.String())
}
