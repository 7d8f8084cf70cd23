package state

import (
	"encoding/json"
	"errors"

	"math"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// duration draws a duration the JSON form (seconds, a float64) holds to
// the nanosecond: 2^50 ns, 13 days, either way, or one of the ends of a
// Duration's range, which read back as themselves.
func duration(t *rapid.T, label string) time.Duration {
	return time.Duration(rapid.OneOf(
		rapid.Int64Range(-1<<50, 1<<50),
		rapid.SampledFrom([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, int64(time.Hour), 999999999}),
	).Draw(t, label))
}

func finite(t *rapid.T, label string) float64 {
	return rapid.Float64Range(-1e300, 1e300).Draw(t, label)
}

func bucketSnapshot(t *rapid.T, label string) BucketSnapshot {
	if rapid.Bool().Draw(t, label+".zero") {
		return BucketSnapshot{}
	}
	return BucketSnapshot{Rate: finite(t, label+".rate"), Ceiling: finite(t, label+".ceiling"),
		Tokens: finite(t, label+".tokens"), Paused: duration(t, label+".paused")}
}

func breakerSnapshot(t *rapid.T) BreakerSnapshot {
	return BreakerSnapshot{
		State:    BreakerState(rapid.OneOf(rapid.Int32Range(0, 2), rapid.Int32()).Draw(t, "state")),
		Failures: rapid.Int().Draw(t, "failures"),
		Cooldown: duration(t, "cooldown"),
		Wait:     duration(t, "wait"),
	}
}

// A snapshot reads back from the JSON it writes, every field of it: a
// program that reads the status page's JSON or a stored Summary's
// slowed buckets and breakers in Go gets what was written, the
// durations written in seconds included.
func TestSnapshotsReadBackFromTheirJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var paused time.Time
		if rapid.Bool().Draw(t, "paused") {
			paused = time.Unix(rapid.Int64Range(-62135596800, 253402300799).Draw(t, "sec"), rapid.Int64Range(0, 999999999).Draw(t, "nsec")).UTC()
		}
		want := ScopeSnapshot{
			Scope: Scope{Provider: rapid.String().Draw(t, "provider"), Account: rapid.String().Draw(t, "account"),
				Region: rapid.String().Draw(t, "region"), Service: rapid.String().Draw(t, "service"), Operation: rapid.String().Draw(t, "operation")},
			Leaf:        bucketSnapshot(t, "leaf"),
			Account:     bucketSnapshot(t, "account"),
			Provider:    bucketSnapshot(t, "provider"),
			Breaker:     breakerSnapshot(t),
			PausedUntil: paused,
			InFlight:    rapid.Int().Draw(t, "in_flight"),
			Waiting:     rapid.Int().Draw(t, "waiting"),
			Queued:      rapid.Int().Draw(t, "queued"),
			Dead:        rapid.String().Draw(t, "dead"),
			OpenReason:  rapid.String().Draw(t, "open_reason"),
			MaxInFlight: rapid.Int().Draw(t, "max_in_flight"),
			RetryBudget: finite(t, "retry_budget"),
		}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got ScopeSnapshot
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !got.PausedUntil.Equal(want.PausedUntil) {
			t.Fatalf("%s read back paused until %v, want %v", b, got.PausedUntil, want.PausedUntil)
		}
		got.PausedUntil = want.PausedUntil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s read back as\n %+v\nwant\n %+v", b, got, want)
		}
		// Each alone, as a Summary's maps hold them.
		for _, v := range []any{want.Leaf, want.Breaker} {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			p := reflect.New(reflect.TypeOf(v))
			if err := json.Unmarshal(b, p.Interface()); err != nil || !reflect.DeepEqual(p.Elem().Interface(), v) {
				t.Fatalf("%s read back as %+v, %v; want %+v", b, p.Elem().Interface(), err, v)
			}
		}
	})
}

// A breaker's state reads back from the text it writes, a name or, for a
// value that is no position, state.BreakerState(n); other text is a
// *BreakerStateError, and a snapshot's durations are numbers of seconds.
func TestBreakerStateReadsItsText(t *testing.T) {
	for _, s := range []BreakerState{Closed, HalfOpen, Open, 3, -1, math.MaxInt32, math.MinInt32} {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got BreakerState = 7
		if err := got.UnmarshalText(b); err != nil || got != s {
			t.Errorf("%s read back as %v, %v", b, got, err)
		}
	}
	for _, bad := range []string{"", "OPEN", "half-open", "state.BreakerState()", "state.BreakerState(x)",
		"state.BreakerState(2147483648)", "state.BreakerState(1", " open"} {
		got := Open
		err := got.UnmarshalText([]byte(bad))
		var se *BreakerStateError
		if !errors.As(err, &se) || se.Text != bad || got != Open {
			t.Errorf("%q read as %v, %T %v; want a *BreakerStateError of the text, the state unchanged", bad, got, err, err)
		}
	}
	var b BreakerSnapshot
	err := json.Unmarshal([]byte(`{"state":"open","cooldown_seconds":"90"}`), &b)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "cooldown_seconds" {
		t.Errorf("cooldown_seconds a string: %T %v; want a *json.UnmarshalTypeError of the field", err, err)
	}
}

// instant draws a time JSON writes (RFC 3339, years 0 to 9999), in UTC,
// or the zero time.
func instant(t *rapid.T, label string) time.Time {
	if rapid.Bool().Draw(t, label+".zero") {
		return time.Time{}
	}
	return time.Unix(rapid.Int64Range(-62167219200, 253402300799).Draw(t, label+".sec"), rapid.Int64Range(0, 999999999).Draw(t, label+".nsec")).UTC()
}

// A scope's streak of failed answers (ScopeSnapshot.Failing) reads back
// from the JSON it writes, its times to the nanosecond: a program that
// reads the status page's JSON in Go sees since when a scope fails. (Its
// own property, so that the fail files of the one above stay valid.)
func TestAStreakReadsBackFromItsJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := ScopeSnapshot{Scope: Scope{Provider: "aws"}, Failing: StreakSnapshot{
			Since: instant(t, "since"), Last: instant(t, "last"), Calls: rapid.Int().Draw(t, "calls"),
			Throttled: rapid.Bool().Draw(t, "throttled"), DeadFrom: instant(t, "dead_from"), CallsShort: rapid.Int().Draw(t, "calls_short")}}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var got ScopeSnapshot
		if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s read back as\n %+v, %v\nwant\n %+v", b, got, err, want)
		}
	})
}
