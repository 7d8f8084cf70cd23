package bucket

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// sprintBucket is a goodput bucket of ceiling ceiling, served 10 successes
// a second for 5 s and then throttled at 5 s: its rate is GoodputShare x
// 10, and its stored tokens are gone.
func sprintBucket(t *testing.T, ceiling float64) (*Bucket, float64) {
	t.Helper()
	b := New(Spec{Rate: ceiling, Burst: ceiling, Floor: 0.2, Goodput: true}, 0)
	for i := range time.Duration(50) {
		b.Success(i * sec / 10)
	}
	r, _ := b.Throttle(5*sec, 0)
	approx(t, "rate after the throttle", r, GoodputShare*10)
	return b, r
}

// queued is the number of tokens reserved ahead of now (negative: stored).
func queued(b *Bucket, now time.Duration) float64 { return -b.Snapshot(now).Tokens }

// setQueue reserves or gives back tokens until n (within half a token) are
// reserved ahead of now.
func setQueue(b *Bucket, now time.Duration, n float64) {
	for queued(b, now) < n-0.5 {
		b.Reserve(now)
	}
	for queued(b, now) > n+0.5 {
		b.Cancel(now)
	}
}

// The sprint's rule, one condition at a time: at a success, once
// GoodputSprintQuiet has passed since the throttle, a queue that has
// fallen to GoodputSprintFall of its longest since the throttle, and still
// holds GoodputSprintQueue of tokens at the rate, doubles the rate.
func TestGoodputSprintsWhenTheQueueFalls(t *testing.T) {
	const throttle = 5 * sec
	for _, c := range []struct {
		name   string
		peak   float64       // the queue at a success a second after the throttle
		at     time.Duration // the success that may sprint, after the throttle
		queue  float64       // the queue then
		sprint bool
	}{
		{"the queue fell to 3/4 of its peak after the quiet", 40, GoodputSprintQuiet, 30, true},
		{"still within the quiet", 40, GoodputSprintQuiet - sec/10, 30, false},
		{"the queue fell less than the rule asks", 40, GoodputSprintQuiet, 37, false},
		{"the queue left is too short to retry a throttled call within", 21, GoodputSprintQuiet, 15, false},
		{"the queue grew", 20, GoodputSprintQuiet + sec, 40, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, r := sprintBucket(t, 20)
			setQueue(b, throttle+sec, c.peak)
			if got, inc := b.Success(throttle + sec); inc || got != r {
				t.Fatalf("rate %v (increased %v) at the peak, want %v unchanged", got, inc, r)
			}
			setQueue(b, throttle+c.at, c.queue)
			got, inc := b.Success(throttle + c.at)
			want := r
			if c.sprint {
				want = GoodputSprintFactor * r
			}
			if inc != c.sprint || math.Abs(got-want) > 1e-9 {
				t.Fatalf("rate %v (increased %v), want %v (%v)", got, inc, want, c.sprint)
			}
		})
	}
}

// A sprint never goes above the ceiling.
func TestGoodputSprintStopsAtTheCeiling(t *testing.T) {
	b, _ := sprintBucket(t, 15)
	setQueue(b, 6*sec, 40)
	b.Success(6 * sec)
	setQueue(b, 9*sec, 30)
	if r, inc := b.Success(9 * sec); !inc || r != 15 {
		t.Fatalf("rate %v (increased %v), want the ceiling 15", r, inc)
	}
}

// One sprint between two throttles, and no climb during it; the next
// throttle measures as any other, and starts the rule afresh.
func TestGoodputSprintsOnceBetweenThrottles(t *testing.T) {
	b, r := sprintBucket(t, 20)
	setQueue(b, 6*sec, 40)
	b.Success(6 * sec)
	setQueue(b, 9*sec, 30)
	if got, inc := b.Success(9 * sec); !inc || math.Abs(got-2*r) > 1e-9 {
		t.Fatalf("no sprint: rate %v", got)
	}
	// The queue grows and falls again; GoodputQuiet passes: neither a
	// second sprint nor a climb.
	setQueue(b, 10*sec, 60)
	b.Success(10 * sec)
	for _, at := range []time.Duration{11 * sec, 5*sec + GoodputQuiet, 5*sec + GoodputQuiet + 2*sec} {
		setQueue(b, at, 45)
		if got, inc := b.Success(at); inc || math.Abs(got-2*r) > 1e-9 {
			t.Fatalf("at %v: rate %v (increased %v), want %v unchanged during the sprint", at, got, inc, 2*r)
		}
	}
	// The throttle that ends it decreases as any other (to GoodputShare
	// of the few successes this test counted since the last one, far
	// under the sprint's rate), and the rule starts afresh.
	at := 16 * sec
	r2, dec := b.Throttle(at, 0)
	if !dec || r2 >= 2*r {
		t.Fatalf("rate %v after the throttle (decreased %v), want below %v", r2, dec, 2*r)
	}
	setQueue(b, at+sec, 40)
	b.Success(at + sec)
	setQueue(b, at+GoodputSprintQuiet, 30)
	if got, inc := b.Success(at + GoodputSprintQuiet); !inc || math.Abs(got-math.Min(20, 2*r2)) > 1e-9 {
		t.Fatalf("rate %v (increased %v) after the next throttle, want a sprint to %v", got, inc, math.Min(20, 2*r2))
	}
}

