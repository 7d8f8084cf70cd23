//go:build go1.25

package breaker

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

const sec = time.Second

func spec() state.BreakerSpec {
	return state.BreakerSpec{Threshold: 5, Cooldown: 60 * sec, MaxCooldown: 600 * sec}
}

func TestOpensAfterThresholdConsecutiveFailures(t *testing.T) {
	b := New(spec())
	for i := range 4 {
		if b.Failure(0) {
			t.Fatalf("opened after %d failures", i+1)
		}
	}
	if _, ok, _ := b.Allow(0); !ok {
		t.Fatal("rejected after 4 failures")
	}
	if !b.Failure(0) {
		t.Fatal("did not open after 5 failures")
	}
	wait, ok, _ := b.Allow(10 * sec)
	if ok || wait != 50*sec {
		t.Fatalf("Allow = %v, %v; want rejected with 50s left", wait, ok)
	}
}

func TestSuccessResetsTheCount(t *testing.T) {
	b := New(spec())
	for range 4 {
		b.Failure(0)
	}
	b.Success()
	for range 4 {
		if b.Failure(0) {
			t.Fatal("opened: the success did not reset the count")
		}
	}
}

func TestHalfOpenLetsOneProbeThrough(t *testing.T) {
	b := New(spec())
	for range 5 {
		b.Failure(0)
	}
	if _, ok, _ := b.Allow(60 * sec); !ok {
		t.Fatal("no probe after the cooldown")
	}
	if s := b.Snapshot(60 * sec); s.State != state.HalfOpen {
		t.Fatalf("state %v, want half_open", s.State)
	}
	if wait, ok, _ := b.Allow(61 * sec); ok || wait != 59*sec {
		t.Fatalf("second caller during the probe: %v %v, want rejected for the lease's 59s", wait, ok)
	}
	if !b.Success() {
		t.Fatal("a successful probe did not close it")
	}
	if _, ok, _ := b.Allow(61 * sec); !ok {
		t.Fatal("closed breaker rejects")
	}
}

func TestFailedProbeDoublesCooldownUpTo600s(t *testing.T) {
	b := New(spec())
	for range 5 {
		b.Failure(0)
	}
	now := time.Duration(0)
	want := []time.Duration{120, 240, 480, 600, 600}
	for _, w := range want {
		now += b.Snapshot(now).Wait
		if _, ok, _ := b.Allow(now); !ok {
			t.Fatal("no probe after the cooldown")
		}
		if !b.Failure(now) {
			t.Fatal("failed probe did not reopen")
		}
		if c := b.Snapshot(now).Cooldown; c != w*sec {
			t.Fatalf("cooldown %v, want %ds", c, w)
		}
	}
	// A successful probe restores the base cooldown.
	now += b.Snapshot(now).Wait
	b.Allow(now)
	b.Success()
	for range 5 {
		b.Failure(now)
	}
	if c := b.Snapshot(now).Cooldown; c != 60*sec {
		t.Fatalf("cooldown after recovery %v, want 60s", c)
	}
}

func TestProbeLeaseExpires(t *testing.T) {
	b := New(spec())
	for range 5 {
		b.Failure(0)
	}
	b.Allow(60 * sec) // the probe, which never reports back
	if _, ok, _ := b.Allow(119 * sec); ok {
		t.Fatal("a second probe within the lease")
	}
	if _, ok, _ := b.Allow(120 * sec); !ok {
		t.Fatal("the lease ran out but nobody became the probe")
	}
}

func TestLateFailureWhileOpenChangesNothing(t *testing.T) {
	b := New(spec())
	for range 5 {
		b.Failure(0)
	}
	if b.Failure(sec) {
		t.Fatal("reopened an open breaker")
	}
	if w := b.Snapshot(sec).Wait; w != 59*sec {
		t.Fatalf("wait %v, want 59s", w)
	}
}

