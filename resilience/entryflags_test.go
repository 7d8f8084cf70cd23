package resilience

import (
	"testing"

	"pgregory.net/rapid"
)

// entryFlags against a model: the two flags and a count of calls in
// flight that never goes below 0, in one word. Each operation keeps the
// flags it does not set, a dead entry counts no new call and uncounts
// none, and kill reads the count as the entry dies.
func TestEntryFlagsModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var f entryFlags
		var dead, watched bool
		var count uint32
		t.Repeat(map[string]func(*rapid.T){
			"busy": func(t *rapid.T) {
				if got := f.busy(); got != !dead {
					t.Fatalf("busy() = %v on a dead=%v entry", got, dead)
				}
				if !dead {
					count++
				}
			},
			"unbusy": func(t *rapid.T) {
				if got := f.unbusy(); got != !dead {
					t.Fatalf("unbusy() = %v on a dead=%v entry", got, dead)
				}
				if count > 0 {
					count-- // a dead entry's too: no longer read, but kept sane
				}
			},
			"watch": func(*rapid.T) { f.watch(); watched = true },
			"kill": func(t *rapid.T) {
				if dead {
					t.Skip("killed once")
				}
				if got := f.kill(); got != count {
					t.Fatalf("kill() = %d, counting %d", got, count)
				}
				dead = true
			},
			"reclaim": func(t *rapid.T) {
				if dead {
					t.Skip("dead")
				}
				want := count == 0
				if got := f.reclaim(); got != want {
					t.Fatalf("reclaim() = %v with %d calls counted", got, count)
				}
				dead = dead || want
			},
			"carry": func(t *rapid.T) {
				if dead {
					t.Skip("carried only to a new entry")
				}
				n := rapid.Uint32Range(0, 5).Draw(t, "n")
				f.carry(n)
				count += n
			},
			"": func(t *rapid.T) {
				if f.dead() != dead || f.watched() != watched || f.busyCalls() != count {
					t.Fatalf("dead %v, watched %v, %d calls; want %v, %v, %d", f.dead(), f.watched(), f.busyCalls(), dead, watched, count)
				}
			},
		})
	})
}
