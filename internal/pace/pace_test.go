package pace

import (
	"math"
	"testing"
	"time"
)

// scaled is a clock whose time runs factor times as fast as the wall
// clock's.
type scaled struct{ factor float64 }

func (c scaled) RealDuration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.factor)
}

// A clock without RealDuration runs at the wall clock's pace; one with it
// converts both ways, one the other's inverse, clamped to a Duration's
// range; one that says a second takes no time is read at the wall clock's
// pace.
func TestClockAndWallTime(t *testing.T) {
	for _, c := range []struct {
		name          string
		clock         any
		d, wall, back time.Duration // ToWall(d) = wall; ToClock(wall) = back
	}{
		{"no RealDuration", struct{}{}, time.Minute, time.Minute, time.Minute},
		{"nil", nil, time.Second, time.Second, time.Second},
		{"50 times as fast", scaled{50}, 50 * time.Second, time.Second, 50 * time.Second},
		{"half as fast", scaled{0.5}, time.Second, 2 * time.Second, time.Second},
		{"time past", scaled{50}, -50 * time.Second, -time.Second, -50 * time.Second},
		{"a second takes no time", scaled{math.Inf(1)}, time.Minute, 0, 0},
	} {
		if got := ToWall(c.clock, c.d); got != c.wall {
			t.Errorf("%s: ToWall(%v) = %v, want %v", c.name, c.d, got, c.wall)
		}
		if got := ToClock(c.clock, c.wall); got != c.back {
			t.Errorf("%s: ToClock(%v) = %v, want %v", c.name, c.wall, got, c.back)
		}
	}
	if got := ToClock(scaled{math.Inf(1)}, time.Hour); got != time.Hour {
		t.Errorf("a clock whose second takes no time: ToClock(1h) = %v, want 1h (the wall clock's pace)", got)
	}
	fast := scaled{1e6}
	if got := ToClock(fast, time.Duration(math.MaxInt64)); got != time.Duration(math.MaxInt64) {
		t.Errorf("the longest wait on a fast clock: %v, want the longest Duration, not one wrapped", got)
	}
	if got := ToClock(fast, time.Duration(math.MinInt64)); got != time.Duration(math.MinInt64) {
		t.Errorf("the longest time past on a fast clock: %v, want the least Duration, not one wrapped", got)
	}
}
