package bucket

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// millis is n milliseconds.
func millis(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// A script step: one or more calls on a goodput bucket, or a check of it.
type step func(t *testing.T, b *Bucket)

// succ is a success at at.
func succ(at time.Duration) step {
	return func(t *testing.T, b *Bucket) { b.Success(at) }
}

// serve is n successes spread evenly over [from, to), the first at from:
// a refill of n / (to - from) a second when from is the slot after an
// event at which a throttle at to measures.
func serve(from, to time.Duration, n int) step {
	return func(t *testing.T, b *Bucket) {
		for i := range time.Duration(n) {
			b.Success(from + i*(to-from)/time.Duration(n))
		}
	}
}

// throttle is a throttle at at, with no pause.
func throttle(at time.Duration) step {
	return func(t *testing.T, b *Bucket) { b.Throttle(at, 0) }
}

// queue reserves or gives back tokens until n are queued at at.
func queue(at time.Duration, n float64) step {
	return func(t *testing.T, b *Bucket) { setQueue(b, at, n) }
}

// rateIs checks the rate at this point of a script.
func rateIs(want float64) step {
	return func(t *testing.T, b *Bucket) {
		t.Helper()
		approx(t, "rate", b.ep.Load().p.rate, want)
	}
}

// mvIs checks the moving mode's state at this point of a script.
func mvIs(want mvState) step {
	return func(t *testing.T, b *Bucket) {
		t.Helper()
		if got := mvOf(b); got != want {
			t.Fatalf("moving mode %+v, want %+v", got, want)
		}
	}
}

// mvState is what the transition table asserts of the moving mode.
type mvState struct {
	on, draining bool
	idle         int
	quiet        time.Duration
}

func mvOf(b *Bucket) mvState {
	if b.l == nil {
		return mvState{}
	}
	m := b.l.mv
	return mvState{on: m.on, draining: m.draining, idle: m.idle, quiet: m.quiet}
}

// shortFirst is a first event too soon after counting began to measure
// anything: 5 successes told by 40 ms, a throttle at 0.1 s. The rate moves
// to GoodputFirstShare of the ceiling, and the bucket is moving.
var shortFirst = []step{serve(0, millis(50), 5), throttle(millis(100))}

// movingBase is shortFirst, then 4 successes a second from the slot after
// it (0.2 s) and a second event at 3.2 s: a moving bucket at 0.99 x 4 =
// 3.96 rps (under the cap of 0.97 x 10), last throttled at 3.2 s, its
// next drain due GoodputDrainQuiet after it. The next event measures from
// 3.3 s.
var movingBase = with(shortFirst,
	serve(millis(200), millis(3200), 12), throttle(millis(3200)),
	rateIs(3.96), mvIs(mvState{on: true, quiet: 4 * sec}))

// steadyTwo is a steady bucket's first two events: 10 a second for 5 s and
// a throttle at 5 s (0.99 x 10 = 9.9 rps), then 10 a second again and a
// throttle at 8.1 s, which measures a refill of 10 a second over 3 s (the
// cap: 0.97 x 9.9 = 9.603 rps). The third event measures from 8.2 s.
var steadyTwo = []step{
	serve(0, 5*sec, 50), throttle(5 * sec),
	serve(millis(5100), millis(8100), 30), throttle(millis(8100)),
	rateIs(GoodputCap * 9.9), mvIs(mvState{}),
}

// emptyDrain is movingBase's first drain, which finds no rise: 4 a second
// from 3.3 s, the drain at the first success once GoodputDrainQuiet has
// passed (7.3 s: 3.96 -> 7.92), and a throttle at 8.3 s that measures a
// refill of 4 a second, under (1 + GoodputDrainFound) x 3.96 / 0.99 =
// 4.12. The rate moves to 0.99 x 4 = 3.96; the next quiet is
// GoodputDrainBackoff x GoodputDrainQuiet; the next event measures from
// 8.4 s.
var emptyDrain = with(movingBase,
	serve(millis(3300), millis(8300), 20), throttle(millis(8300)),
	rateIs(3.96), mvIs(mvState{on: true, idle: 1, quiet: millis(6400)}))

// with is prefix, then steps.
func with(prefix []step, steps ...step) []step {
	return append(append([]step{}, prefix...), steps...)
}

// The moving mode's rules, one row each: a scripted sequence of calls on a
// goodput bucket (ceiling 20 unless the row says), with checks along the
// way, and the rate and the moving mode's state after it. The rows'
// comments give the arithmetic. The moving mode's parameters are written
// out as numbers (GoodputDrainQuiet as 4 s, GoodputDrainFactor as 2, ...),
// so that a change of one fails a row.
func TestGoodputMovingTransitions(t *testing.T) {
	for _, c := range []struct {
		name    string
		ceiling float64
		burst   float64 // 0: 4 x ceiling
		steps   []step
		rate    float64
		mv      mvState
	}{
		// Steady -> moving, at a rise of the measured refill.
		{
			// Third event: 22 over the 2 s from 8.2 s, 11 a second, 10%
			// above the second's 10: moving. The rate is the cap, 0.97
			// x 9.603.
			name:  "a 3rd event measuring a refill 10% above the last: moving",
			steps: with(steadyTwo, serve(millis(8200), millis(10200), 22), throttle(millis(10200))),
			rate:  GoodputCap * GoodputCap * 9.9, mv: mvState{on: true, quiet: 4 * sec},
		},
		{
			name:  "a 3rd event measuring a refill 5% above the last: steady",
			steps: with(steadyTwo, serve(millis(8200), millis(10200), 21), throttle(millis(10200))),
			rate:  GoodputCap * GoodputCap * 9.9, mv: mvState{},
		},
		{
			// 30 over the 1.5 s from 8.2 s: twice the refill, measured
			// over less than GoodputRiseSecs, compares with nothing.
			name:  "a rise measured over less than GoodputRiseSecs: steady",
			steps: with(steadyTwo, serve(millis(8200), millis(9700), 30), throttle(millis(9700))),
			rate:  GoodputCap * GoodputCap * 9.9, mv: mvState{},
		},
		{
			// No success from 8.1 s to 13.3 s, more than GoodputWindow
			// after the event's slot: the event at 16 s measures again
			// as a first one, 20 a second over 2.7 s, twice the last
			// refill, but what the client sent, not a refill: nothing
			// to compare.
			name:  "an event after a gap, measuring 2x the last refill: steady",
			steps: with(steadyTwo, serve(millis(13300), 16*sec, 54), throttle(16*sec)),
			rate:  GoodputCap * GoodputCap * 9.9, mv: mvState{},
		},
		{
			// The second event measures 30 a second over 3 s, three
			// times what the first measured (10 over its windows), but
			// the first measured no refill to compare with (it measures
			// the client's sending).
			name: "the 2nd event, measuring 3x the 1st: steady",
			steps: []step{
				serve(0, 5*sec, 50), throttle(5 * sec),
				serve(millis(5100), millis(8100), 90), throttle(millis(8100)),
			},
			rate: GoodputCap * 9.9, mv: mvState{},
		},

		// The short first event.
		{
			name:  "a first event 0.1 s after counting began, 5 told: x GoodputFirstShare, moving",
			steps: shortFirst,
			rate:  10, mv: mvState{on: true, quiet: 4 * sec},
		},
		{
			// The first quiet is how long the bucket's burst lasts at
			// its ceiling, between 1 s (goodputLeast) and 4 s
			// (GoodputDrainQuiet): 50 at 20 rps, 2.5 s.
			name:  "a short first event of a bucket whose burst lasts 2.5 s: the first drain after 2.5 s",
			burst: 50, steps: shortFirst,
			rate: 10, mv: mvState{on: true, quiet: millis(2500)},
		},
		{
			name:  "a short first event of a bucket whose burst lasts 0.5 s: the first drain after 1 s",
			burst: 10, steps: shortFirst,
			rate: 10, mv: mvState{on: true, quiet: sec},
		},
		{
			name:  "a short first event of a bucket whose burst lasts 8 s: the first drain after 4 s",
			burst: 160, steps: shortFirst,
			rate: 10, mv: mvState{on: true, quiet: 4 * sec},
		},
		{
			// A burst of 1 s: 5 a second from 0.2 s, the drain at the
			// first success 1 s after the throttle (1.2 s: 10 -> 20),
			// and a throttle at 1.5 s, 1.3 s after the slot its
			// measurement starts from: 6 served, 0.99 x 6 / 1.3 rps,
			// too short to compare with the drain's rate. The next
			// quiet is GoodputDrainQuiet, not the first one again.
			name:  "a first drain ended by an event too soon to compare: the next quiet 4 s",
			burst: 20,
			steps: with(shortFirst,
				serve(millis(200), millis(1400), 6),
				rateIs(20), mvIs(mvState{on: true, draining: true, quiet: sec}),
				throttle(millis(1500))),
			rate: GoodputShare * 6 / 1.3, mv: mvState{on: true, quiet: 4 * sec},
		},
		{
			// Then 5 a second from 1.6 s: no drain at 5.4 s (3.9 s after
			// the throttle), one at 5.6 s.
			name:  "and the next drain comes 4 s after it",
			burst: 20,
			steps: with(shortFirst,
				serve(millis(200), millis(1400), 6), throttle(millis(1500)),
				serve(millis(1600), millis(5600), 20),
				rateIs(GoodputShare*6/1.3), mvIs(mvState{on: true, quiet: 4 * sec}),
				serve(millis(5600), millis(5700), 1)),
			rate: 2 * GoodputShare * 6 / 1.3, mv: mvState{on: true, draining: true, quiet: 4 * sec},
		},
		{
			// A burst of 1 s: 9 served from 0.2 s to 2.16 s, the drain at
			// 1.18 s (10 -> 20), a throttle at 2.5 s: a refill of 9 over
			// 2.3 s, 3.91, under (1 + GoodputDrainFound) x 10 / 0.99 =
			// 10.4: none found, and the next quiet is 1.6 x 4 s, as after
			// a first quiet of 4 s (not 1.6 x 1 s).
			name:  "a first drain after a short quiet that found no rise: the next quiet 6.4 s",
			burst: 20,
			steps: with(shortFirst, serve(millis(200), millis(2400), 9), throttle(millis(2500))),
			rate:  GoodputShare * 9 / 2.3, mv: mvState{on: true, idle: 1, quiet: millis(6400)},
		},
		{
			name:  "a first event 0.1 s after counting began, none told: halved, steady",
			steps: []step{throttle(millis(100))},
			rate:  DecreaseFactor * 20, mv: mvState{},
		},
		{
			// 5 told over 1.25 s: 0.99 x 4.
			name:  "a first event 1.25 s after counting began: measured, steady",
			steps: []step{serve(0, millis(50), 5), throttle(millis(1250))},
			rate:  GoodputShare * 4, mv: mvState{},
		},

		// No climb while moving.
		{
			// 9.9 + GoodputStep x 20 at GoodputQuiet after the throttle.
			name:  "a steady bucket climbs at GoodputQuiet",
			steps: []step{serve(0, 5*sec, 50), throttle(5 * sec), succ(5*sec + GoodputQuiet - 1), rateIs(9.9), succ(5*sec + GoodputQuiet)},
			rate:  9.9 + GoodputStep*20, mv: mvState{},
		},
		{
			// A drain from 9.5 s (3.96 -> 7.92), which would double
			// only at 11.5 s; at 3.2 s + GoodputQuiet = 11.2 s a steady
			// bucket would climb.
			name:  "a moving bucket does not climb at GoodputQuiet",
			steps: with(movingBase, succ(millis(9500)), rateIs(7.92), succ(millis(3200)+GoodputQuiet)),
			rate:  7.92, mv: mvState{on: true, draining: true, quiet: 4 * sec},
		},
		{
			// After two drains that found no rise (see emptyDrain) the
			// quiet is 10.24 s: at 16.4 s + GoodputQuiet it neither
			// climbs nor drains.
			name: "a moving bucket within a quiet longer than GoodputQuiet does not climb",
			steps: with(emptyDrain, serve(millis(8400), millis(16400), 32), throttle(millis(16400)),
				rateIs(3.96), serve(millis(16500), millis(16400)+GoodputQuiet+sec, 40)),
			rate: 3.96, mv: mvState{on: true, idle: 2, quiet: millis(10240)},
		},

		// Drains.
		{
			name:  "no drain before the quiet has passed",
			steps: with(movingBase, succ(millis(7200)-1)),
			rate:  3.96, mv: mvState{on: true, quiet: 4 * sec},
		},
		{
			name:  "a drain at the first success once the quiet has passed: x GoodputDrainFactor",
			steps: with(movingBase, succ(millis(7200)-1), rateIs(3.96), succ(millis(7200))),
			rate:  7.92, mv: mvState{on: true, draining: true, quiet: 4 * sec},
		},
		{
			// Ceiling 15: the events at 5 s, 8.1 s and 10.2 s move to
			// 9.9, 9.603 and 9.31491; the drain at 14.2 s to 15, not
			// 18.63.
			name:    "a drain stops at the ceiling",
			ceiling: 15,
			steps:   with(steadyTwo, serve(millis(8200), millis(10200), 22), throttle(millis(10200)), rateIs(GoodputCap*GoodputCap*9.9), succ(millis(14200))),
			rate:    15, mv: mvState{on: true, draining: true, quiet: 4 * sec},
		},
		{
			name: "a drain doubles again after GoodputDrainGrow without a throttle, not sooner",
			steps: with(movingBase, succ(millis(7200)), rateIs(7.92),
				succ(millis(9200)-1), rateIs(7.92), succ(millis(9200)), rateIs(15.84),
				succ(millis(11200)-1), rateIs(15.84), succ(millis(11200))),
			rate: 20, mv: mvState{on: true, draining: true, quiet: 4 * sec},
		},

		// The event ending a drain.
		{
			// 39 over the 5 s from 3.3 s, the drain at 7.27 s (3.96 ->
			// 7.92): a refill of 7.8, a rise (above 4.12). 0.99 x 7.8 =
			// 7.722, above GoodputCap x 7.92 = 7.6824.
			name:  "the event ending a drain moves to GoodputShare x the refill, without GoodputCap",
			steps: with(movingBase, serve(millis(3300), millis(8300), 39), rateIs(7.92), throttle(millis(8300))),
			rate:  GoodputShare * 7.8, mv: mvState{on: true, quiet: 3 * sec},
		},
		{
			// 41 over the 10 s from 3.3 s (the drain doubles up to the
			// ceiling): 4.1, under (1 + 0.03) x 3.96 / 0.99 = 4.12.
			name:  "a drain measuring a refill just under the rise: found none",
			steps: with(movingBase, serve(millis(3300), millis(13300), 41), rateIs(20), throttle(millis(13300))),
			rate:  GoodputShare * 4.1, mv: mvState{on: true, idle: 1, quiet: millis(6400)},
		},
		{
			name:  "a drain measuring a refill just over the rise: found one",
			steps: with(movingBase, serve(millis(3300), millis(13300), 42), throttle(millis(13300))),
			rate:  GoodputShare * 4.2, mv: mvState{on: true, quiet: 3 * sec},
		},
		{
			// After emptyDrain (idle 1), 5 a second from 8.4 s, the
			// drain at 14.8 s (the quiet is 6.4 s), a refill of 5: a
			// rise. The next drain comes GoodputDrainQuick after the
			// throttle (19.4 s), not sooner.
			name: "a drain that found a rise: the next quiet GoodputDrainQuick, idle reset",
			steps: with(emptyDrain, serve(millis(8400), millis(14600), 31), rateIs(3.96), serve(millis(14600), millis(16400), 9), rateIs(7.92), throttle(millis(16400)),
				rateIs(GoodputShare*5), mvIs(mvState{on: true, quiet: 3 * sec}),
				serve(millis(16500), millis(19300), 14), succ(millis(19400)-1), rateIs(GoodputShare*5), succ(millis(19400))),
			rate: 2 * GoodputShare * 5, mv: mvState{on: true, draining: true, quiet: 3 * sec},
		},
		{
			// Three drains that found no rise, 4 a second throughout:
			// at 7.3 s, 14.9 s (quiet 6.4 s) and 26.75 s (quiet 10.24
			// s); the third leaves the moving mode, its quiet and idle
			// drains cleared. The bucket then climbs GoodputQuiet
			// after the last throttle (27.5 s), by GoodputStep x 20.
			name: "GoodputDrainIdle drains that found none: steady again, and climbs",
			steps: with(emptyDrain,
				serve(millis(8400), millis(16400), 32), rateIs(7.92), throttle(millis(16400)),
				rateIs(3.96), mvIs(mvState{on: true, idle: 2, quiet: millis(10240)}),
				serve(millis(16500), millis(26500), 40), rateIs(3.96), serve(millis(26500), millis(27500), 4), rateIs(7.92), throttle(millis(27500)),
				rateIs(3.96), mvIs(mvState{}),
				serve(millis(27600), millis(35500), 32), rateIs(3.96), succ(millis(27500)+GoodputQuiet)),
			rate: 3.96 + GoodputStep*20, mv: mvState{},
		},

		// Sprints.
		{
			// 40 queued at 4.2 s, 30 at 7.2 s: the sprint's rule holds
			// there, where the drain's quiet has passed too. The sprint
			// comes first, and no drain comes during it.
			name: "a moving bucket's sprint is GoodputMovingSprintFactor, and no drain during it",
			steps: with(movingBase, queue(millis(4200), 40), succ(millis(4200)), queue(millis(7200), 30), succ(millis(7200)),
				rateIs(11.88), succ(millis(9300)), succ(millis(11400))),
			rate: 11.88, mv: mvState{on: true, quiet: 4 * sec},
		},
		{
			// A drain at 7.2 s (the queue empty: no sprint), then the
			// sprint's rule: 40 queued at 7.5 s, 30 at 8 s.
			name:  "no sprint during a drain",
			steps: with(movingBase, succ(millis(7200)), queue(millis(7500), 40), succ(millis(7500)), queue(millis(8000), 30), succ(millis(8000))),
			rate:  7.92, mv: mvState{on: true, draining: true, quiet: 4 * sec},
		},

		// A throttle that makes no event. With times in order it never
		// meets a drain: a drain starts at least GoodputDrainQuick after
		// the last throttle, so the throttle after it is more than
		// DecreaseInterval after the last event. Here it comes with a
		// time 3.5 s before the drain's, within DecreaseInterval of the
		// last event (3.2 s): the rate stays, the drain ends.
		{
			name:  "a throttle within DecreaseInterval of the last event ends a drain",
			steps: with(movingBase, succ(millis(7200)), rateIs(7.92), throttle(millis(3700))),
			rate:  7.92, mv: mvState{on: true, quiet: 4 * sec},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			ceiling := c.ceiling
			if ceiling == 0 {
				ceiling = 20
			}
			burst := c.burst
			if burst == 0 {
				burst = 4 * ceiling // a first quiet of 4 s (firstQuiet)
			}
			b := New(Spec{Rate: ceiling, Burst: burst, Floor: 0.2, Goodput: true}, 0)
			for _, s := range c.steps {
				s(t, b)
			}
			approx(t, "rate", b.ep.Load().p.rate, c.rate)
			if got := mvOf(b); got != c.mv {
				t.Fatalf("moving mode %+v, want %+v", got, c.mv)
			}
		})
	}
}