func TestOnlyOneProbeUnderConcurrency(t *testing.T) {
	b := New(spec())
	for range 5 {
		b.Failure(0)
	}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if _, ok, _ := b.Allow(60 * sec); ok {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 1 {
		t.Fatalf("%d probes admitted, want 1", n)
	}
}

func TestPristine(t *testing.T) {
	b := New(spec())
	if !b.Pristine() {
		t.Fatal("new breaker not pristine")
	}
	b.Failure(0)
	if b.Pristine() {
		t.Fatal("breaker with a failure is pristine")
	}
	b.Success()
	if !b.Pristine() {
		t.Fatal("reset breaker not pristine")
	}
}

func TestProbeIsToldAndMayRetry(t *testing.T) {
	b := New(spec())
	for range 5 {
		b.Failure(0)
	}
	if _, ok, probe := b.Allow(60 * sec); !ok || !probe {
		t.Fatalf("the caller after the cooldown is not the probe: ok %v probe %v", ok, probe)
	}
	if _, ok, _ := b.Allow(61 * sec); ok {
		t.Fatal("another caller got through during the probe")
	}
	if _, ok := b.AllowProbe(62 * sec); !ok {
		t.Fatal("the probe's own retry was refused while half-open")
	}
	b.Failure(63 * sec) // the probe failed: open for 120 s
	if w, ok := b.AllowProbe(64 * sec); ok || w != 119*sec {
		t.Fatalf("AllowProbe on a reopened breaker: %v %v", ok, w)
	}
	if _, ok, probe := New(spec()).Allow(0); !ok || probe {
		t.Fatal("a closed breaker's caller is not a probe")
	}
}

// Verdict's channel is closed at the breaker's next verdict on its scope:
// the failure that opens it, the success that closes it or resets its
// failures; a failure below the threshold is no verdict.
func TestVerdictIsClosedByTheNextVerdict(t *testing.T) {
	b := New(state.BreakerSpec{Threshold: 2, Cooldown: time.Second})
	closedNow := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := b.Verdict()
	b.Failure(0)
	if closedNow(ch) {
		t.Fatal("a failure below the threshold is a verdict")
	}
	b.Success() // resets the failure
	if !closedNow(ch) {
		t.Fatal("a success that reset the failures is no verdict")
	}
	ch = b.Verdict()
	b.Failure(0)
	b.Failure(0) // opens
	if !closedNow(ch) {
		t.Fatal("opening is no verdict")
	}
	ch = b.Verdict()
	if _, ok, probe := b.Allow(time.Second); !ok || !probe {
		t.Fatal("no probe after the cooldown")
	}
	if closedNow(ch) {
		t.Fatal("letting the probe through is a verdict")
	}
	b.Success()
	if !closedNow(ch) {
		t.Fatal("the probe's success is no verdict")
	}
}

// Trip opens a closed breaker at once, reopens a half-open one with its
// cooldown doubled, and leaves an open one as it is.
func TestTrip(t *testing.T) {
	b := New(state.BreakerSpec{Threshold: 5, Cooldown: time.Minute, MaxCooldown: 10 * time.Minute})
	verdict := b.Verdict()
	if !b.Trip(0) {
		t.Fatal("Trip did not open a closed breaker")
	}
	select {
	case <-verdict:
	default:
		t.Fatal("Trip gave no verdict")
	}
	if s := b.Snapshot(0); s.State != state.Open || s.Wait != time.Minute {
		t.Fatalf("after Trip: %+v", s)
	}
	if b.Trip(time.Second) {
		t.Fatal("Trip reopened an open breaker")
	}
	if _, ok, probe := b.Allow(time.Minute); !ok || !probe {
		t.Fatal("no probe after the cooldown")
	}
	if !b.Trip(time.Minute) {
		t.Fatal("Trip did not reopen a half-open breaker")
	}
	if s := b.Snapshot(time.Minute); s.State != state.Open || s.Wait != 2*time.Minute {
		t.Fatalf("after tripping the probe: %+v, want open for a doubled cooldown", s)
	}
}

// Restore takes a state kept elsewhere, its doubled cooldown with it: a
// probe's lease is that cooldown, and a failed probe doubles it from
// there, up to MaxCooldown.
func TestRestoreKeepsTheDoubledCooldown(t *testing.T) {
	b := New(spec()) // 60 s, up to 600 s
	b.Restore(state.Open, 0, 240*sec, 100*sec)
	if w, ok, _ := b.Allow(50 * sec); ok || w != 50*sec {
		t.Fatalf("Allow at 50 s, restored open until 100 s: %v, %v", w, ok)
	}
	if s := b.Snapshot(50 * sec); s.State != state.Open || s.Cooldown != 240*sec {
		t.Fatalf("restored: %+v, want open with a cooldown of 240 s", s)
	}
	if _, ok, probe := b.Allow(100 * sec); !ok || !probe {
		t.Fatal("no probe at the end of the cooldown")
	}
	if s := b.Snapshot(100 * sec); s.Wait != 240*sec {
		t.Fatalf("the probe's lease: %v, want the restored cooldown, 240 s", s.Wait)
	}
	if !b.Failure(100 * sec) {
		t.Fatal("a failed probe did not reopen it")
	}
	if s := b.Snapshot(100 * sec); s.Cooldown != 480*sec || s.Wait != 480*sec {
		t.Fatalf("after a failed probe: %+v, want 480 s (240 s doubled)", s)
	}
	b.Restore(state.HalfOpen, 0, 600*sec, 700*sec)
	if _, ok := b.AllowProbe(650 * sec); !ok {
		t.Fatal("a restored half-open breaker refused its probe's retry")
	}
	if !b.Success() {
		t.Fatal("the probe's success did not close it")
	}
	b.Restore(state.Closed, 9, 60*sec, 0)
	if s := b.Snapshot(0); s.State != state.Closed || s.Failures != 4 {
		t.Fatalf("restored closed with 9 failures, threshold 5: %+v, want 4 (below the threshold)", s)
	}
	if !b.Failure(0) {
		t.Fatal("the fifth failure did not open it")
	}
}

// A breaker opens at any threshold up to MaxThreshold, the most
// consecutive failures it counts (its count, restored from a shared
// store here rather than counted one by one, stops at MaxThreshold-1).
func TestOpensAtMaxThreshold(t *testing.T) {
	b := New(state.BreakerSpec{Threshold: MaxThreshold, Cooldown: 60 * sec, MaxCooldown: 600 * sec})
	b.Restore(state.Closed, MaxThreshold-2, 60*sec, 0)
	if b.Failure(0) {
		t.Fatalf("opened after %d failures, threshold %d", MaxThreshold-1, MaxThreshold)
	}
	if s := b.Snapshot(0); s.State != state.Closed || s.Failures != MaxThreshold-1 {
		t.Fatalf("after %d failures: %+v", MaxThreshold-1, s)
	}
	if !b.Failure(0) {
		t.Fatalf("did not open after %d failures, its threshold", MaxThreshold)
	}
}

// Restore ends for any spec: one whose base cooldown is 0 (never doubling
// off it) or whose maximum is near the largest duration (doubling past
// it) used to loop for ever, the breaker's lock held.
func TestRestoreEndsForAnySpec(t *testing.T) {
	for _, s := range []state.BreakerSpec{
		{Threshold: 1, Cooldown: 0, MaxCooldown: time.Minute},
		{Threshold: 1, Cooldown: time.Second, MaxCooldown: math.MaxInt64},
		{Threshold: 1, Cooldown: -time.Second, MaxCooldown: time.Minute},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			b := New(s)
			b.Restore(state.Open, 0, math.MaxInt64, time.Hour)
			b.Snapshot(0)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Restore with spec %+v did not return", s)
		}
	}
}

