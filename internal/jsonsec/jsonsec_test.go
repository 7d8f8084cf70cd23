package jsonsec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// bound is the longest duration whose seconds, a float64, read back to
// the nanosecond: 2^23 s, about 97 days. Below it a float64 of seconds is
// spaced by 2^-30 s at most, less than a nanosecond; from it on by 2^-29
// s, about 1.9 ns, and Duration rounds to a neighbour.
const bound = time.Duration(1<<23) * time.Second

// Every duration of at most 2^23 s either way reads back from its
// seconds to the nanosecond, as the package's godoc says: each of the
// last million nanoseconds below the bound and above its negative, and
// a million drawn from the whole span.
func TestDurationReadsBackToTheNanosecondUpTo2To23Seconds(t *testing.T) {
	check := func(d time.Duration) {
		t.Helper()
		if got := Duration(d.Seconds()); got != d {
			t.Fatalf("Duration(%v.Seconds()) = %v, %d ns off; want it back", d, got, got-d)
		}
	}
	for i := range time.Duration(1_000_000) {
		check(bound - i)
		check(-bound + i)
	}
	r := rand.New(rand.NewPCG(23, 97))
	for range 1_000_000 {
		check(time.Duration(r.Int64N(2*int64(bound)+1)) - bound)
	}
}

// Past 2^23 s a duration may read back a nanosecond off (of the first
// million nanoseconds past the bound, some do), and never further off
// than half the spacing of a float64 of seconds there, in nanoseconds
// rounded up: 1 ns below 2^24 s, 954 ns at the end of a Duration's range,
// whose ends read back as themselves.
func TestDurationPast2To23SecondsIsOffByHalfAFloatsSpacingAtMost(t *testing.T) {
	off := 0
	for i := range time.Duration(1_000_000) {
		d := bound + 1 + i
		got := Duration(d.Seconds())
		if got != d {
			off++
		}
		if e := got - d; e > 1 || e < -1 {
			t.Fatalf("Duration(%v.Seconds()) = %v, %d ns off; want 1 at most below 2^24 s", d, got, e)
		}
	}
	if off == 0 {
		t.Fatal("every one of the first million nanoseconds past 2^23 s read back exactly; the bound is further")
	}
	r := rand.New(rand.NewPCG(24, 63))
	for range 1_000_000 {
		d := bound + time.Duration(r.Int64N(math.MaxInt64-int64(bound)))
		if r.IntN(2) == 0 {
			d = -d
		}
		secs := d.Seconds()
		half := math.Ceil((math.Nextafter(math.Abs(secs), math.Inf(1)) - math.Abs(secs)) * 1e9 / 2)
		if e := math.Abs(float64(Duration(secs) - d)); e > half {
			t.Fatalf("Duration(%v.Seconds()) is %v ns off; want %v at most", d, e, half)
		}
	}
	for _, d := range []time.Duration{math.MaxInt64, math.MinInt64} {
		if got := Duration(d.Seconds()); got != d {
			t.Errorf("Duration(%v.Seconds()) = %v; want it back", d, got)
		}
	}
}
