package test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The goodput controller in fleet mode counts the successes of the whole
// fleet in the bucket's Redis state, each process's per slot with its
// time: a throttle moves the shared rate to bucket.GoodputShare of what
// the fleet was served since the slot after the previous congestion event
// (for the first event, over the current and the previous window of
// bucket.GoodputWindow; after a gap of more than a window without a
// success, from the gap), never above bucket.GoodputCap of the rate, and
// after bucket.GoodputQuiet it climbs by bucket.GoodputStep of the
// ceiling, doubling the step with each climb. A first event less than a
// second after counting began (at the bucket's first script, or at the
// first success after a gap) measures nothing: it moves the rate to
// bucket.GoodputCap of itself.
//
// Some of these tests write the counts into the hash (born, gfrom, gn, gk,
// gcur, gprev, glast, times in Redis's microseconds), so that a span of
// tens of seconds is measured without waiting for it.

var goodputCfg = resilience.Config{AWS: resilience.ProviderConfig{
	Controller: "goodput",
	Services:   map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 100}},
}}

// goodputSpec is a shared goodput bucket of 100 rps, used through the
// store, so that each test decides when a success or a throttle happens.
var goodputSpec = state.BucketSpec{Rate: 100, Burst: 100, Floor: 1, Adaptive: true, Goodput: true}

const windowUS = bucket.GoodputWindow * 1e6

// sharedGoodput is one goodput bucket seen from two processes of a fleet.
type sharedGoodput struct {
	a, b   state.Bucket
	rdb    *process // reads and writes the hash
	key    string
	slotUS int64
}

func newSharedGoodput(t *testing.T, be backend) *sharedGoodput {
	prefix := uniquePrefix(t)
	pa := newProcess(t, be, prefix, resilience.Config{})
	pb := newProcess(t, be, prefix, resilience.Config{})
	return &sharedGoodput{
		a: pa.store.Bucket(vpcsKey, goodputSpec, 0), b: pb.store.Bucket(vpcsKey, goodputSpec, 0),
		rdb: pa, key: prefix + ":{" + vpcsKey + "}:bucket", slotUS: bucket.GoodputSlot.Microseconds(),
	}
}

// now is Redis's time in microseconds.
func (g *sharedGoodput) now(t *testing.T) int64 {
	t.Helper()
	tm, err := g.rdb.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMicro()
}

// set writes fields of the bucket's hash.
func (g *sharedGoodput) set(t *testing.T, fields ...any) {
	t.Helper()
	if err := g.rdb.rdb.HSet(context.Background(), g.key, fields...).Err(); err != nil {
		t.Fatal(err)
	}
}

