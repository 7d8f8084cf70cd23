//go:build go1.25

package bucket

import (
	"github.com/cloudg/cloudg/state"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const sec = time.Second

// Spec is the bucket settings type, shortened for the tables below.
type Spec = state.BucketSpec

func approx(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func TestReserveQueuesInArrivalOrder(t *testing.T) {
	// The spec's worked example: 2 rps, burst 2, six callers at once wait
	// 0, 0, 0.5, 1.0, 1.5 and 2.0 seconds: 5.0 s in all, done at 2.0 s.
	b := New(Spec{Rate: 2, Burst: 2}, 0)
	var total time.Duration
	want := []time.Duration{0, 0, sec / 2, sec, 3 * sec / 2, 2 * sec}
	for i, w := range want {
		got := b.Reserve(0)
		if got != w {
			t.Fatalf("caller %d waits %v, want %v", i, got, w)
		}
		total += got
	}
	if total != 5*sec {
		t.Fatalf("total wait %v, want 5s", total)
	}
}

func TestCapacityDefaultsToTwiceTheRateAndAtLeastOne(t *testing.T) {
	approx(t, "capacity", Spec{Rate: 3}.Capacity(), 6)
	approx(t, "capacity", Spec{Rate: 0.2}.Capacity(), 1)
	approx(t, "capacity", Spec{Rate: 20, Burst: 100}.Capacity(), 100)
}

func TestRefillStopsAtCapacity(t *testing.T) {
	b := New(Spec{Rate: 10, Burst: 5}, 0)
	for range 5 {
		if w := b.Reserve(0); w != 0 {
			t.Fatalf("burst token waited %v", w)
		}
	}
	// An hour later the bucket holds 5 tokens, not 36,000.
	for range 5 {
		if w := b.Reserve(3600 * sec); w != 0 {
			t.Fatalf("refilled token waited %v", w)
		}
	}
	if w := b.Reserve(3600 * sec); w != sec/10 {
		t.Fatalf("sixth token waited %v, want 100ms", w)
	}
}

// A full bucket reads exactly its capacity, at any rate: its capacity and
// its interval are whole nanoseconds, whose ratio can be a hair over the
// capacity (3 rps and 200 tokens read 200.000000198), so that a bucket
// made by a refused call read more tokens than a fresh one's 200.
func TestFullBucketReadsItsCapacity(t *testing.T) {
	for _, rate := range []float64{3, 0.9888, 0.8484, 7, 13.3, 1000} {
		for _, burst := range []float64{1, 2, 5, 200} {
			b := New(Spec{Rate: rate, Burst: burst}, 0)
			if got := b.Snapshot(3600 * sec).Tokens; got != burst {
				t.Errorf("%v rps, burst %v: a full bucket reads %v tokens", rate, burst, got)
			}
		}
	}
}

// CancelAt gives a token back as far as the reservations after it allow:
// the queue's last, or a stored token; not one with others queued after
// it (the next caller would go beside the last of them, two at once
// through a burst of 1), nor one during a pause no reservation waits
// behind (due before the pause, which counted it as spent).
func TestCancelAtGivesBackOnlyWhatNoLaterReservationHolds(t *testing.T) {
	b := New(Spec{Rate: 1, Burst: 1}, 0)
	var at []time.Duration
	for range 4 {
		at = append(at, b.Reserve(0)) // 0, 1, 2 and 3 s
	}
	b.CancelAt(0, at[1])
	if w := b.Reserve(0); w != 4*sec {
		t.Fatalf("after the 1 s token was cancelled, with the 2 and 3 s ones still queued: wait %v, want 4s", w)
	}
	b.CancelAt(0, 4*sec) // the queue's last
	if w := b.Reserve(0); w != 4*sec {
		t.Fatalf("after the last token was cancelled: wait %v, want 4s", w)
	}
	b.CancelAt(10*sec, 3*sec) // due, no queue: stored again
	if s := b.Snapshot(10 * sec); s.Tokens != 1 {
		t.Fatalf("a due token given back to a bucket with no queue: %v tokens, want 1 (the burst)", s.Tokens)
	}

	p := New(Spec{Rate: 1, Burst: 5}, 0)
	due := p.Reserve(0) // a stored token, due at once
	p.Pause(sec, 60*sec)
	p.CancelAt(2*sec, due)
	if s := p.Snapshot(2 * sec); s.Tokens != 0 {
		t.Fatalf("a token due before a pause, given back during it: %v tokens at its end, want 0", s.Tokens)
	}
	w := p.Reserve(2 * sec)
	p.CancelAt(2*sec, 2*sec+w) // reserved during the pause: back
	if w2 := p.Reserve(2 * sec); w2 != w {
		t.Fatalf("after a token reserved during the pause was cancelled: wait %v, want %v", w2, w)
	}
}

// A reservation given back with others queued after it moves them a
// token earlier, and they follow it with their tickets: the queue is as
// if it had never been made. A queue whose callers give up their places
// is not pushed later by them.
func TestCancelTicketMovesTheQueueAfterIt(t *testing.T) {
	b := New(Spec{Rate: 1, Burst: 1}, 0)
	b.Reserve(0) // the stored token
	var tks []Ticket
	for range 4 {
		_, tk := b.ReserveTicket(0)
		tks = append(tks, tk)
	}
	b.CancelTicket(0, tks[1]) // due at 2 s, with 3 s and 4 s after it
	for i, want := range []time.Duration{sec, 0, 2 * sec, 3 * sec} {
		if i == 1 {
			continue
		}
		if tk, _ := b.Follow(tks[i]); tk.At() != want {
			t.Errorf("the reservation due at %v is due at %v after the one before it was given back, want %v", time.Duration(i+1)*sec, tk.At(), want)
		}
	}
	if w := b.Reserve(0); w != 4*sec {
		t.Fatalf("the next token: wait %v, want 4s", w)
	}
	// The queue's last, and one due already, are given back as CancelAt
	// gives them back.
	_, last := b.ReserveTicket(0)
	b.CancelTicket(0, last)
	if w := b.Reserve(0); w != 5*sec {
		t.Fatalf("after the last was given back: wait %v, want 5s", w)
	}
}

func TestTryReserveAndCancel(t *testing.T) {
	b := New(Spec{Rate: 1, Burst: 1}, 0)
	if !b.TryReserve(0) {
		t.Fatal("first token refused")
	}
	if b.TryReserve(0) {
		t.Fatal("empty bucket gave a token")
	}
	w := b.Reserve(0)
	if w != sec {
		t.Fatalf("wait %v, want 1s", w)
	}
	b.Cancel(0)
	if w := b.Reserve(0); w != sec {
		t.Fatalf("after cancel, wait %v, want 1s (the cancelled token came back)", w)
	}
}

// ReserveBy takes a token only when it may be used by the caller's
// limit, and otherwise takes nothing and says how long the wait would have
// been: a queue of callers that give up is not pushed later by them.
func TestReserveByTakesNothingPastItsLimit(t *testing.T) {
	b := New(Spec{Rate: 1, Burst: 1}, 0)
	if tk, ok := b.ReserveBy(0, 0); !ok || tk.At() != 0 {
		t.Fatalf("the stored token: usable at %v, taken %v; want 0, taken", tk.At(), ok)
	}
	for range 5 {
		if tk, ok := b.ReserveBy(0, sec/2); ok || tk.At() != sec {
			t.Fatalf("a token due in 1s, by 0.5s: usable at %v, taken %v; want 1s, not taken", tk.At(), ok)
		}
	}
	if tk, ok := b.ReserveBy(0, sec); !ok || tk.At() != sec {
		t.Fatalf("a token due in 1s, by 1s: usable at %v, taken %v; want 1s, taken", tk.At(), ok)
	}
	if w := b.Reserve(0); w != 2*sec {
		t.Fatalf("the next token: wait %v, want 2s (the refusals took nothing)", w)
	}
}

// The ticket ReserveBy returns is its reservation's: a change that comes
// between the reservation and the caller's first look at it (here, the
// caller queued before it giving its place up) moves it as it moves the
// queue. A ticket taken afterwards for the time the reservation gave
// would miss that change, and its caller would go beside the next.
func TestReserveByReturnsTheTicketOfItsReservation(t *testing.T) {
	b := New(Spec{Rate: 1, Burst: 1}, 0)
	b.Reserve(0)                   // the stored token
	_, first := b.ReserveTicket(0) // due at 1s
	tk, _ := b.ReserveBy(0, 1<<62) // due at 2s
	b.CancelTicket(0, first)       // before tk's caller looked at it
	if tk, _ = b.Follow(tk); tk.At() != sec {
		t.Fatalf("the reservation due at 2s, whose caller before it gave its place up, is due at %v, want 1s", tk.At())
	}
	if w := b.Reserve(0); w != 2*sec {
		t.Fatalf("the next token: wait %v, want 2s", w)
	}
}

func TestThrottleTwiceASecondApartThenRecovery(t *testing.T) {
	// The spec's figure: an EC2 action at its 20 rps ceiling throttled
	// twice, a second apart, runs at 5 rps; steady success adds 1 rps every
	// five seconds, back at 20 after about 75 s.
	b := New(Spec{Rate: 20, Burst: 100, Floor: 0.2, Adaptive: true}, 0)
	if r, dec := b.Throttle(0, 0); !dec || r != 10 {
		t.Fatalf("first throttle: rate %v decreased %v, want 10 true", r, dec)
	}
	if r, dec := b.Throttle(sec, 0); !dec || r != 5 {
		t.Fatalf("second throttle: rate %v decreased %v, want 5 true", r, dec)
	}
	var back time.Duration = -1
	for now := sec; now <= 200*sec; now += sec / 10 {
		if r, _ := b.Success(now); r == 20 && back < 0 {
			back = now - sec
		}
	}
	if back != 75*sec {
		t.Fatalf("back at 20 rps %v after the last throttle, want 75s", back)
	}
}

func TestRecoveryWaitsForQuietAndStepsOncePerInterval(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 40, Adaptive: true}, 0)
	b.Throttle(0, 0) // 10 rps
	if _, inc := b.Success(5*sec - 1); inc {
		t.Fatal("increased within 5 s of the throttle")
	}
	if r, inc := b.Success(5 * sec); !inc || r != 11 {
		t.Fatalf("at 5 s: rate %v increased %v, want 11 true", r, inc)
	}
	if _, inc := b.Success(10*sec - 1); inc {
		t.Fatal("increased twice within 5 s")
	}
	if r, inc := b.Success(10 * sec); !inc || r != 12 {
		t.Fatalf("at 10 s: rate %v, want 12", r)
	}
	b.Throttle(11*sec, 0) // 6 rps; the quiet period restarts
	if _, inc := b.Success(15 * sec); inc {
		t.Fatal("increased 4 s after a throttle")
	}
}

