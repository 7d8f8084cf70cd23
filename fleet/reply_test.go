package fleet

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// What a script answers is read within range: nothing in a reply can
// overflow a duration, or become a rate the settings do not allow.
func TestRepliesAreReadWithinRange(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet), WithKeyTTL(time.Minute))
	defer s.Close()
	for _, c := range []struct {
		v    any
		want time.Duration
	}{
		{"1500", 1500 * time.Microsecond}, {int64(7), 7 * time.Microsecond},
		{"1e300", s.horizon}, {"inf", 0}, {"nan", 0}, {"-5", 0}, {"junk", 0}, {nil, 0},
		{"99999999999999999999999", s.horizon},
	} {
		if got := s.micros(c.v); got != c.want {
			t.Errorf("micros(%v) = %v, want %v", c.v, got, c.want)
		}
	}
	// A token's wait may reach past the horizon: a queue is as long as
	// the callers queued make it.
	for _, c := range []struct {
		v    any
		want time.Duration
	}{
		{"1500", 1500 * time.Microsecond}, {"2000000000", 2000 * time.Second},
		{"1e300", maxQueue}, {"inf", 0}, {"nan", 0}, {"-5", 0}, {"junk", 0}, {nil, 0},
	} {
		if got := queueMicros(c.v); got != c.want {
			t.Errorf("queueMicros(%v) = %v, want %v", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		v    any
		want int64
	}{{"3", 3}, {int64(-2), -2}, {"1e300", 1 << 53}, {"-inf", 0}, {"nan", 0}, {"x", 0}} {
		if got := toInt(c.v); got != c.want {
			t.Errorf("toInt(%v) = %v, want %v", c.v, got, c.want)
		}
	}
	b := newSharedBucket(s, "k", "b", state.BucketSpec{Rate: 10, Burst: 1, Floor: 0.5, Adaptive: true})
	for _, v := range []any{"inf", "nan", "0", "-1", "1e-300", "0.4", "10.5", "1e300", "junk"} {
		if r := b.setRate(v); r != 10 {
			t.Errorf("setRate(%v) took the rate %v", v, r)
		}
	}
	for _, c := range []struct {
		v    any
		want float64
	}{{"0.5", 0.5}, {"5", 5}, {"7.25", 7.25}, {"10", 10}} {
		if r := b.setRate(c.v); r != c.want {
			t.Errorf("setRate(%v) = %v", c.v, r)
		}
	}
	if n := b.leaseSize(); n < 1 || n > s.cfg.maxLease {
		t.Errorf("lease of %d", n)
	}
}

// A breaker's view from a reply the settings could not produce is not
// kept: the view goes stale and the next call asks Redis.
func TestAnInvalidBreakerViewGoesStale(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet))
	defer s.Close()
	b := newSharedBreaker(s, "k", state.BreakerSpec{Threshold: 5, Cooldown: time.Minute, MaxCooldown: 10 * time.Minute})
	for _, c := range [][3]any{
		{"ajar", "0", "0"},
		{"open", "1e300", "0"},
		{"open", "99999999999", "0"}, // a day, past the longest cooldown
	} {
		b.update(time.Hour, reading{st: c[0], wait: c[1], failures: c[2], sent: mono()})
		b.mu.Lock()
		st, fetched := b.state, b.fetched
		b.mu.Unlock()
		if st != state.Closed || fetched != never {
			t.Errorf("view %v kept: %v, fetched %v", c, st, fetched)
		}
	}
	if st, wait, _ := b.update(time.Hour, reading{st: "open", wait: "30000000", failures: "0", sent: mono()}); st != state.Open || wait != 30*time.Second {
		t.Errorf("a valid view: %v %v", st, wait)
	}
}

// Answers may cross: a reading replaces the breaker's view only when it is
// newer: its request was sent after the view's answer came back, or Redis
// read the breaker later by its clock. A lease request's answer that
// left Redis before this process opened the breaker, and came back after,
// does not close it again.
func TestAnOlderBreakerReadingKeepsTheView(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet))
	defer s.Close()
	b := newSharedBreaker(s, "k", state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: time.Minute})
	view := func() state.BreakerState {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.state
	}
	// A lease request is sent; then a failure opens the breaker.
	lease := mono()
	b.update(0, reading{st: "open", wait: "60000000", failures: "0", at: "2000", sent: mono()})
	if view() != state.Open {
		t.Fatal("the failure's answer was not kept")
	}
	// The lease request's answer: Redis read the breaker before the failure.
	if st, _, _ := b.update(0, reading{st: "closed", wait: "0", failures: "0", at: "1000", sent: lease}); st != state.Closed || view() != state.Open {
		t.Fatalf("an older reading: answered %v, the view is %v; want the answer closed and the view open", st, view())
	}
	// Sent before the view came back, read after it by Redis's clock: newer.
	b.update(0, reading{st: "half_open", wait: "0", failures: "0", at: "3000", sent: lease})
	if view() != state.HalfOpen {
		t.Fatalf("a newer reading of a request in flight with the view's was not kept: %v", view())
	}
	// Sent after the view came back: newer, whatever Redis's clock says (a
	// new master's may be behind after a failover).
	b.update(0, reading{st: "closed", wait: "0", failures: "0", at: "5", sent: mono()})
	if view() != state.Closed {
		t.Fatalf("a reading sent after the view came back was not kept: %v", view())
	}
}
