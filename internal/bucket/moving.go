package bucket

import (
	"math"
	"time"
)

// The goodput controller's moving mode: for a limit that moves (another
// tenant of it speeding up and slowing down), drains instead of climbs.
//
// While the limit looks steady the controller climbs slowly (GoodputQuiet),
// since each probe past a limit that did not move costs a rejection. A
// limit that moves is different: what the provider refills above the
// client's rate is stored in its bucket (up to its burst) and is lost if
// the demand ends before a climb finds it. A moving bucket therefore
// drains: once its quiet has passed since the last throttle, it moves to
// GoodputDrainFactor times its rate (not above the ceiling), and again
// every GoodputDrainGrow without a throttle, until the next throttle. A
// drain spends the provider's stored surplus at once, and the congestion
// event that ends it moves the rate to GoodputShare of the refill it
// measured, without GoodputCap, so that the rate reaches a limit that rose
// in one step. A moving bucket neither climbs nor drains during a sprint,
// nor sprints during a drain, and its sprint is GoodputMovingSprintFactor.
//
// A bucket becomes moving at a congestion event that measures a refill
// (over at least GoodputRiseSecs since the previous event) at least
// GoodputRise above the one the last measuring event before it measured:
// the measured refill of a limit that does not move varies by about 1.5%.
// (A first event, which counts what the client sent, measures none, so
// the earliest comparison is at the third event.) It also becomes moving at a
// first event too soon after counting began to measure anything (see
// goodputLeast), which then moves the rate to GoodputFirstShare of itself
// rather than to GoodputCap: a burst of demand met a limit of unknown
// height, and the first drain finds it. (The first event after a gap of
// more than GoodputWindow without a success is a first event too.) The
// first drain after such an event comes once the bucket's burst would
// have lasted at its ceiling, between goodputLeast and GoodputDrainQuiet
// (firstQuiet): the halving costs a burst of demand a few seconds long at
// a limit equal to the configured rate, which runs at half the limit until
// that drain, and the provider's bucket, if its burst is the configured
// one, stores only that much of what the halving left. From the event
// ending that drain on, the quiets are those that follow a first quiet of
// GoodputDrainQuiet. In the simulator, 220 calls at 20 rps against a
// provider's 20 rps with a burst of 20, clients configured the same, kept
// 94% of the capacity (83% with the first drain 4 s after the event, 97%
// before the moving mode); a fixed 1 s quiet kept as much but cost the
// tenant scenario, whose clients' burst lasts 5 s, 2 and 6 of its wins on
// seeds 1-30 and 31-60.
//
// A drain found a rise when the refill it measured is at least
// GoodputDrainFound above the rate before it, over GoodputShare; the next
// drain then comes GoodputDrainQuick after the throttle. A drain that
// found none makes the next quiet GoodputDrainBackoff times the last one,
// and after GoodputDrainIdle of them in a row the bucket is steady again
// (and climbs): its quiet is at most GoodputDrainQuiet x
// GoodputDrainBackoff^(GoodputDrainIdle-1), 10.24 s. At each congestion
// event of a moving bucket the queue of callers moves back by one
// interval at the new rate: its head would otherwise leave at once, into
// the provider's empty bucket.
//
// Measured in the simulator (virtual time; seeds on which the goodput
// controller had at least the AWS SDK's adaptive mode's goodput and fewer
// rejections, of 30), the moving mode raised the wins on tenant, whose
// limit moves every 10 s, from 15, 16, 14 and 17 to 21, 21, 23 and 20 on
// seeds 1-30, 31-60, 61-90 and 91-120 (its constants were chosen on the
// first 60), and cut tenant's rejections from 2.97% to 2.43% of requests
// (seeds 1-30), while default and drop kept their wins (27 to 30 either
// way) and default's rejections fell from 2.18% to 1.33%, most of it the
// first event's halving: the rate no longer steps down from the
// configured one through a cascade of events.
//
// Fleet mode's shared buckets (package fleet) have no moving mode: it is
// not in the shared bucket's script.
const (
	GoodputRise       = 0.08
	GoodputRiseSecs   = 2 // seconds
	GoodputFirstShare = 0.5

	GoodputDrainQuiet   = 4 * time.Second
	GoodputDrainQuick   = 3 * time.Second
	GoodputDrainBackoff = 1.6
	GoodputDrainFactor  = 2
	GoodputDrainGrow    = 2 * time.Second
	GoodputDrainFound   = 0.03
	GoodputDrainIdle    = 3

	GoodputMovingSprintFactor = 3
)

