package sim

import (
	"context"
	"math"
	"time"

	"github.com/cloudg/cloudg/internal/sleep"
	"github.com/cloudg/cloudg/resilience"
)

// Clock is the time of a simulation: the provider, the workers and every
// strategy read it and sleep on it. It is resilience.Clock, so the governor
// runs on the same time.
type Clock = resilience.Clock

// SystemClock is the time package. Inside a testing/synctest bubble its time
// is the bubble's virtual time: sleeping costs nothing and a run takes only
// the CPU time of its requests. Its zero value is ready to use, and it
// holds nothing: any number of goroutines may use one at once.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d, or until ctx is done, and then returns ctx.Err().
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error { return sleep.For(ctx, d) }

// ScaledClock is a Clock whose time runs a fixed number of times faster than
// the wall clock from the moment it is made: at scale 10, a 60 s wait takes
// 6 s of wall time. The command runs every strategy on one, so that a
// scenario of minutes takes seconds. It implements RealDuration, which the
// governor uses to compare its waits with a context's deadline (wall time).
// It is safe for concurrent use. Make one with NewScaledClock; the zero
// ScaledClock is the wall clock, a clock at x1 (as NewScaledClock(0) is,
// but for its origin, which does not matter at x1).
type ScaledClock struct {
	scale float64   // 0 in the zero ScaledClock: x1
	start time.Time // the wall time at which the clock was made; also its origin
}

// NewScaledClock returns a clock running scale times faster than the wall
// clock; a scale that is not a positive finite number (zero, negative,
// NaN, +Inf) means 1, since such a clock would stop or overflow.
func NewScaledClock(scale float64) *ScaledClock {
	if !(scale > 0) || math.IsInf(scale, 1) {
		scale = 1 // NaN, zero, negative or infinite: a clock that would stop
	}
	return &ScaledClock{scale: scale, start: time.Now()}
}

// Scale returns how many times faster than the wall clock c runs: 1 for
// the zero ScaledClock.
func (c *ScaledClock) Scale() float64 {
	if c.scale == 0 {
		return 1
	}
	return c.scale
}

// Now returns the time the clock was made plus the wall time elapsed since,
// scaled; for the zero ScaledClock, time.Now().
func (c *ScaledClock) Now() time.Time {
	if c.scale == 0 {
		return time.Now()
	}
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.scale))
}

// Sleep waits d of clock time (d/Scale of wall time), or until ctx is done,
// and then returns ctx.Err().
func (c *ScaledClock) Sleep(ctx context.Context, d time.Duration) error {
	return sleep.For(ctx, c.RealDuration(d))
}

// RealDuration returns the wall time that d of clock time takes.
func (c *ScaledClock) RealDuration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Scale())
}

// scaleOf returns how many times faster than the wall clock c runs: from its
// RealDuration, as the governor reads it, and 1 for a clock without one.
func scaleOf(c Clock) float64 {
	if rd, ok := c.(interface {
		RealDuration(time.Duration) time.Duration
	}); ok {
		if wall := rd.RealDuration(time.Second); wall > 0 {
			return float64(time.Second) / float64(wall)
		}
	}
	return 1
}
