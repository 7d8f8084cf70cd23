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
		b.update(time.Hour, c[0], c[1], c[2])
		b.mu.Lock()
		st, fetched := b.state, b.fetched
		b.mu.Unlock()
		if st != state.Closed || fetched != never {
			t.Errorf("view %v kept: %v, fetched %v", c, st, fetched)
		}
	}
	if st, wait := b.update(time.Hour, "open", "30000000", "0"); st != state.Open || wait != 30*time.Second {
		t.Errorf("a valid view: %v %v", st, wait)
	}
}