// Recovery ends at the ceiling itself, in the steps that make it up: a
// rate halved once is back after ten steps of 5% of the ceiling, halved
// twice after fifteen. Added up in floating point, the steps left 1.5 rps
// halved once at 1.4999999999999996 after ten, a bucket slowed (never
// Idle, so never reclaimed; a status page showed it slowed at 1.5 of 1.5)
// until an eleventh success after another quiet, which a workload that
// ended there never sent.
func TestRecoveryEndsAtTheCeiling(t *testing.T) {
	for tenths := 2; tenths <= 2000; tenths++ {
		ceiling := float64(tenths) / 10
		for halves, steps := range map[int]int{1: 10, 2: 15} {
			b := New(Spec{Rate: ceiling, Burst: 2 * ceiling, Floor: 0.01, Adaptive: true}, 0)
			now := time.Duration(0)
			for range halves {
				b.Throttle(now, 0)
				now += sec
			}
			for range steps {
				now += 5 * sec
				if _, inc := b.Success(now); !inc {
					t.Fatalf("%v rps halved %d times: no increase at %v", ceiling, halves, now)
				}
			}
			if s := b.Snapshot(now); s.Rate != ceiling || !b.Idle(now+time.Hour, time.Minute) {
				t.Fatalf("%v rps halved %d times is at %v after %d steps (idle an hour later: %v), want %v", ceiling, halves, s.Rate, steps, b.Idle(now+time.Hour, time.Minute), ceiling)
			}
		}
	}
}

