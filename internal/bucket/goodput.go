package bucket

import (
	"math"
	"time"
)

// The opt-in "measured goodput" controller: on a congestion event the rate
// moves to GoodputShare of the rate at which the provider served
// successes, never above GoodputCap of the current rate; after
// GoodputQuiet without a throttle it climbs once per GoodputClimbInterval,
// by GoodputStep of the ceiling at first and by twice the last step at
// each climb after it, until the next throttle or the ceiling. Once the
// limit was seen to move, it drains instead of climbing (see
// GoodputDrainQuiet: the moving mode).
//
// The climb probes for capacity the provider gave back (a second tenant of
// the limit that slowed down or stopped): the decrease already put the
// rate within a few percent of what the provider serves, so the climb
// waits longer than AIMD's before it starts (a probe past a limit that did
// not move costs a rejection), and then finds a limit that rose by half in
// a few seconds rather than minutes. Measured in the simulator's tenant
// scenario (a limit that moves every 10 s), the doubling step raised the
// controller's mean goodput from 90.8% to 99.26% of the capacity (the AWS
// SDK's adaptive mode: 99.30%), at fewer rejections than that mode.
//
// What the provider served is measured since the previous congestion
// event: a throttle says the provider's bucket was empty, so the successes
// between two events are what it refilled in between, whatever the client
// sent. The first event has no earlier one to measure from: it counts the
// successes of the last GoodputWindow to 2 x GoodputWindow seconds, which
// bounds it by what the client sent (usually the cap then decides); one
// less than a second after counting began, with successes counted,
// measures nothing (see goodputLeast). So does an event after more than
// GoodputWindow without a success since the previous event or success,
// whichever is later (an outage, an open breaker, a pause, no demand):
// the client was not drawing on the
// provider's bucket then, and the time since the previous event would
// count it as a refill the provider never gave. The gap counts from the
// previous event too, not only from the last success, so that a scope
// whose first requests were throttled, and which then paused with no
// success yet, gets the rule as well.
const (
	GoodputShare  = 0.99
	GoodputCap    = 0.97
	GoodputStep   = 0.015
	GoodputWindow = 5 // seconds

	// GoodputQuiet is the time without a throttle before the goodput
	// controller climbs, and GoodputClimbInterval the time between two
	// climbs; GoodputMaxDoublings bounds how often the step doubles.
	GoodputQuiet         = 8 * time.Second
	GoodputClimbInterval = time.Second
	GoodputMaxDoublings  = 10

	// goodputSlot is the resolution of the measurement: it starts at the
	// slot after the one of the previous event, so that the answers to
	// requests sent before the event are left out.
	goodputSlot = 100 * time.Millisecond
)

// The goodput controller's sprint at the end of a burst of demand: once
// GoodputSprintQuiet has passed since the last throttle, when the queue
// of callers waiting for the bucket's tokens has fallen to
// GoodputSprintFall of the longest it was since that throttle (the demand
// is ending) while still holding at least GoodputSprintQueue of tokens at
// the current rate, the rate moves to GoodputSprintFactor times itself
// (GoodputMovingSprintFactor in the moving mode; not above the ceiling)
// until the next throttle, or until GoodputQuiet without one has passed
// since it began: the limit is then above the sprint's rate, and the
// bucket climbs (or, in the moving mode, drains) from it as after any
// quiet. No climb or drain happens during a sprint, no sprint during a
// drain, and there is at most one between two throttles.
//
// Without that end, a sprint in the middle of a long demand that met no
// throttle held the rate for good: in an outside-in trial, three
// processes of their own governors sharing a limit of 2 rps, a leaf of
// one process, at its floor of 0.2 rps, sprinted to 0.4 rps and sent a
// call every 2.5 s for its last 80 s with no throttle, the limit free,
// and a leaf of another did the same for 65 s.
//
// Paced at GoodputShare of what the provider served, and finding a limit
// that rose only when it climbs, the controller leaves part of the
// provider's refill unused: the provider stores it, up to its burst. A
// sprint spends that store on the last calls of a burst of demand, which
// would otherwise leave it unused and finish later. It costs at most one
// congestion event, measured as any other, and the queue that is still
// left gives a throttled call time to wait out its backoff and be retried
// before the last of the queue has gone: without that least queue, the
// retry of a call throttled in the last second becomes the last call, and
// the sprint makes the burst finish later, not sooner. Measured in the
// simulator's scenarios over seeds 1-30 and 31-60 in virtual time, the
// sprint raised the controller's wins against the AWS SDK's adaptive mode
// from 28 and 29 to 29 and 30 on a steady limit (default), and from 26
// and 24 to 30 and 28 on a limit that drops (drop).
//
// Fleet mode's shared buckets (package fleet) do not sprint: their
// callers hold tokens leased from Redis at fixed times, which a rate
// change does not move, so a sprint would reach none of the callers
// already queued.
const (
	GoodputSprintQuiet  = 4 * time.Second
	GoodputSprintFall   = 0.85
	GoodputSprintQueue  = 2 * time.Second
	GoodputSprintFactor = 2
)

// goodputStep is the share of the ceiling the goodput controller's climb
// number climbs (from 0) since the last throttle adds: GoodputStep,
// doubling with each climb.
func goodputStep(climbs int) float64 {
	return math.Ldexp(GoodputStep, min(climbs, GoodputMaxDoublings))
}

// served counts the successes of a goodput bucket. The bucket's mu guards
// it.
type served struct {
	total int64 // every success

	// Since the previous congestion event: the start of the slot after it
	// (0: no event yet), and total at that time, taken by the first success
	// counted from then on.
	from    time.Duration
	fromN   int64
	fromSet bool

	// Before the first event, or since a gap: the successes of the
	// current GoodputWindow (number k since created) and of the one
	// before.
	created   time.Duration
	k         int64
	cur, prev int64
	last      time.Duration // the last success; 0: none yet
}