// At a moving bucket's congestion event the queue of callers moves back
// by one interval at the new rate, its head leaving one interval later
// than a steady bucket's at the same event: 10 tokens queued at 20 rps, an
// event that moves the rate to 10, and the next caller waits 11 intervals
// of 0.1 s when steady, 12 when moving. Likewise at a later event of a
// moving bucket.
func TestGoodputMovingEventMovesTheQueueBack(t *testing.T) {
	for _, c := range []struct {
		name           string
		moving, steady []step // the history up to the event
		at             time.Duration
		rate           float64 // after the event
	}{
		{
			name:   "the short first event",
			moving: []step{serve(0, millis(50), 5)}, steady: nil,
			at: millis(100), rate: 10,
		},
		{
			name:   "a later event",
			moving: with(shortFirst, serve(millis(200), millis(3200), 12)),
			steady: []step{throttle(millis(100)), serve(millis(200), millis(3200), 12)},
			at:     millis(3200), rate: 3.96,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var waits [2]time.Duration
			for i, steps := range [][]step{c.steady, c.moving} {
				b := New(Spec{Rate: 20, Burst: 20, Floor: 0.2, Goodput: true}, 0)
				for _, s := range steps {
					s(t, b)
				}
				setQueue(b, c.at, 10)
				if got := queued(b, c.at); got != 10 {
					t.Fatalf("%v queued", got)
				}
				b.Throttle(c.at, 0)
				approx(t, "rate", b.ep.Load().p.rate, c.rate)
				if b.l.mv.on != (i == 1) {
					t.Fatalf("moving %v, want %v", b.l.mv.on, i == 1)
				}
				waits[i] = b.Reserve(c.at)
			}
			interval := time.Duration(1e9 / c.rate)
			if want := 11 * interval; absDur(waits[0]-want) > 10 {
				t.Errorf("the steady bucket's next caller waits %v, want %v (the queue kept as tokens)", waits[0], want)
			}
			if waits[1]-waits[0] != interval {
				t.Errorf("the moving bucket's next caller waits %v, the steady one's %v: want one interval (%v) more", waits[1], waits[0], interval)
			}
		})
	}
}