// A bucket made at a rate below its ceiling (NewAtRate: fleet mode's
// local limits, from a share of the fleet's last rate) is full at that
// rate's capacity, and climbs from it to the ceiling as the controller
// does after an increase made then: AIMD one step of 5% of the ceiling
// per 5 s. A rate below the floor starts at the floor; one at the
// ceiling, or not a number, is a bucket at its ceiling.
func TestNewAtRateClimbsToTheCeiling(t *testing.T) {
	spec := Spec{Rate: 20, Burst: 40, Floor: 2, Adaptive: true}
	b := NewAtRate(spec, 10, 0, -1)
	if s := b.Snapshot(0); s.Rate != 10 || s.Ceiling != 20 || s.Tokens != 20 {
		t.Fatalf("made at 10 rps: %+v, want rate 10, ceiling 20, full at 20 tokens", s)
	}
	if !b.Recovering() {
		t.Fatal("made below its ceiling: not recovering")
	}
	if _, inc := b.Success(5*sec - 1); inc {
		t.Fatal("increased within 5 s of being made")
	}
	now := time.Duration(0)
	for i := range 10 {
		now += 5 * sec
		if r, inc := b.Success(now); !inc || r != 10+float64(i+1) {
			t.Fatalf("at %v: rate %v increased %v, want %v true", now, r, inc, 10+float64(i+1))
		}
	}
	if !b.Idle(now+time.Hour, time.Minute) {
		t.Fatal("back at its ceiling: not idle an hour later")
	}
	for _, c := range []struct {
		r, want float64
	}{{0.5, 2}, {20, 20}, {25, 20}, {math.NaN(), 20}} {
		if s := NewAtRate(spec, c.r, 0, -1).Snapshot(0); s.Rate != c.want || s.Tokens != 2*c.want {
			t.Errorf("made at %v rps: %+v, want rate %v, full at %v tokens", c.r, s, c.want, 2*c.want)
		}
	}
}

func TestMinimumIncreaseStep(t *testing.T) {
	// 5% of 0.1 rps is 0.005: the step is at least 0.01.
	b := New(Spec{Rate: 0.1, Burst: 1, Floor: 0.01, Adaptive: true}, 0)
	b.Throttle(0, 0)
	r, _ := b.Success(5 * sec)
	approx(t, "rate", r, 0.06)
}

func TestFortySimultaneousThrottlesHalveOnce(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 100, Adaptive: true}, 0)
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() { b.Throttle(sec/2, 0) })
	}
	wg.Wait()
	if s := b.Snapshot(sec / 2); s.Rate != 10 {
		t.Fatalf("rate %v after 40 simultaneous throttles, want 10", s.Rate)
	}
	// Throttles within a second of the decrease are the same event.
	b.Throttle(sec/2+sec-1, 0)
	if s := b.Snapshot(2 * sec); s.Rate != 10 {
		t.Fatalf("rate %v, want 10", s.Rate)
	}
}

func TestThrottleDrainsBurstAndScalesCapacity(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 100, Adaptive: true}, 0)
	b.Throttle(0, 0)
	s := b.Snapshot(0)
	if s.Tokens != 0 {
		t.Fatalf("tokens %v after a throttle, want 0 (burst drained)", s.Tokens)
	}
	// At 10 rps the capacity is 50: an hour later 50 tokens, not 100.
	s = b.Snapshot(3600 * sec)
	approx(t, "tokens", s.Tokens, 50)
}

func TestFloor(t *testing.T) {
	b := New(Spec{Rate: 1, Burst: 2, Floor: 0.2, Adaptive: true}, 0)
	for i := range time.Duration(10) {
		b.Throttle(i*sec, 0)
	}
	approx(t, "rate", b.Snapshot(20*sec).Rate, 0.2)
}

func TestNonAdaptiveKeepsRateButPauses(t *testing.T) {
	b := New(Spec{Rate: 10, Burst: 10}, 0)
	if r, dec := b.Throttle(0, 3*sec); dec || r != 10 {
		t.Fatalf("rate %v decreased %v, want 10 false", r, dec)
	}
	if w := b.Reserve(0); w != 3*sec+sec/10 {
		t.Fatalf("wait %v during a 3 s pause, want 3.1s (the pause leaves no burst)", w)
	}
}

// After a pause, waiters leave at the bucket's rate, not all at once: rate
// 2, burst 2, not adaptive, a throttle with a 3 s hint; three reservations
// then wait 3.5, 4.0 and 4.5 s.
func TestPauseLeavesNoStoredBurst(t *testing.T) {
	b := New(Spec{Rate: 2, Burst: 2}, 0)
	b.Throttle(0, 3*sec)
	for i, want := range []time.Duration{3500 * time.Millisecond, 4 * sec, 4500 * time.Millisecond} {
		if w := b.Reserve(0); w != want {
			t.Fatalf("caller %d waits %v, want %v", i+1, w, want)
		}
	}
	// A subscription-wide pause (burst 200) releases its queue at the rate.
	acct := New(Spec{Rate: 20, Burst: 200}, 0)
	acct.Pause(0, sec)
	if w1, w2 := acct.Reserve(0), acct.Reserve(0); w1 != sec+sec/20 || w2 != sec+sec/10 {
		t.Fatalf("after a 1 s pause the first two wait %v and %v, want 1.05s and 1.1s", w1, w2)
	}
}