// field reads a number of the bucket's hash.
func (g *sharedGoodput) field(t *testing.T, name string) float64 {
	t.Helper()
	v, err := g.rdb.rdb.HGet(context.Background(), g.key, name).Result()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// succeed counts n successes in each process and waits until their counts
// are in Redis (each process sends its own within a slot).
func (g *sharedGoodput) succeed(n int) {
	for range n {
		g.a.Success(0)
		g.b.Success(0)
	}
	time.Sleep(3 * bucket.GoodputSlot)
}

// awaitSlotStart waits until Redis's clock is a millisecond past the start
// of a slot of bucket.GoodputSlot, so that what the test does next falls
// in that slot even when its counts take tens of milliseconds to reach
// Redis (a count's time is its age when sent, so the transit moves it
// later by as much).
func (g *sharedGoodput) awaitSlotStart(t *testing.T) {
	t.Helper()
	now := g.now(t)
	next := (now/g.slotUS + 1) * g.slotUS
	time.Sleep(time.Duration(next-now+1000) * time.Microsecond)
}

// countingBegan moves the start of the bucket's counting (born) d before
// Redis's now, so that a first event measures what was served since: one
// less than a second after counting began measures nothing. The bucket's
// hash must exist.
func (g *sharedGoodput) countingBegan(t *testing.T, d time.Duration) int64 {
	t.Helper()
	born := g.now(t) - d.Microseconds()
	g.set(t, "born", born)
	return born
}

// decreaseAllowed makes the next throttle a congestion event without
// waiting out bucket.DecreaseInterval since the previous one.
func (g *sharedGoodput) decreaseAllowed(t *testing.T, now int64) {
	g.set(t, "ldec", now-2*bucket.DecreaseInterval.Microseconds())
}

func TestGoodputIsMeasuredAcrossTheFleet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be, prefix, goodputCfg)
		b := newProcess(t, be, prefix, goodputCfg)
		for _, p := range []*process{a, b} {
			for range 20 {
				if err := p.do(t, vpcs, ok); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(3 * bucket.GoodputSlot) // B's counts reach Redis within a slot
		// The first event: 40 successes within the first window, counted
		// over the 2 s since counting began (moved back: one less than a
		// second after it measures nothing).
		g := &sharedGoodput{rdb: a, key: prefix + ":{" + vpcsKey + "}:bucket"}
		born := g.countingBegan(t, 2*time.Second)
		before := g.now(t)
		a.do(t, vpcs, throttl, once)
		after := g.now(t)
		lo := bucket.GoodputShare * 40 / (float64(after-born) / 1e6)
		hi := bucket.GoodputShare * 40 / (float64(before-born) / 1e6)
		if r := b.gov.Inspect(vpcs).Leaf.Rate; r < lo-1e-9 || r > hi+1e-9 {
			t.Fatalf("the fleet's rate %v after the throttle, want %v to %v (%v of the fleet's 40 successes over 2 s; one process's 20 give half)",
				r, lo, hi, bucket.GoodputShare)
		}
	})
}

// A congestion event starts the next measurement at the slot after it: the
// successes before it (here another process's, whose counts reach Redis
// after the event) are left out, those from that slot on are counted, and
// the next event moves the rate to GoodputShare of them per second (at
// least a second).
func TestSharedGoodputMeasuresFromTheSlotAfterTheEvent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		g := newSharedGoodput(t, be)
		g.a.TryReserve(0) // the bucket's hash: counting starts
		g.countingBegan(t, 2*time.Second)
		g.awaitSlotStart(t) // the successes and the event in one slot
		for range 10 {
			g.b.Success(0) // sent a slot later, after the event
		}
		before := g.now(t)
		if r, _ := g.a.Throttle(0, 0); r != goodputSpec.Rate*bucket.DecreaseFactor {
			t.Fatalf("rate %v after the first event with nothing served yet, want %v", r, goodputSpec.Rate*bucket.DecreaseFactor)
		}
		after := g.now(t)
		from := int64(g.field(t, "gfrom"))
		if from%g.slotUS != 0 || from <= before || from > after+g.slotUS {
			t.Fatalf("the measurement starts at %d, want the slot after the event (between %d and %d)", from, before, after)
		}
		time.Sleep(3 * bucket.GoodputSlot)
		if n := g.field(t, "gn"); n != 0 {
			t.Fatalf("%v successes counted since the event, want none: all were before it", n)
		}
		// From the slot after the event on, both processes' successes count.
		time.Sleep(time.Duration(max(0, from-g.now(t)))*time.Microsecond + bucket.GoodputSlot)
		g.succeed(6)
		if n := g.field(t, "gn"); n != 12 {
			t.Fatalf("%v successes counted since the event, want the fleet's 12", n)
		}
		now := g.now(t)
		g.decreaseAllowed(t, now)
		r, dec := g.b.Throttle(0, 0)
		lo := bucket.GoodputShare * 12 / math.Max(1, float64(g.now(t)-from)/1e6)
		hi := bucket.GoodputShare * 12 / math.Max(1, float64(now-from)/1e6)
		if !dec || r < lo-1e-9 || r > hi+1e-9 {
			t.Fatalf("rate %v after the second event, want %v to %v (%v x 12 successes per second)", r, lo, hi, bucket.GoodputShare)
		}
	})
}

