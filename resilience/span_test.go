package resilience

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// union is the measure of the union of intervals, computed plainly.
func union(ivs [][2]time.Duration) time.Duration {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b [2]time.Duration) int { return int(a[0] - b[0]) })
	var total, until time.Duration
	for _, iv := range ivs {
		if iv[1] <= until {
			continue
		}
		total += iv[1] - max(iv[0], until)
		until = iv[1]
	}
	return total
}

// A span counts the time its intervals cover once, however many overlap:
// the waits of concurrent callers are the time during which at least one
// waited, not their sum. Intervals that end in order (waits recorded as
// they end), or nearly, are counted exactly, with gaps between them.
func TestSpanIsTheUnion(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s span
		var ivs [][2]time.Duration
		end := time.Duration(0)
		for range rapid.IntRange(0, 40).Draw(t, "n") {
			// Waits end in order, a few a little earlier than the
			// last (recorded late); each lasts 10 to 60, so that none
			// reaches back past the eight intervals a span keeps.
			end += time.Duration(rapid.IntRange(0, 20).Draw(t, "step"))
			e := end - time.Duration(rapid.IntRange(0, 3).Draw(t, "late"))
			st := e - time.Duration(rapid.IntRange(10, 60).Draw(t, "wait"))
			st = max(st, 0)
			ivs = append(ivs, [2]time.Duration{st, e})
			s.add(st, e)
			if got, want := s.covered(), union(ivs); got != want {
				t.Fatalf("after %v: covered %v, want %v", ivs, got, want)
			}
		}
	})
}

// A span never counts more than the union, whatever the order of its
// intervals, nor less than the union of those it could keep apart; it
// never counts an instant twice.
func TestSpanNeverCountsTwice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s span
		var ivs [][2]time.Duration
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			st := time.Duration(rapid.IntRange(0, 100).Draw(t, "start"))
			e := st + time.Duration(rapid.IntRange(0, 20).Draw(t, "len"))
			ivs = append(ivs, [2]time.Duration{st, e})
			s.add(st, e)
			if got, want := s.covered(), union(ivs); got > want {
				t.Fatalf("after %v: covered %v, more than the union %v", ivs, got, want)
			}
		}
	})
}

// Six callers paced at 2 rps, four of them waiting 0.5 s, 1 s, 1.5 s and
// 2 s from the same instant, waited 5 s in all and 2 s of wall-clock time.
func TestSpanOfTheWorkedExample(t *testing.T) {
	var s span
	for _, w := range []time.Duration{500, 1000, 1500, 2000} {
		s.add(0, w*time.Millisecond)
	}
	if got := s.covered(); got != 2*time.Second {
		t.Fatalf("covered %v, want 2s", got)
	}
}