func TestPauseHoldsEveryCallerThenQueues(t *testing.T) {
	b := New(Spec{Rate: 2, Burst: 1, Adaptive: true}, 0)
	b.Throttle(0, 4*sec) // 1 rps, drained, paused 4 s
	if w := b.Reserve(0); w != 5*sec {
		t.Fatalf("first caller waits %v, want 5s (4 s pause, then one token at 1 rps)", w)
	}
	if w := b.Reserve(sec); w != 5*sec {
		t.Fatalf("second caller waits %v, want 5s (queued behind the first)", w)
	}
	if p := b.Snapshot(sec).Paused; p != 3*sec {
		t.Fatalf("paused for %v, want 3s", p)
	}
	b.Pause(sec, sec) // shorter than the pause in force: no change
	if p := b.Snapshot(sec).Paused; p != 3*sec {
		t.Fatalf("a shorter pause shortened it to %v", p)
	}
}

func TestIdle(t *testing.T) {
	b := New(Spec{Rate: 10, Burst: 10, Adaptive: true}, 0)
	if !b.Idle(60*sec, 60*sec) {
		t.Fatal("fresh bucket unused for a minute is not idle")
	}
	b.Reserve(0)
	if b.Idle(30*sec, 60*sec) {
		t.Fatal("bucket used 30 s ago is idle with a 1 min threshold")
	}
	if !b.Idle(61*sec, 60*sec) {
		t.Fatal("full bucket unused for 61 s is not idle")
	}
	b.Throttle(61*sec, 0)
	if b.Idle(3600*sec, 60*sec) {
		t.Fatal("slowed bucket is idle: it would forget its learned rate")
	}
}

func TestGoodputMovesToWhatWasServed(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 20, Floor: 0.2, Goodput: true}, 0)
	// 8 successes per second for 10 s.
	for i := range time.Duration(80) {
		b.Success(i * sec / 8)
	}
	r, dec := b.Throttle(10*sec, 0)
	if !dec {
		t.Fatal("no decrease")
	}
	// 0.95 x 8 rps, below 0.9 x 20.
	if math.Abs(r-7.6) > 0.8 {
		t.Fatalf("rate %v after a throttle at 8 rps served, want about 7.6", r)
	}
	// Then, after GoodputQuiet, it climbs once a second by 1.5% of the
	// ceiling (0.3 rps), the step doubling with each climb.
	if r2, inc := b.Success(10*sec + GoodputQuiet - 1); inc || r2 != r {
		t.Fatalf("rate %v before %v of quiet, want %v unchanged", r2, GoodputQuiet, r)
	}
	r2, inc := b.Success(10*sec + GoodputQuiet)
	if !inc || math.Abs(r2-(r+0.3)) > 1e-9 {
		t.Fatalf("rate %v after %v quiet, want %v", r2, GoodputQuiet, r+0.3)
	}
}

// The goodput controller's climb: after GoodputQuiet without a throttle,
// one climb per GoodputClimbInterval, each step twice the last, capped by
// the ceiling; a throttle starts the quiet and the steps afresh.
func TestGoodputClimbDoublesUntilAThrottle(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 20, Floor: 0.2, Goodput: true}, 0)
	for i := range time.Duration(50) {
		b.Success(i * sec / 10) // 10 rps for 5 s
	}
	r0, _ := b.Throttle(5*sec, 0)
	approx(t, "rate after the throttle", r0, GoodputShare*10)
	q := 5*sec + GoodputQuiet
	steps := []struct {
		at   time.Duration
		inc  bool
		want float64
	}{
		{q - sec/2, false, r0},
		{q, true, r0 + 0.3},
		{q + sec/2, false, r0 + 0.3}, // within GoodputClimbInterval
		{q + sec, true, r0 + 0.3 + 0.6},
		{q + 2*sec, true, r0 + 0.3 + 0.6 + 1.2},
		{q + 3*sec, true, r0 + 0.3 + 0.6 + 1.2 + 2.4},
		{q + 4*sec, true, r0 + 0.3 + 0.6 + 1.2 + 2.4 + 4.8},
		{q + 5*sec, true, 20}, // +9.6 passes the ceiling
		{q + 6*sec, false, 20},
	}
	for _, s := range steps {
		r, inc := b.Success(s.at)
		if inc != s.inc || math.Abs(r-s.want) > 1e-9 {
			t.Fatalf("at %v: rate %v (increased %v), want %v (%v)", s.at, r, inc, s.want, s.inc)
		}
	}
	// A throttle: quiet again, and the first step is GoodputStep again.
	at := q + 7*sec
	r1, _ := b.Throttle(at, 0)
	if r, inc := b.Success(at + GoodputQuiet - sec/10); inc {
		t.Fatalf("climbed to %v within %v of a throttle", r, GoodputQuiet)
	}
	if r, inc := b.Success(at + GoodputQuiet); !inc || math.Abs(r-(r1+0.3)) > 1e-9 {
		t.Fatalf("first climb after a throttle: %v, want %v", r, r1+0.3)
	}
}

// The step stops doubling after GoodputMaxDoublings: a ceiling far above
// the rate is reached step by step, without overflowing.
func TestGoodputStepIsBounded(t *testing.T) {
	for k, want := range map[int]float64{0: GoodputStep, 1: 2 * GoodputStep, GoodputMaxDoublings: GoodputStep * (1 << GoodputMaxDoublings), math.MaxInt: GoodputStep * (1 << GoodputMaxDoublings)} {
		if got := goodputStep(k); got != want {
			t.Errorf("goodputStep(%d) = %v, want %v", k, got, want)
		}
	}
}