// A threshold above MaxThreshold, which its count of failures never
// reaches, is read as MaxThreshold, as one below 1 is read as 1: a Store
// (resilience.MemoryStore) given such a spec makes a breaker that opens
// once it has counted the most failures it counts, not one that never
// opens.
func TestAThresholdAboveMaxThresholdOpensAtIt(t *testing.T) {
	b := New(state.BreakerSpec{Threshold: 2 * MaxThreshold, Cooldown: 60 * sec, MaxCooldown: 600 * sec})
	b.Restore(state.Closed, math.MaxInt, 60*sec, 0)
	if s := b.Snapshot(0); s.Failures != MaxThreshold-1 {
		t.Fatalf("restored with every failure it counts: %+v, want %d failures", s, MaxThreshold-1)
	}
	if !b.Failure(0) {
		t.Fatalf("threshold %d: did not open after %d failures, the most it counts", 2*MaxThreshold, MaxThreshold)
	}
}

// A cooldown is a span of the caller's clock: a clock set back (a wall
// clock stepped back by a day) does not hold an open breaker, nor its
// probe's lease, for longer than one cooldown from the step.
func TestAClockSetBackDoesNotLengthenTheCooldown(t *testing.T) {
	b := New(spec()) // 60 s
	day := 24 * time.Hour
	b.Trip(day)
	if s := b.Snapshot(0); s.Wait != 60*sec {
		t.Fatalf("open at 1 day, read at 0: wait %v, want at most the cooldown, 60s", s.Wait)
	}
	if w, ok, _ := b.Allow(0); ok || w != 60*sec {
		t.Fatalf("Allow(0), open at 1 day: %v, %v; want refused for 60s", w, ok)
	}
	if _, ok, probe := b.Allow(60 * sec); !ok || !probe {
		t.Fatal("no probe one cooldown after the clock was set back")
	}
	if w, ok := b.AllowProbe(30 * sec); !ok || w != 0 {
		t.Fatalf("AllowProbe during the lease: %v, %v", w, ok)
	}
	if w, ok, _ := b.Allow(-day); ok || w != 60*sec {
		t.Fatalf("Allow after setting the clock back a day during the lease: %v, %v; want refused for the lease, 60s", w, ok)
	}
}