// The measurement has no upper bound: the provider's bucket was empty at
// both events, so what the fleet was served in between is its refill,
// however long ago the previous event was. Here 200 successes over 40 s,
// 170 of them written into the hash, 30 from the two processes in the
// last second: 0.99 x 5 rps, not 0.99 x the 6 rps of the last window.
func TestSharedGoodputMeasuresTheWholeSpanBetweenEvents(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		g := newSharedGoodput(t, be)
		g.a.Throttle(0, 0) // the first event
		now := g.now(t)
		from := (now/g.slotUS - 400) * g.slotUS // 40 s ago
		g.set(t, "gfrom", from, "gn", 170, "glast", now)
		g.succeed(15)
		now = g.now(t)
		g.decreaseAllowed(t, now)
		r, dec := g.b.Throttle(0, 0)
		lo := bucket.GoodputShare * 200 / (float64(g.now(t)-from) / 1e6)
		hi := bucket.GoodputShare * 200 / (float64(now-from) / 1e6)
		if !dec || r < lo-1e-9 || r > hi+1e-9 {
			t.Fatalf("rate %v after 200 successes in 40 s since the previous event, want %v to %v", r, lo, hi)
		}
	})
}

// The first event has no earlier one to measure from: it counts the
// current and the previous window of GoodputWindow, aligned to when
// counting started. Counting started 12 s ago: 1,000 successes in the
// first window, 35 in the second, 20 in the current one (the processes'):
// the event moves the rate to 0.99 x 55 over the 7 s since the second
// window began.
func TestSharedGoodputFirstEventCountsTheLastTwoWindows(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		g := newSharedGoodput(t, be)
		g.a.TryReserve(0) // the bucket's hash: counting starts
		now := g.now(t)
		born := now - 12*1e6
		g.set(t, "born", born, "gk", 1, "gcur", 35, "gprev", 1000, "glast", now)
		g.succeed(10)
		if k := g.field(t, "gk"); k != 2 {
			t.Fatalf("window %v after successes 12 s after counting started, want 2", k)
		}
		r, dec := g.b.Throttle(0, 0)
		since := float64(born+windowUS) / 1e6
		lo := bucket.GoodputShare * 55 / (float64(g.now(t))/1e6 - since)
		hi := bucket.GoodputShare * 55 / (float64(now)/1e6 - since)
		if !dec || r < lo-1e-9 || r > hi+1e-9 {
			t.Fatalf("rate %v after the first event, want %v to %v (%v x 55 successes over about 7 s)", r, lo, hi, bucket.GoodputShare)
		}
	})
}

// againFrom checks the event after counting began again (after what) at
// the fleet's n successes since: counting began within the last second
// (at the first of them); moved a second back, the event measures them
// over the time since.
func (g *sharedGoodput) againFrom(t *testing.T, what string, n float64) {
	t.Helper()
	if born := g.field(t, "born"); int64(born) < g.now(t)-time.Second.Microseconds() {
		t.Fatalf("counting began at %v after the %s, more than a second ago (now %v): not at its first success", born, what, g.now(t))
	}
	born := int64(g.field(t, "born")) - time.Second.Microseconds()
	g.set(t, "born", born)
	before := g.now(t)
	g.decreaseAllowed(t, before)
	r, dec := g.b.Throttle(0, 0)
	lo := bucket.GoodputShare * n / (float64(g.now(t)-born) / 1e6)
	hi := bucket.GoodputShare * n / (float64(before-born) / 1e6)
	if !dec || r < lo-1e-9 || r > hi+1e-9 {
		t.Fatalf("rate %v after the %s, want %v to %v (%v x %v successes since counting began again)", r, what, lo, hi, bucket.GoodputShare, n)
	}
}