func TestGoodputNeverAboveTheCapOfCurrent(t *testing.T) {
	b := New(Spec{Rate: 10, Burst: 10, Goodput: true}, 0)
	for i := range time.Duration(200) {
		b.Success(i * sec / 40) // 40 successes per second, above the rate
	}
	r, _ := b.Throttle(5*sec, 0)
	approx(t, "rate", r, GoodputCap*10)
}

func TestGoodputWithNothingServedHalves(t *testing.T) {
	b := New(Spec{Rate: 10, Burst: 10, Goodput: true}, 0)
	r, _ := b.Throttle(10*sec, 0)
	approx(t, "rate", r, 5)
}

// A burst of demand that meets the provider's limit at once: the first
// event comes a fraction of a second after counting began, when what was
// served is mostly the provider's stored burst, and the answers to the
// burst's other requests, sent together with the throttled one, may not be
// counted yet (in process they are told in any order; a fleet's counts
// reach Redis up to a slot later). That event measures nothing: the rate
// moves to GoodputFirstShare of itself and the bucket to the moving mode
// (whose first drain finds the limit), not to the few successes counted
// over a second (here 5 of the provider's 20: 0.99 x 5 = 4.95 rps for the
// rest of the run, the collapse the fleet test showed), and the next event
// measures from it. With nothing counted the event halves the rate, as any
// event that counted nothing, and the bucket stays steady. A first event a
// second or more after counting began measures as before, few successes or
// none, and the bucket stays steady.
func TestGoodputFirstEventWithinASecondMeasuresNothing(t *testing.T) {
	for _, told := range []int{5, 19, 0} {
		b := New(Spec{Rate: 20, Burst: 20, Floor: 0.2, Goodput: true}, 0)
		for i := range time.Duration(told) {
			b.Success(i * sec / 400) // the burst's answers told by 0.05 s
		}
		want, moving := GoodputFirstShare*20, true
		if told == 0 {
			want, moving = DecreaseFactor*20, false // nothing served: halved, as any event that counted nothing
		}
		if r, dec := b.Throttle(sec/10, 0); !dec || r != want || b.l.mv.on != moving {
			t.Fatalf("%d successes told: rate %v (decreased %v, moving %v) after a first event 0.1 s after counting began, want %v (moving %v), not %v",
				told, r, dec, b.l.mv.on, want, moving, GoodputShare*float64(told))
		}
		for i := range time.Duration(16) {
			b.Success(sec/5 + i*sec/8) // 8 a second from 0.2 s, the slot after the event
		}
		// 16 served over the 2 s since that slot: 0.99 x 8, under the cap
		// of the rate (0.97 x 10). Counting from the first event (0.1 s)
		// or the burst's successes too would give another rate.
		want = GoodputShare * 8
		if r, dec := b.Throttle(2200*time.Millisecond, 0); !dec || math.Abs(r-want) > 1e-9 {
			t.Fatalf("%d successes told: rate %v (decreased %v) at the second event, want %v", told, r, dec, want)
		}
	}
	for _, c := range []struct {
		told int
		want float64
	}{{0, 20 * DecreaseFactor}, {5, GoodputShare * 5 / 1.25}} {
		b := New(Spec{Rate: 20, Burst: 20, Floor: 0.2, Goodput: true}, 0)
		for i := range time.Duration(c.told) {
			b.Success(i * sec / 100)
		}
		if r, _ := b.Throttle(1250*time.Millisecond, 0); math.Abs(r-c.want) > 1e-9 || b.l.mv.on {
			t.Fatalf("%d successes told: rate %v (moving %v) after a first event 1.25 s after counting began, want %v (steady)", c.told, r, b.l.mv.on, c.want)
		}
	}
}

