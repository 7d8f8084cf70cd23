// Package pace converts between a governor's clock time and wall time. A
// resilience.Clock may run at another pace than the wall clock (a
// simulator's, minutes of provider time in seconds), and say how with a
// RealDuration method; a context's deadline is wall time, while the
// governor's waits, pauses and cooldowns are its clock's. The governor and
// package pool compare the two through these functions, so that both
// read a clock the same way.
package pace

import (
	"math"
	"time"
)

// paced is the optional method of a clock at another pace than the wall
// clock: the wall time d of its time takes.
type paced interface {
	RealDuration(d time.Duration) time.Duration
}

// ToWall returns the wall time that d of clock's time takes: d, unless
// clock (a resilience.Clock, or anything) has a RealDuration method, whose
// answer it is.
func ToWall(clock any, d time.Duration) time.Duration {
	if p, ok := clock.(paced); ok {
		return p.RealDuration(d)
	}
	return d
}

// ToClock returns the time of clock that wall, a span of wall time (a
// context's time left), takes: ToWall's inverse, scaled from what a
// second of the clock takes. It is wall itself for a clock without
// RealDuration, or one that says a second takes no time (or less), as the
// governor reads such a clock: at the wall clock's pace. The scaling is
// done in floating point and clamped to a Duration's range, so that a far
// deadline on a fast clock does not wrap to one already past.
func ToClock(clock any, wall time.Duration) time.Duration {
	p, ok := clock.(paced)
	if !ok {
		return wall
	}
	unit := p.RealDuration(time.Second)
	if unit <= 0 {
		return wall
	}
	d := float64(wall) * float64(time.Second) / float64(unit)
	switch {
	case d >= math.MaxInt64:
		return math.MaxInt64
	case d <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(d)
}