// The sprint is the goodput controller's: an AIMD bucket, a goodput
// bucket never throttled, and a paused one do not sprint.
func TestGoodputSprintNeedsAThrottleAndNoPause(t *testing.T) {
	t.Run("AIMD", func(t *testing.T) {
		b := New(Spec{Rate: 20, Burst: 20, Floor: 0.2, Adaptive: true}, 0)
		r, _ := b.Throttle(5*sec, 0)
		setQueue(b, 6*sec, 40)
		b.Success(6 * sec)
		setQueue(b, 9*sec, 30)
		if got, _ := b.Success(9 * sec); got != r {
			t.Fatalf("AIMD rate %v, want %v", got, r)
		}
	})
	t.Run("never throttled", func(t *testing.T) {
		b := New(Spec{Rate: 20, Burst: 20, Goodput: true}, 0)
		setQueue(b, 6*sec, 60)
		b.Success(6 * sec)
		setQueue(b, 9*sec, 45)
		if got, inc := b.Success(9 * sec); inc || got != 20 || b.l != nil {
			t.Fatalf("rate %v (increased %v, learned %v), want 20 and nothing learned", got, inc, b.l != nil)
		}
	})
	t.Run("paused", func(t *testing.T) {
		b, r := sprintBucket(t, 20)
		setQueue(b, 6*sec, 40)
		b.Success(6 * sec)
		b.Pause(8*sec, 2*sec)
		setQueue(b, 9*sec, 30-9.9) // from the pause's end: 30 from now
		if got, inc := b.Success(9 * sec); inc || got != r {
			t.Fatalf("rate %v (increased %v) while paused, want %v", got, inc, r)
		}
	})
}

