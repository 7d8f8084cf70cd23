package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestAProcessPacesTheStoredBurst pins what the package documentation
// says of a fleet bucket's burst: a process hands out the shared bucket's
// tokens one interval apart, even those its stored balance holds (an
// in-process bucket gives them at once), and Redis debits each when it
// grants it; another process's first token is usable at once.
func TestAProcessPacesTheStoredBurst(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		spec := state.BucketSpec{Rate: 10, Burst: 100}
		a := newProcess(t, be, prefix, resilience.Config{})
		b := newProcess(t, be, prefix, resilience.Config{})
		ba := a.store.Bucket(vpcsKey, spec, 0)
		start := time.Now()
		for i := range 5 {
			w := ba.Reserve(0) + time.Since(start) // Redis's clock runs on while the test talks to it
			if want := time.Duration(i) * 100 * time.Millisecond; w < want-10*time.Millisecond || w > want+50*time.Millisecond {
				t.Fatalf("the process's token %d of a full bucket usable %v after the first, want %v (one interval apart)", i, w, want)
			}
		}
		if w := b.store.Bucket(vpcsKey, spec, 0).Reserve(0); w != 0 {
			t.Fatalf("another process's first token of the stored balance waits %v, want none", w)
		}
		n := ba.Snapshot(0).Tokens
		refilled := time.Since(start).Seconds() * 10
		if n < 94-0.01 || n > 94+refilled+0.5 {
			t.Fatalf("%.2f tokens left in Redis after 6 of 100 (%.2f refilled), want 94: Redis debits each token it grants", n, refilled)
		}
	})
}