// moving is a goodput bucket's moving mode. The bucket's mu guards it.
type moving struct {
	on       bool          // the limit was seen to move: drain instead of climbing
	refill   float64       // the refill measured at the last event that measured one
	draining bool          // a drain runs until the next throttle
	idle     int           // drains in a row that found no rise
	quiet    time.Duration // the time without a throttle before the next drain; 0 when steady
	before   float64       // the rate before the drain
	grew     time.Duration // the drain started, or last grew, at this time
	first    bool          // quiet is the first quiet after a short first event (firstQuiet)
}

// enter puts the bucket in moving mode, its next drain after quiet;
// first says that quiet is a short first event's (firstQuiet).
func (m *moving) enter(quiet time.Duration, first bool) {
	m.on, m.idle, m.quiet, m.first = true, 0, quiet, first
}

// firstQuiet is the quiet before the first drain after a short first
// event of a bucket whose burst lasts burstSecs at its ceiling: that long,
// between goodputLeast and GoodputDrainQuiet.
func firstQuiet(burstSecs float64) time.Duration {
	return min(GoodputDrainQuiet, max(goodputLeast*time.Second, time.Duration(burstSecs*float64(time.Second))))
}

// event applies the moving mode's rules at a goodput bucket's congestion
// event: ms is what the event measured, ceiling the bucket's, and
// burstSecs how long its burst lasts at its ceiling. It
// returns the rate to move to and whether the queue moves back by one
// interval. The drain, if one ran, ends with the throttle (Throttle ends
// it, event or not).
func (m *moving) event(ms measurement, ceiling, burstSecs float64) (float64, bool) {
	r := ms.rate
	if m.draining && m.first {
		// The event ending the first drain after a short first event:
		// from here on, the quiets are those that follow a first quiet
		// of GoodputDrainQuiet.
		m.first, m.quiet = false, GoodputDrainQuiet
	}
	switch {
	case ms.short:
		m.enter(firstQuiet(burstSecs), true)
	case m.on && m.draining && ms.refill > 0:
		r = math.Min(ceiling, GoodputShare*ms.refill)
		if ms.refill >= (1+GoodputDrainFound)*m.before/GoodputShare {
			m.idle, m.quiet = 0, GoodputDrainQuick
			break
		}
		if m.idle++; m.idle >= GoodputDrainIdle {
			m.on, m.idle, m.quiet = false, 0, 0 // steady: climbs again
			break
		}
		m.quiet = time.Duration(float64(m.quiet) * GoodputDrainBackoff)
	case !m.on && ms.refill > 0 && m.refill > 0 && ms.refill >= (1+GoodputRise)*m.refill:
		m.enter(GoodputDrainQuiet, false)
	}
	if ms.refill > 0 {
		m.refill = ms.refill
	}
	return r, m.on
}

// success applies a moving bucket's rules at a success at now, the rate
// being rate and the last throttle at lastThrottle: it starts a drain once
// the quiet has passed, and doubles one that met no throttle for
// GoodputDrainGrow. It returns the new rate, 0 when it does not change it;
// held says that the bucket is not to climb either.
func (m *moving) success(now, lastThrottle time.Duration, rate, ceiling float64) (r float64, held bool) {
	switch {
	case !m.on:
		return 0, false
	case rate >= ceiling:
		return 0, true
	case m.draining:
		if now-m.grew < GoodputDrainGrow {
			return 0, true
		}
		// A drain that met no throttle: the limit is above it still.
	case now-lastThrottle < m.quiet:
		return 0, true
	default:
		m.draining, m.before = true, rate
	}
	m.grew = now
	return math.Min(ceiling, GoodputDrainFactor*rate), true
}