// A burst of demand that meets the provider's limit at once: the first
// event comes a fraction of a second after counting began, when the
// answers to the burst's other requests are not all counted in Redis yet
// (each process sends its counts within a slot). Here process A was
// served 5 and throttled; B was served 15, whose counts reach Redis after
// the event. The event measures nothing: the rate moves to GoodputCap of
// itself, not to 0.99 x the 5 successes counted (per second: the
// controller divides by at least a second), the collapse that set a
// fleet of eight processes to 11.9 rps of 20 (goodput 70.9%, with the
// burst handed out at once); the next event measures from it.
func TestSharedGoodputFirstEventWithinASecondMeasuresNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		g := newSharedGoodput(t, be)
		g.a.TryReserve(0) // the bucket's hash: counting starts
		g.awaitSlotStart(t)
		for range 15 {
			g.b.Success(0) // sent a slot later, after the event
		}
		for range 5 {
			g.a.Success(0) // sent with the throttle
		}
		r, dec := g.a.Throttle(0, 0)
		if want := bucket.GoodputCap * goodputSpec.Rate; !dec || math.Abs(r-want) > 1e-9 {
			t.Fatalf("rate %v (decreased %v) after a first event within a second of counting, want %v (%v x the rate), not %v (%v x the 5 counted)",
				r, dec, want, bucket.GoodputCap, bucket.GoodputShare*5, bucket.GoodputShare)
		}
		if g.field(t, "gfrom") == 0 {
			t.Fatal("no measurement starts at the event")
		}
	})
}

// After more than GoodputWindow without a success (an outage, an open
// breaker, no demand) the fleet was not drawing on the provider's bucket:
// the next success starts counting again, as if no event had happened, so
// that the next event measures from it (20 successes), not the 1,020
// since the previous event 20 s ago.
func TestSharedGoodputMeasuresAgainAfterAGap(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		g := newSharedGoodput(t, be)
		g.a.Throttle(0, 0) // the first event, as counting begins: 97 rps
		now := g.now(t)
		g.set(t, "gfrom", (now/g.slotUS-200)*g.slotUS, "gn", 1000, "glast", now-windowUS-1e6)
		g.succeed(10)
		if from := g.field(t, "gfrom"); from != 0 {
			t.Fatalf("the measurement still starts at %v after the gap, want 0 (counting again)", from)
		}
		g.againFrom(t, "gap", 20)
	})
}

// The gap counts from the previous event too: a fleet throttled before
// any success, then paused (a Retry-After) for 20 s, was not drawing on
// the provider's bucket either, so the next success starts counting
// again and the next event measures from it (20 successes), not over
// the 20 s since the previous event.
func TestSharedGoodputMeasuresAgainAfterAPauseWithNoSuccessBefore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		g := newSharedGoodput(t, be)
		g.a.Throttle(0, 0) // the first event, nothing served, as counting begins: 97 rps
		now := g.now(t)
		g.set(t, "gfrom", (now/g.slotUS-200)*g.slotUS, "gn", 0, "glast", 0)
		g.succeed(10)
		if from := g.field(t, "gfrom"); from != 0 {
			t.Fatalf("the measurement still starts at %v after the pause, want 0 (counting again)", from)
		}
		g.againFrom(t, "pause", 20)
	})
}