func newServed(now time.Duration) *served { return &served{created: now} }

const goodputWindow = GoodputWindow * time.Second

// goodputLeast is the shortest time a measurement divides by, in seconds.
// A first event sooner than that after counting began (a burst of demand
// that met the provider's limit at once) measures nothing: what was served
// is the provider's stored burst more than its rate, and the answers to
// the burst's last requests, sent together with the throttled one, may
// not be counted yet (in process they are told in any order; a fleet's
// reach Redis up to a slot later). Dividing the few successes counted by
// a second set the rate to them: at 20 rps with 64 callers, 19 counted of
// 20 served gave 18.8 rps for the rest of the run in process, 17 of 21 in
// a fleet 16.8 rps (goodput 86.4%). Such an event moves the rate to
// GoodputFirstShare of itself and puts the bucket in the moving mode,
// whose first drain finds the limit (fleet mode's shared buckets, which
// have no moving mode, move to GoodputCap of the rate), and the next
// event measures from it. One with
// nothing counted halves the rate, as any event that counted nothing: a
// scope that serves nothing (dead, or its limit taken by another tenant)
// is not held near the rate it was throttled at (in the simulator's
// estate with a dead operation, holding it there made the scan 1.07 times
// the ideal, against 1.05).
const goodputLeast = 1

// gap starts counting again at now, as if no event had happened, after a
// gap of more than GoodputWindow since the last success or the previous
// event, whichever is later.
func (s *served) gap(now time.Duration) {
	if ref := max(s.last, s.from); ref > 0 && now-ref > goodputWindow {
		s.from, s.fromSet, s.created, s.k, s.cur, s.prev = 0, false, now, 0, 0, 0
	}
}

// count counts one success.
func (s *served) count(now time.Duration) {
	s.gap(now)
	s.last = now
	if s.from > 0 && !s.fromSet && now >= s.from {
		s.fromN, s.fromSet = s.total, true
	}
	s.total++
	if s.from == 0 {
		switch k := int64((now - s.created) / goodputWindow); {
		case k == s.k+1:
			s.prev, s.cur, s.k = s.cur, 0, k
		case k > s.k:
			s.prev, s.cur, s.k = 0, 0, k
		}
		s.cur++
	}
}

// measurement is what a congestion event measured: the rate to move to,
// and the provider's refill it was taken from.
type measurement struct {
	rate float64 // the rate the controller moves to

	// refill is the successes per second since the previous event, over
	// at least GoodputRiseSecs: 0 for the first event, one after a gap,
	// or one sooner than that after the previous event, which measure
	// the client's sending or too little to compare.
	refill float64

	// short says the event was a first one too soon after counting began
	// to measure anything (see goodputLeast).
	short bool
}

// rate measures a congestion event at now, from rate: it moves to
// GoodputShare of the successes per second since the previous event (or,
// for the first, over the current and the previous window), never above
// GoodputCap of rate, and to half of rate when nothing was served; a first
// event less than goodputLeast after counting began that counted successes
// measures nothing and moves to GoodputFirstShare of rate, the bucket
// then moving (see goodputLeast).
func (s *served) rate(now time.Duration, rate float64) measurement {
	s.gap(now) // an event after a gap measures nothing, as a success after one
	var n int64
	since, first := s.from, s.from == 0
	if !first {
		if s.fromSet {
			n = s.total - s.fromN
		}
	} else {
		k := int64((now - s.created) / goodputWindow)
		switch k {
		case s.k:
			n = s.cur + s.prev
		case s.k + 1:
			n = s.cur
		}
		since = max(s.created, s.created+time.Duration(k-1)*goodputWindow)
	}
	s.from, s.fromSet = (now/goodputSlot+1)*goodputSlot, false
	secs := (now - since).Seconds()
	switch {
	case n == 0 || secs <= 0:
		return measurement{rate: rate * DecreaseFactor}
	case first && secs < goodputLeast:
		return measurement{rate: GoodputFirstShare * rate, short: true} // too short to measure: see goodputLeast
	}
	refill := float64(n) / math.Max(secs, goodputLeast)
	m := measurement{rate: math.Min(GoodputCap*rate, GoodputShare*refill)}
	if !first && secs >= GoodputRiseSecs {
		m.refill = refill
	}
	return m
}

// sprint applies the goodput controller's sprint rule at a success at
// now, the rate being rate, and returns the rate after it and whether it
// sprinted. It tracks the longest queue since the last throttle, so it
// runs at every success of a goodput bucket once throttled. mu must be
// held.
func (b *Bucket) sprint(now time.Duration, rate float64) (float64, bool) {
	l := b.l
	if l == nil || l.lastThrottle == never || l.sprinting || l.mv.draining {
		return rate, false
	}
	e, t := b.current()
	if e.paused > now {
		return rate, false
	}
	queue := float64(t-now) / float64(e.p.interval) // tokens reserved ahead of now
	l.queuePeak = math.Max(l.queuePeak, queue)
	if rate >= b.cfg.ceiling || now-l.lastThrottle < GoodputSprintQuiet ||
		queue > GoodputSprintFall*l.queuePeak || queue < GoodputSprintQueue.Seconds()*rate {
		return rate, false
	}
	l.sprinting, l.sprinted = true, now
	f := float64(GoodputSprintFactor)
	if l.mv.on {
		f = GoodputMovingSprintFactor
	}
	rate = math.Min(b.cfg.ceiling, f*rate)
	b.setRate(now, rate, false, false)
	return rate, true
}