// Random sequences of successes, throttles, reservations, cancels, pauses
// and waits on a goodput bucket, against a model of the moving mode built
// from its rules (see moving.go), fed what each congestion event measured.
// After every step: the rate is within [floor, ceiling]; the bucket's
// moving mode equals the model's; a success outside a sprint moves the
// rate only as the model says (a drain, or a climb of a steady bucket
// GoodputQuiet after the last throttle), and a throttle only as the
// model's event does; a drain starts only in the moving mode, not
// draining, once its quiet has passed since the last throttle, and not
// during a sprint, nor a sprint during a drain; the quiet is the bucket's
// burst time (within [1 s, 4 s]) from a short first event until the drain
// after it ends, and otherwise GoodputDrainQuick or within
// [GoodputDrainQuiet, GoodputDrainQuiet x
// GoodputDrainBackoff^(GoodputDrainIdle-1)] while moving, and a steady
// bucket has no quiet nor idle drains;
// a bucket leaves the moving mode only at the event ending the
// GoodputDrainIdle-th drain in a row that found no rise.
func TestGoodputMovingProperties(t *testing.T) {
	var shorts, rises, drains, grows, found, exits, firsts int
	defer func() {
		t.Logf("moving mode entered %d times at a short first event, %d at a rise; %d drains (%d grew, %d found a rise, %d ended a quiet shorter than 4 s); left %d times",
			shorts, rises, drains, grows, found, firsts, exits)
		if shorts == 0 || rises == 0 || drains == 0 || grows == 0 || found == 0 || exits == 0 || firsts == 0 {
			t.Error("a rule was never exercised: the test checks too little")
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		const ceiling, floor = 20.0, 0.5
		// Bursts lasting 0.5 s to 5 s at the ceiling: a short first
		// event's quiet is that long, between 1 s and 4 s.
		burst := float64(rapid.SampledFrom([]int{10, 20, 40, 60, 100}).Draw(t, "burst"))
		firstQuiet := min(4*time.Second, max(time.Second, time.Duration(burst/ceiling*float64(time.Second))))
		b := New(Spec{Rate: ceiling, Burst: burst, Floor: floor, Goodput: true}, 0)
		now := time.Duration(0)

		// The model: the moving mode's state, and what the rules read.
		var m moving
		lastThrottle, lastDecrease := never, never
		emptyInRow := 0                 // drains in a row that found no rise, counted apart from m.idle
		every := 100 * time.Millisecond // the pace of "rounds"

		rateNow := func() float64 { return b.ep.Load().p.rate }
		state := func() moving {
			if b.l == nil {
				return moving{}
			}
			return b.l.mv
		}
		success := func(t *rapid.T) {
			before, got := rateNow(), state()
			was := b.l != nil && b.l.sprinting
			during := was && now-b.l.sprinted < GoodputQuiet // a sprint lasts GoodputQuiet at most
			r, inc := b.Success(now)
			is := b.l != nil && b.l.sprinting
			after := state()
			if after.draining && !got.draining && !(m.on && !m.draining && now-lastThrottle >= m.quiet) {
				t.Fatalf("a drain at %v: moving %v, draining %v, %v since the last throttle (quiet %v)", now, m.on, m.draining, now-lastThrottle, m.quiet)
			}
			switch {
			case is && !was:
				if m.draining || after != got {
					t.Fatalf("a sprint at %v: draining %v, moving mode %+v -> %+v", now, m.draining, got, after)
				}
				return // the sprint's own rules: TestGoodputSprintProperties
			case during:
				if r != before || after != got {
					t.Fatalf("rate %v -> %v, moving mode %+v -> %+v during a sprint", before, r, got, after)
				}
				return
			}
			want := before
			switch {
			case !m.on:
				if r != before {
					if !inc || r < before || now-lastThrottle < GoodputQuiet {
						t.Fatalf("a steady bucket's rate %v -> %v (increased %v) at %v, %v after the last throttle", before, r, inc, now, now-lastThrottle)
					}
					want = r // a climb: its own tests check it
				}
			case before >= ceiling:
			case m.draining:
				if now-m.grew >= GoodputDrainGrow {
					want, m.grew = math.Min(ceiling, GoodputDrainFactor*before), now
					grows++
				}
			case now-lastThrottle >= m.quiet:
				want, m.draining, m.before, m.grew = math.Min(ceiling, GoodputDrainFactor*before), true, before, now
				drains++
			}
			if r != want || inc != (want != before) {
				t.Fatalf("success at %v: rate %v -> %v (increased %v), want %v; model %+v", now, before, r, inc, want, m)
			}
		}
		throttle := func(t *rapid.T) {
			rate, was := rateNow(), state()
			event := now-lastDecrease >= DecreaseInterval
			var meas measurement
			if event {
				cp := *b.goodput // what the event will measure, measured on a copy
				meas = cp.rate(now, rate)
			}
			r, dec := b.Throttle(now, 0)
			lastThrottle = now
			want := rate
			if event {
				lastDecrease = now
				drained := m.draining
				m.draining = false
				if drained && m.first {
					// The first drain after a short first event ended:
					// the quiets go on as after one of 4 s.
					m.first, m.quiet = false, 4*time.Second
					if firstQuiet < 4*time.Second {
						firsts++
					}
				}
				to := meas.rate
				if meas.short {
					to = GoodputFirstShare * rate
					if !m.on {
						shorts++
					}
					m.on, m.idle, m.quiet, m.first = true, 0, firstQuiet, true
					emptyInRow = 0
				}
				switch {
				case drained && meas.refill > 0:
					to = math.Min(ceiling, GoodputShare*meas.refill)
					if meas.refill >= (1+GoodputDrainFound)*m.before/GoodputShare {
						found++
						emptyInRow = 0
						m.idle, m.quiet = 0, GoodputDrainQuick
					} else {
						emptyInRow++
						if m.idle++; m.idle >= GoodputDrainIdle {
							m.on, m.idle, m.quiet = false, 0, 0
						} else {
							m.quiet = time.Duration(float64(m.quiet) * GoodputDrainBackoff)
						}
					}
				case !m.on && meas.refill > 0 && m.refill > 0 && meas.refill >= (1+GoodputRise)*m.refill:
					m.on, m.idle, m.quiet, m.first = true, 0, GoodputDrainQuiet, false
					emptyInRow = 0
					rises++
				}
				if meas.refill > 0 {
					m.refill = meas.refill
				}
				if to = math.Max(floor, to); to < rate {
					want = to
				}
			}
			m.draining = false
			if r != want || dec != (want < rate) {
				t.Fatalf("throttle at %v (event %v, measured %+v): rate %v -> %v (decreased %v), want %v", now, event, meas, rate, r, dec, want)
			}
			if after := state(); was.on && !after.on {
				if emptyInRow < GoodputDrainIdle {
					t.Fatalf("left the moving mode at %v after %d drains in a row that found no rise", now, emptyInRow)
				}
				exits++
			}
		}
		t.Repeat(withQueueActions(b, &now, map[string]func(*rapid.T){
			"pause": func(t *rapid.T) {
				b.Pause(now, time.Duration(rapid.IntRange(1, 3000).Draw(t, "ms"))*time.Millisecond)
			},
			"success": success,
			// Successes at a steady pace: a refill of 2 to 20 a second.
			"serve": func(t *rapid.T) {
				gap := time.Duration(rapid.IntRange(50, 500).Draw(t, "gap ms")) * time.Millisecond
				for range rapid.IntRange(1, 40).Draw(t, "n") {
					now += gap
					success(t)
				}
			},
			"throttle": throttle,
			// A new pace for the demand: a limit that moved.
			"pace": func(t *rapid.T) {
				every = time.Duration(rapid.IntRange(50, 500).Draw(t, "every ms")) * time.Millisecond
			},
			// Rounds of successes at the pace, each ended by a
			// throttle: the demand meeting the limit. A round lasts up to
			// 12 s, or (to reach the states after a few drains) up to 3 s
			// past the moving mode's quiet.
			"rounds": func(t *rapid.T) {
				for range rapid.IntRange(1, 6).Draw(t, "rounds") {
					d := time.Duration(rapid.IntRange(1, 12000).Draw(t, "ms")) * time.Millisecond
					if m.on && rapid.Bool().Draw(t, "past the quiet") {
						d = m.quiet + time.Duration(rapid.IntRange(1, 3000).Draw(t, "ms"))*time.Millisecond
					}
					end := now + d
					for now+every < end {
						now += every
						success(t)
					}
					now = end
					throttle(t)
				}
			},
			"": func(t *rapid.T) {
				if r := rateNow(); r < floor || r > ceiling {
					t.Fatalf("rate %v outside [%v, %v]", r, floor, ceiling)
				}
				got := state()
				if got != m {
					t.Fatalf("moving mode %+v, model %+v", got, m)
				}
				most := time.Duration(float64(GoodputDrainQuiet) * math.Pow(GoodputDrainBackoff, GoodputDrainIdle-1))
				switch q := got.quiet; {
				case got.first:
					if !got.on || q != firstQuiet || got.idle != 0 {
						t.Fatalf("a short first event's quiet %v (want %v), idle %v, moving %v", q, firstQuiet, got.idle, got.on)
					}
				case got.on && q != GoodputDrainQuick && (q < GoodputDrainQuiet || q > most) || !got.on && (q != 0 || got.idle != 0):
					t.Fatalf("quiet %v, idle %v (moving %v)", q, got.idle, got.on)
				}
				if got.draining && !got.on {
					t.Fatal("draining while steady")
				}
			},
		}))
	})
}
