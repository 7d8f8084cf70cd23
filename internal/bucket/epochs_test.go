package bucket

import (
	"runtime"
	"testing"
	"time"
	"weak"
)

// A bucket keeps only the epochs a caller still needs: its current one, and
// those the tickets still held were made in, with the epochs after them.
// An epoch no ticket holds is garbage once superseded, however long the
// bucket lives and however often its rate changes: a congested goodput
// scope changes its rate a few times a second for as long as it is busy.
func TestSupersededEpochsAreNotKept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ticket bool // a caller took a ticket (waited) before the changes
	}{
		{"never waited on", false},
		{"waited on", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(Spec{Rate: 20, Burst: 40, Adaptive: true, Goodput: true}, 0)
			if tc.ticket {
				for range 41 {
					b.Reserve(0)
				}
				_, tk := b.ReserveTicket(0)
				b.Throttle(sec, 0)
				b.Follow(tk) // the ticket follows its reservation, then is dropped
			}
			b.Throttle(2*sec, 0)
			b.Throttle(4*sec, sec)
			middle := weak.Make(b.ep.Load())
			for i := range 100 {
				now := 6*sec + sec*time.Duration(i)
				b.Throttle(now, 0)
				b.Success(now)
			}
			runtime.GC()
			if middle.Value() != nil {
				t.Fatal("an epoch superseded 200 changes ago, held by no ticket, is still reachable")
			}
			// The bucket still works: a ticket taken now follows a change.
			_, tk := b.ReserveTicket(200 * sec)
			b.Throttle(201*sec, 0)
			if got, _ := b.Follow(tk); got.e != b.ep.Load() {
				t.Fatal("a ticket did not follow the bucket's change")
			}
		})
	}
}

// The cache of configs keeps the specs a configuration makes, not every
// spec ever seen: past maxConfigs distinct specs (fleet mode's fallback
// makes one from each learned rate), a bucket's config is its own, and a
// bucket of an uncached spec works as any other.
func TestConfigCacheIsBounded(t *testing.T) {
	for i := range 2 * maxConfigs {
		New(Spec{Rate: 1000 + float64(i)/7, Burst: 3}, 0)
	}
	n := 0
	configs.Range(func(any, any) bool { n++; return true })
	if n > maxConfigs || nconfigs.Load() != int64(n) {
		t.Fatalf("%d specs cached (counted %d), want at most %d", n, nconfigs.Load(), maxConfigs)
	}
	b := New(Spec{Rate: 2, Burst: 2, Floor: 0.5, Adaptive: true}, 0)
	if w := b.Reserve(0) + b.Reserve(0) + b.Reserve(0); w != sec/2 {
		t.Fatalf("a bucket past the cache: three callers wait %v in all, want 500ms", w)
	}
	if r, dec := b.Throttle(0, 0); r != 1 || !dec {
		t.Fatalf("a bucket past the cache: throttled to %v (decreased %v), want 1", r, dec)
	}
}