// The callers already queued leave sooner: a caller k tokens behind the
// head waits k intervals of the doubled rate.
func TestGoodputSprintMovesTheQueueUp(t *testing.T) {
	b, r := sprintBucket(t, 20)
	setQueue(b, 6*sec, 40)
	b.Success(6 * sec)
	setQueue(b, 9*sec, 29)
	wait, tk := b.ReserveTicket(9 * sec) // about the 30th
	if want := time.Duration(30 / r * 1e9); absDur(wait-want) > time.Duration(1e9/r) {
		t.Fatalf("wait %v, want about %v", wait, want)
	}
	if _, inc := b.Success(9 * sec); !inc {
		t.Fatal("no sprint")
	}
	tk, _ = b.Follow(tk)
	if got := tk.At() - 9*sec; absDur(got-wait/2) > time.Microsecond {
		t.Fatalf("wait %v after the sprint, want %v", got, wait/2)
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// Random sequences of reservations, successes, throttles and pauses: the
// rate stays between the floor and the ceiling; a sprint happens only
// after a throttle, GoodputSprintQuiet after it, at most once before the
// next, never during a drain of the moving mode, and moves the rate to
// GoodputSprintFactor times itself (GoodputMovingSprintFactor in the
// moving mode; up to the ceiling); nothing else moves the rate during
// one, which lasts until the next throttle or GoodputQuiet. (Outside a sprint, climbs and the moving mode's drains move it:
// TestGoodputMovingProperties checks those.)
func TestGoodputSprintProperties(t *testing.T) {
	sprints, moving := 0, 0
	defer func() {
		t.Logf("%d sprints, %d of them in the moving mode", sprints, moving)
		if sprints == 0 || moving == 0 || moving == sprints {
			t.Errorf("%d sprints, %d of them in the moving mode: the test checks too little", sprints, moving)
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		const ceiling = 20.0
		b := New(Spec{Rate: ceiling, Burst: 40, Floor: 0.5, Goodput: true}, 0)
		now := time.Duration(0)
		lastThrottle, throttled, sprinted := time.Duration(0), false, false
		if rapid.Bool().Draw(t, "burst") {
			// A burst of demand that met the limit at once: the first
			// event, too soon to measure, puts the bucket in the moving
			// mode.
			for range 5 {
				b.Success(now)
			}
			now += 100 * time.Millisecond
			b.Throttle(now, 0)
			lastThrottle, throttled = now, true
		}
		check := func(t *rapid.T, now time.Duration) {
			before := b.Snapshot(now).Rate
			was := b.l != nil && b.l.sprinting
			during := was && now-b.l.sprinted < GoodputQuiet // a sprint lasts GoodputQuiet at most
			// The moving mode changes only at throttles: as it is before
			// this success, it is at the sprint.
			on, draining := b.l != nil && b.l.mv.on, b.l != nil && b.l.mv.draining
			r, inc := b.Success(now)
			is := b.l != nil && b.l.sprinting
			switch {
			case during && (inc || r != before):
				t.Fatalf("rate %v -> %v (increased %v) during a sprint", before, r, inc)
			case is && !was:
				if !throttled || now-lastThrottle < GoodputSprintQuiet || sprinted || draining {
					t.Fatalf("sprint at %v: throttled %v (last at %v), sprinted before %v, draining %v", now, throttled, lastThrottle, sprinted, draining)
				}
				f := float64(GoodputSprintFactor)
				if on {
					f = GoodputMovingSprintFactor
				}
				if !inc || math.Abs(r-math.Min(ceiling, f*before)) > 1e-9 {
					t.Fatalf("sprint from %v to %v (increased %v; moving %v: want x%v)", before, r, inc, on, f)
				}
				sprinted = true
				sprints++
				if on {
					moving++
				}
			}
		}
		t.Repeat(withQueueActions(b, &now, map[string]func(*rapid.T){
			// A burst of demand: a queue of a few seconds at the rate,
			// then successes as it drains.
			"demand": func(t *rapid.T) {
				setQueue(b, now, rapid.Float64Range(1, 6).Draw(t, "secs")*b.Snapshot(now).Rate)
				check(t, now)
				for range rapid.IntRange(1, 30).Draw(t, "n") {
					now += 200 * time.Millisecond
					check(t, now)
				}
			},
			// Successes while the queue drains: the demand ending.
			"drain": func(t *rapid.T) {
				for range rapid.IntRange(1, 10).Draw(t, "n") {
					now += 200 * time.Millisecond
					check(t, now)
				}
			},
			"success": func(t *rapid.T) {
				check(t, now)
			},
			"throttle": func(t *rapid.T) {
				b.Throttle(now, 0)
				lastThrottle, throttled, sprinted = now, true, false
			},
			"pause": func(t *rapid.T) {
				b.Pause(now, time.Duration(rapid.IntRange(1, 5000).Draw(t, "ms"))*time.Millisecond)
			},
			"": func(t *rapid.T) {
				if r := b.Snapshot(now).Rate; r < 0.5-1e-9 || r > ceiling+1e-9 {
					t.Fatalf("rate %v outside [0.5, %v]", r, ceiling)
				}
			},
		}))
	})
}

// The cost of a success on a throttled goodput bucket with callers
// queued, where the sprint's rule reads the queue at every success.
func BenchmarkGoodputSuccess(b *testing.B) {
	bk := New(Spec{Rate: 20, Burst: 20, Goodput: true}, 0)
	bk.Throttle(0, 0)
	now := time.Duration(0)
	for b.Loop() {
		now += time.Millisecond
		bk.Reserve(now)
		bk.Success(now)
	}
}

// withQueueActions adds to actions, a rapid state machine's, the moves of
// time and of the queue of callers every property test of a bucket makes:
// time passing (up to 3 s), callers reserving tokens and callers giving
// them back; *now is the state machine's clock.
func withQueueActions(b *Bucket, now *time.Duration, actions map[string]func(*rapid.T)) map[string]func(*rapid.T) {
	actions["wait"] = func(t *rapid.T) {
		*now += time.Duration(rapid.IntRange(1, 3000).Draw(t, "ms")) * time.Millisecond
	}
	actions["reserve"] = func(t *rapid.T) {
		for range rapid.IntRange(1, 80).Draw(t, "n") {
			b.Reserve(*now)
		}
	}
	actions["cancel"] = func(t *rapid.T) {
		for range rapid.IntRange(1, 20).Draw(t, "n") {
			b.Cancel(*now)
		}
	}
	return actions
}

// A sprint that meets no throttle does not hold the rate for good: the
// limit is above the sprint's rate, and a bucket with callers queued and
// no throttle climbs to its ceiling. (Outside-in trial, three processes of
// their own governors sharing a limit of 2 rps: one process's leaf, at its
// floor of 0.2 rps, sprinted to 0.4 rps and sent at 0.4 rps for its last
// 80 s with no throttle, the other two done.)
func TestGoodputSprintWithoutAThrottleEndsInAClimb(t *testing.T) {
	const ceiling, floor = 20.0, 0.2
	b := New(Spec{Rate: ceiling, Burst: 2 * ceiling, Floor: floor, Goodput: true}, 0)
	for i := range time.Duration(50) {
		b.Success(i * sec / 10)
	}
	now := 5 * sec
	for r, _ := b.Throttle(now, 0); r > floor; r, _ = b.Throttle(now, 0) {
		now += sec // nothing served since: the rate halves, down to the floor
	}
	last := now
	setQueue(b, last+sec, 10)
	b.Success(last + sec)
	setQueue(b, last+GoodputSprintQuiet, 8)
	if r, inc := b.Success(last + GoodputSprintQuiet); !inc || math.Abs(r-GoodputSprintFactor*floor) > 1e-9 {
		t.Fatalf("no sprint: rate %v (increased %v)", r, inc)
	}
	// A minute of demand, the queue kept at 8 callers, a success at each
	// token, no throttle.
	now = last + GoodputSprintQuiet
	for end := now + time.Minute; now < end; {
		now += time.Duration(1e9 / b.Snapshot(now).Rate)
		setQueue(b, now, 8)
		b.Success(now)
	}
	if r := b.Snapshot(now).Rate; r != ceiling {
		t.Fatalf("rate %v a minute after a sprint with callers queued and no throttle, want the ceiling %v", r, ceiling)
	}
}
