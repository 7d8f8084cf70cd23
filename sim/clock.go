package sim

import (
	"github.com/cloudg/cloudg/resilience"
)

// Clock is the time of a simulation: the provider, the workers and every
// strategy read it and sleep on it. It is resilience.Clock, so the governor
// runs on the same time.
type Clock = resilience.Clock

// SystemClock is the time package (resilience.SystemClock). Inside a
// testing/synctest bubble its time is the bubble's virtual time: sleeping
// costs nothing and a run takes only the CPU time of its requests.
type SystemClock = resilience.SystemClock

// scaleOf returns how many times faster than the wall clock c runs: the
// Scale of a *resilience.ScaledClock, 1 for anything else.
func scaleOf(c Clock) float64 {
	if sc, ok := c.(*resilience.ScaledClock); ok && sc.Scale > 0 {
		return sc.Scale
	}
	return 1
}