// An event after more than GoodputWindow without a success since the
// later of the last success and the previous event (the first call after
// an idle spell throttled) measures nothing, as in process: the fleet was
// not drawing on the provider's bucket in the gap, and the time since the
// previous event would count it as a refill the provider never gave. It
// multiplies the rate by bucket.DecreaseFactor. Here 100 successes in the
// 5 s after the previous event, 30 s ago, then none: not 0.99 x 100 over
// the 30 s (3.3 rps); and, before any event, 100 successes in the first
// window of counting, which began 9.5 s ago, the last 6 s ago: not 0.99 x
// 100 over the 9.5 s (10.4 rps).
func TestSharedGoodputEventAfterAGapMeasuresNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		g := newSharedGoodput(t, be)
		r0, _ := g.a.Throttle(0, 0) // the first event
		now := g.now(t)
		g.set(t, "gfrom", (now/g.slotUS-300)*g.slotUS, "gn", 100, "glast", now-25*1e6)
		g.decreaseAllowed(t, now)
		if r, dec := g.b.Throttle(0, 0); !dec || math.Abs(r-r0*bucket.DecreaseFactor) > 1e-9 {
			t.Errorf("rate %v (decreased %v) at an event after a gap of 25 s since the last success, want %v (%v x %v: it measures nothing)",
				r, dec, r0*bucket.DecreaseFactor, bucket.DecreaseFactor, r0)
		}

		g = newSharedGoodput(t, be)
		g.a.TryReserve(0) // the bucket's hash: counting starts
		now = g.now(t)
		g.set(t, "born", now-95*1e5, "gk", 0, "gcur", 100, "gprev", 0, "glast", now-6*1e6)
		want := goodputSpec.Rate * bucket.DecreaseFactor
		if r, dec := g.b.Throttle(0, 0); !dec || math.Abs(r-want) > 1e-9 {
			t.Errorf("rate %v (decreased %v) at a first event after a gap of 6 s since the last success, want %v (%v x the rate: it measures nothing)",
				r, dec, want, bucket.DecreaseFactor)
		}
	})
}

// With nothing served, a throttle multiplies the rate by
// bucket.DecreaseFactor; after bucket.GoodputQuiet without a throttle the
// rate then climbs by bucket.GoodputStep of the ceiling, at most once per
// bucket.GoodputClimbInterval for the fleet, the step doubling with each
// climb (the hash's gcl counts them) until a throttle starts afresh.
func TestSharedGoodputRateClimbsByItsStep(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{})
		b := p.store.Bucket(vpcsKey, goodputSpec, 0)
		key := prefix + ":{" + vpcsKey + "}:bucket"
		b.TryReserve(0) // the bucket's hash: counting starts, moved 2 s back
		(&sharedGoodput{rdb: p, key: key}).countingBegan(t, 2*time.Second)
		if r, _ := b.Throttle(0, 0); r != 100*bucket.DecreaseFactor {
			t.Fatalf("rate %v after a throttle with nothing served, want %v", r, 100*bucket.DecreaseFactor)
		}
		if r, up := b.Success(time.Second); up {
			t.Fatalf("rate %v: climbed right after the throttle", r)
		}
		climbs := func() string {
			t.Helper()
			v, err := p.rdb.HGet(context.Background(), key, "gcl").Result()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		// The throttle and the last climb long ago.
		if err := p.rdb.HSet(context.Background(), key, "lthr", 0, "linc", 0).Err(); err != nil {
			t.Fatal(err)
		}
		want := 100*bucket.DecreaseFactor + bucket.GoodputStep*100
		if r, up := b.Success(3 * time.Second); !up || math.Abs(r-want) > 1e-9 {
			t.Fatalf("rate %v (increased %v) after a quiet interval, want %v", r, up, want)
		}
		// Asked again (a process asks at most once a second of its clock),
		// within GoodputClimbInterval of the climb by Redis's.
		if r, up := b.Success(5 * time.Second); up {
			t.Fatalf("rate %v: climbed twice within %v", r, bucket.GoodputClimbInterval)
		}
		if err := p.rdb.HSet(context.Background(), key, "linc", 0).Err(); err != nil {
			t.Fatal(err)
		}
		want += 2 * bucket.GoodputStep * 100
		if r, up := b.Success(7 * time.Second); !up || math.Abs(r-want) > 1e-9 {
			t.Fatalf("rate %v (increased %v) at the second climb, want %v (twice the step)", r, up, want)
		}
		if c := climbs(); c != "2" {
			t.Fatalf("gcl %q after two climbs, want 2", c)
		}
		b.Throttle(8*time.Second, 0)
		if c := climbs(); c != "0" {
			t.Fatalf("gcl %q after a throttle, want 0", c)
		}
	})
}