func TestConcurrentReserveNeverLosesTokens(t *testing.T) {
	b := New(Spec{Rate: 100, Burst: 100}, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var waits []time.Duration
	for range 8 {
		wg.Go(func() {
			for range 100 {
				w := b.Reserve(0)
				mu.Lock()
				waits = append(waits, w)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	seen := map[time.Duration]bool{}
	for _, w := range waits {
		if w > 0 && seen[w] {
			t.Fatalf("two callers got the same slot %v", w)
		}
		seen[w] = true
	}
	// 800 tokens at 100 rps with 100 in the bucket: the last waits 7 s.
	if s := b.Snapshot(0); s.Tokens != -700 {
		t.Fatalf("balance %v, want -700", s.Tokens)
	}
}

func TestAbsurdRatesDoNotOverflow(t *testing.T) {
	for _, r := range []float64{1e-300, 1e-9, 1e12, 1e300} {
		b := New(Spec{Rate: r, Burst: 1, Adaptive: true}, 0)
		b.Reserve(0)
		if w := b.Reserve(0); w < 0 {
			t.Fatalf("rate %g: negative wait %d", r, w)
		}
		b.Throttle(sec, sec)
		b.Success(100 * sec)
		if s := b.Snapshot(2 * sec); math.IsNaN(s.Tokens) || s.Paused < 0 {
			t.Fatalf("rate %g: %+v", r, s)
		}
	}
}

// A queue of absurd rates never wraps: each token of a bucket at 1e-9 rps
// is 31.7 years after the one before it, so that the eleventh reservation
// ran past the end of a Duration and wrapped into the past, a token free
// at once; at 1e-300 rps (a token every 2^60 ns) the eighth wrapped to
// exactly the value that marks a change being published, and the ninth
// caller spun forever. Later callers never wait less than earlier ones.
func TestLongQueuesOfAbsurdRatesDoNotWrap(t *testing.T) {
	for _, r := range []float64{1e-9, 1e-300} {
		b := New(Spec{Rate: r, Burst: 1}, 0)
		b.Reserve(0) // the stored token
		var prev time.Duration
		for i := range 20 {
			w := b.Reserve(0)
			if w <= 0 || w < prev {
				t.Fatalf("rate %g: queued caller %d waits %v, after one that waits %v", r, i+1, w, prev)
			}
			prev = w
		}
		if s := b.Snapshot(0); s.Tokens >= 0 {
			t.Fatalf("rate %g: a bucket with 20 callers queued reads %v tokens", r, s.Tokens)
		}
	}
}

func TestRateChangeKeepsTheQueueAsTokens(t *testing.T) {
	// Ten callers queue behind an empty bucket at 10 rps: the last goes at
	// 1.0 s. A throttle halves the rate: the queue is ten tokens at 5 rps,
	// so the callers already waiting go at 0.2 s intervals, the last at
	// 2.0 s, and the next caller at 2.2 s.
	b := New(Spec{Rate: 10, Burst: 1, Adaptive: true}, 0)
	b.Reserve(0) // the stored token
	var tks []Ticket
	for range 10 {
		_, tk := b.ReserveTicket(0)
		tks = append(tks, tk)
	}
	if last := tks[9].At(); last != sec {
		t.Fatalf("tenth queued caller goes at %v, want 1s", last)
	}
	b.Throttle(0, 0)
	for i := range tks {
		if tk, _ := b.Follow(tks[i]); tk.At() != time.Duration(i+1)*sec/5 {
			t.Fatalf("queued caller %d goes at %v after the halving, want %v", i+1, tk.At(), time.Duration(i+1)*sec/5)
		}
	}
	if w := b.Reserve(0); w != 2*sec+sec/5 {
		t.Fatalf("next caller after the halving waits %v, want 2.2s", w)
	}
	// A rise lets the queue leave sooner: at 5 rps two callers queue
	// behind the stored token (6.2 s and 6.4 s); at 5.5 rps they go one
	// and two intervals of the new rate after 6 s, and the next caller
	// after them.
	b2 := New(Spec{Rate: 10, Burst: 1, Adaptive: true}, 0)
	b2.Throttle(0, 0) // 5 rps
	b2.Reserve(6 * sec)
	_, tk1 := b2.ReserveTicket(6 * sec)
	_, tk2 := b2.ReserveTicket(6 * sec)
	b2.Success(6 * sec) // 5.5 rps
	interval := float64(sec / 5)
	step := time.Duration(interval * 5 / 5.5)
	if tk, _ := b2.Follow(tk1); tk.At() != 6*sec+step {
		t.Fatalf("first queued caller goes at %v after the rise, want %v", tk.At(), 6*sec+step)
	}
	if tk, _ := b2.Follow(tk2); tk.At() != 6*sec+2*step {
		t.Fatalf("second queued caller goes at %v after the rise, want %v", tk.At(), 6*sec+2*step)
	}
	if w := b2.Reserve(6 * sec); w < 3*step-2 || w > 3*step+2 {
		t.Fatalf("after a rise, next caller waits %v, want %v", w, 3*step)
	}
}

// A caller waiting for its token is told when the queue moves: Follow's
// channel is closed at the next change of rate or pause, and a reservation
// that no change touched stays where it was.
func TestFollowWakesAtTheNextChange(t *testing.T) {
	b := New(Spec{Rate: 2, Burst: 1, Adaptive: true}, 0)
	b.Reserve(0)
	_, tk := b.ReserveTicket(0)
	tk, moved := b.Follow(tk)
	if tk.At() != sec/2 {
		t.Fatalf("queued at %v, want 0.5s", tk.At())
	}
	select {
	case <-moved:
		t.Fatal("woken before any change")
	default:
	}
	b.Pause(0, 3*sec) // a pause moves the queue by its length
	select {
	case <-moved:
	default:
		t.Fatal("not woken by a pause")
	}
	if tk, _ := b.Follow(tk); tk.At() != 3*sec+sec/2 {
		t.Fatalf("after a 3 s pause the queued caller goes at %v, want 3.5s", tk.At())
	}
}

// Reservations racing rate changes and pauses never share a slot, and
// every queued caller keeps its place: the slots, followed to the end, are
// distinct and in the order of each goroutine's reservations.
func TestReservationsRacingChangesKeepTheirOrder(t *testing.T) {
	b := New(Spec{Rate: 100, Burst: 1, Goodput: true}, 0)
	var clock atomic.Int64 // the time, moving on as the changes happen
	var wg sync.WaitGroup
	tickets := make([][]Ticket, 4)
	for g := range tickets {
		wg.Go(func() {
			for range 200 {
				_, tk := b.ReserveTicket(time.Duration(clock.Load()))
				tickets[g] = append(tickets[g], tk)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			now := time.Duration(clock.Add(int64(sec / 100)))
			b.Throttle(now, 0)
			b.Pause(now, sec/50)
			b.Success(now)
		}
	})
	wg.Wait()
	seen := map[time.Duration]bool{}
	for g := range tickets {
		prev := time.Duration(math.MinInt64)
		for i := range tickets[g] {
			tk, _ := b.Follow(tickets[g][i])
			at := tk.At()
			if seen[at] {
				t.Fatalf("two callers got the slot %v", at)
			}
			seen[at] = true
			if at <= prev {
				t.Fatalf("goroutine %d: reservation %d goes at %v, not after the one before it (%v)", g, i, at, prev)
			}
			prev = at
		}
	}
}

func TestGoodputMeasuresSinceThePreviousDecrease(t *testing.T) {
	// A burst of 90 successes in the first 0.2 s, then 10 a second. The
	// first throttle, 0.2 s after counting began, measures nothing: it
	// moves the rate to GoodputFirstShare of itself (0.5 x 40); the second
	// measures what was served since the first, not the burst before it.
	b := New(Spec{Rate: 40, Burst: 100, Floor: 0.2, Goodput: true}, 0)
	for i := range time.Duration(90) {
		b.Success(i * sec / 450)
	}
	if r, _ := b.Throttle(sec/5, 0); math.Abs(r-GoodputFirstShare*40) > 1e-9 {
		t.Fatalf("first decrease to %v, want %v (%v x 40)", r, GoodputFirstShare*40, GoodputFirstShare)
	}
	for i := range time.Duration(15) {
		b.Success(sec/5 + sec/20 + i*sec/10) // 10 a second from 0.25 s
	}
	r, dec := b.Throttle(1700*time.Millisecond, 0)
	// 14 served over the 1.4 s since the slot after the first decrease
	// (0.3 s; the success at 0.25 s is before it): 0.99 x 14 / 1.4 = 9.9.
	// Counting the burst too would have given the cap.
	if !dec || math.Abs(r-GoodputShare*10) > 1e-9 {
		t.Fatalf("second decrease to %v, want %v", r, GoodputShare*10)
	}
}

// Between two congestion events the provider's bucket was empty at both
// ends, so what it served in between is its refill, however long ago the
// previous event was: here about 5 a second over 40 s, not the 12 a second
// of the last five.
func TestGoodputMeasuresTheWholeSpanBetweenEvents(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 100, Floor: 0.2, Goodput: true}, 0)
	b.Throttle(0, 0)
	var now time.Duration
	n := 0
	for now = sec; now <= 35*sec; now += sec / 4 {
		b.Success(now) // 4 a second for 35 s...
		n++
	}
	for ; now <= 40*sec; now += sec / 12 {
		b.Success(now) // ...then 12 a second
		n++
	}
	served := float64(n) / 39.9 // since the slot after the first event
	if r, _ := b.Throttle(40*sec, 0); math.Abs(r-GoodputShare*served) > 0.01 {
		t.Fatalf("decrease to %v, want %v", r, GoodputShare*served)
	}
}

// The first event measures the current and the previous window of
// GoodputWindow seconds: a bucket that served 2 a second for a minute and
// 10 a second for the last 7 s moves to 0.99 x what the last windows saw.
func TestGoodputFirstEventMeasuresTheLastWindows(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 100, Floor: 0.2, Goodput: true}, 0)
	var now time.Duration
	for now = 0; now < 60*sec; now += sec / 2 {
		b.Success(now)
	}
	for ; now < 67*sec; now += sec / 10 {
		b.Success(now)
	}
	// Windows [55, 60) and [60, 65), and [65, 67): the count covers [60, 67).
	want := GoodputShare * 70 / 7
	if r, _ := b.Throttle(67*sec, 0); math.Abs(r-want) > 0.02 {
		t.Fatalf("first decrease to %v, want %v", r, want)
	}
}

// After more than GoodputWindow without a success (an outage, an open
// breaker) the client was not drawing on the provider's bucket, so the
// next event measures the time since the gap, not since the previous
// event: 10 a second over the last 3 s, not 130 successes over 43 s.
func TestGoodputMeasuresAgainAfterAGap(t *testing.T) {
	b := New(Spec{Rate: 40, Burst: 100, Floor: 0.2, Goodput: true}, 0)
	b.Throttle(0, 0) // as counting begins: measures nothing, caps to 38.8
	for i := range time.Duration(100) {
		b.Success(sec/5 + i*sec/10) // 10 a second until 10.1 s
	}
	for i := range time.Duration(30) {
		b.Success(40*sec + i*sec/10) // then nothing until 40 s, and 10 a second again
	}
	if r, _ := b.Throttle(43*sec, 0); math.Abs(r-GoodputShare*10) > 0.05 {
		t.Fatalf("decrease to %v after a gap, want about %v", r, GoodputShare*10)
	}
}

// The gap counts from the previous event too, not only from the last
// success: a scope throttled before any success, then paused for 60 s,
// was not drawing on the provider's bucket either. Its next event measures
// the successes since the pause, 2 a second over the last 3 s, not the 6
// served over the 63 s since the first event (which would set about 0.1).
func TestGoodputMeasuresAgainAfterAPauseWithNoSuccessBefore(t *testing.T) {
	b := New(Spec{Rate: 5, Burst: 5, Floor: 0.05, Goodput: true}, 0)
	b.Throttle(0, 60*sec) // as counting begins: caps to 4.85, and a 60 s pause
	for i := range time.Duration(6) {
		b.Success(60*sec + i*sec/2) // 2 a second from the pause's end
	}
	want := GoodputShare * 2
	if r, dec := b.Throttle(63*sec, 0); !dec || math.Abs(r-want) > 0.05 {
		t.Fatalf("decrease to %v (decreased: %v) after a pause with no success before it, want about %v, not %v",
			r, dec, want, GoodputShare*6/62.9)
	}
}

// An event after a gap, before any success since, measures nothing too: a
// scope served 10 a second for 2 s after its first event, then idle for
// 23 s (no demand), whose first call on return is throttled, halves its
// rate. It was moved to 0.99 x the 20 successes over the 24.9 s since the
// first event, 0.8 rps: the gap counted as a refill the provider never
// gave.
func TestGoodputEventAfterAGapMeasuresNothing(t *testing.T) {
	b := New(Spec{Rate: 20, Burst: 20, Floor: 0.2, Goodput: true}, 0)
	for i := range time.Duration(50) {
		b.Success(i * sec / 10)
	}
	r, _ := b.Throttle(5*sec, 0)
	approx(t, "rate after the first event", r, GoodputShare*10)
	for i := range time.Duration(20) {
		b.Success(5*sec + sec/10 + i*sec/10) // until 7 s
	}
	if r, dec := b.Throttle(30*sec, 0); !dec || math.Abs(r-GoodputShare*10*DecreaseFactor) > 1e-9 {
		t.Fatalf("decrease to %v (decreased: %v) at the first event after a gap of 23 s, want %v (halved: it measures nothing)",
			r, dec, GoodputShare*10*DecreaseFactor)
	}
}

// A full bucket holds at least one token at any rate: its capacity, at
// least one token, is not rounded to a nanosecond less than one token's
// interval. It was, for some rates (capacity/rate*1e9 and 1e9/rate
// truncated apart): every caller then waited 1 ns for a token the bucket
// could never hold, and a scheduler that waits for Delay to say 0 (package
// pool) waited forever, a nanosecond at a time. The rates below are those
// the goodput controller reached in the simulator's estate runs.
func TestAFullBucketHoldsAToken(t *testing.T) {
	rates := []float64{0.98880251358345206, 0.84841669748540327}
	for r := 0.2; r < 3; r += 0.0007 {
		rates = append(rates, r)
	}
	short := 0
	for _, r := range rates {
		for _, burst := range []float64{1, 2, 3, 5} {
			b := New(Spec{Rate: r, Burst: burst * r}, 0)
			now := 3600 * sec
			if tok := b.Snapshot(now).Tokens; tok < 1 || b.Reserve(now) != 0 {
				short++
				if short < 5 {
					t.Errorf("rate %.17g, capacity %g: a full bucket holds %.17g tokens, its first caller waits", r, Spec{Rate: r, Burst: burst * r}.Capacity(), tok)
				}
			}
		}
	}
	if short > 0 {
		t.Errorf("%d of %d full buckets hold less than one token", short, 4*len(rates))
	}
}

// Reservations made and given up from many goroutines at once keep one
// place each: after every cancelled reservation has moved the queue after
// it, the reservations kept are due one interval apart or more, never two
// at one time. A ticket that missed a move (one taken after its
// reservation, for the time the reservation gave) would share its time
// with the next caller's.
func TestConcurrentReservationsAndCancelsKeepOnePlaceEach(t *testing.T) {
	const goroutines, each = 8, 400
	for round := range 20 {
		b := New(Spec{Rate: 1000, Burst: 1}, 0) // a token a millisecond; the clock stands still
		var mu sync.Mutex
		var kept []Ticket
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []Ticket
				for i := range each {
					tk, _ := b.ReserveBy(0, math.MaxInt64)
					if (i+g+round)%2 == 0 {
						b.CancelTicket(0, tk)
						continue
					}
					mine = append(mine, tk)
				}
				mu.Lock()
				kept = append(kept, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		at := make([]time.Duration, len(kept))
		for i, tk := range kept {
			tk, _ = b.Follow(tk)
			at[i] = tk.At()
		}
		slices.Sort(at)
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] < time.Millisecond {
				t.Fatalf("round %d: two kept reservations due at %v and %v, less than a token apart", round, at[i-1], at[i])
			}
		}
	}
}

// A reservation that read the balance just before a change lands in the
// epoch it read, or reads again: never in a later epoch with a ticket of
// the one it read, which Follow would move a second time. The change
// here is a caller giving up its place in the queue (every later
// reservation moves a token earlier), after which another caller's
// reservation brings the balance back to the value the first one read.
// With one balance word for every epoch, the first one's compare-and-swap
// succeeded, and its token came due beside the other caller's (the
// failure TestConcurrentReservationsAndCancelsKeepOnePlaceEach caught
// once in a while, under -race).
func TestAReservationReadBeforeAChangeLandsInTheEpochItRead(t *testing.T) {
	b := New(Spec{Rate: 1000, Burst: 1}, 0) // a token a millisecond; the clock stands still
	first, _ := b.ReserveBy(0, math.MaxInt64)
	gone, _ := b.ReserveBy(0, math.MaxInt64)
	second, _ := b.ReserveBy(0, math.MaxInt64)
	var other Ticket
	testHookReserve = func() {
		testHookReserve = nil // once: the reservation below runs it too
		b.CancelTicket(0, gone)
		other, _ = b.ReserveBy(0, math.MaxInt64)
	}
	t.Cleanup(func() { testHookReserve = nil })
	last, _ := b.ReserveBy(0, math.MaxInt64)
	var at []time.Duration
	for _, tk := range []Ticket{first, second, other, last} {
		tk, _ = b.Follow(tk)
		at = append(at, tk.At())
	}
	want := []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	if !slices.Equal(at, want) {
		t.Fatalf("the kept reservations are due at %v (the first three, then the one that read the balance before the change); want %v, a token apart", at, want)
	}
}

// A bucket made at a rate a decrease set a moment ago (NewAtRate's
// decreased) takes a throttle within DecreaseInterval of that decrease as
// the same congestion event: no second decrease; one after the interval
// is a new event, and halves the rate. Not knowing the decrease (a
// negative decreased), or one older than the interval, the first throttle
// halves it.
func TestNewAtRateKnowsTheDecreaseThatSetIt(t *testing.T) {
	spec := Spec{Rate: 20, Burst: 40, Floor: 2, Adaptive: true}
	for _, c := range []struct {
		decreased, at time.Duration
		want          float64
	}{
		{0, 0, 10},
		{300 * time.Millisecond, 0, 10},
		{300 * time.Millisecond, DecreaseInterval - 300*time.Millisecond - 1, 10},
		{300 * time.Millisecond, DecreaseInterval - 300*time.Millisecond, 5},
		{DecreaseInterval, 0, 5},
		{-1, 0, 5},
	} {
		b := NewAtRate(spec, 10, 0, c.decreased)
		if r, _ := b.Throttle(c.at, 0); r != c.want {
			t.Errorf("made at 10 rps, decreased %v before; a throttle %v later: rate %v, want %v", c.decreased, c.at, r, c.want)
		}
	}
}
