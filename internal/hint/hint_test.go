package hint

import (
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5", 5 * time.Second, true},
		{" 120 ", 120 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"0", 0, true},
		{"-5", 0, true},
		{"1e12", time.Duration(math.MaxInt64), true}, // saturates; pauses cap it at 300 s
		{"abc", 0, false},
		{"", 0, false},
		{"NaN", 0, false},
		{"inf", 0, false},
		{"Infinity", 0, false},
		{"0x1p4", 0, false},
		{"1_000", 0, false},
		{"1e400", time.Duration(math.MaxInt64), true},
		{"Mon, 30 Nov 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Mon, 30 Nov 2026 11:00:00 GMT", 0, true},                            // in the past
		{"Fri, 01 Jan 2999 00:00:00 GMT", time.Duration(math.MaxInt64), true}, // far future saturates
		{"Monday, 30-Nov-26 12:00:10 GMT", 10 * time.Second, true},            // RFC 850
	} {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseQuotaResetsAfter(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"00:00:03", 3 * time.Second, true},
		{"00:01:02", 62 * time.Second, true},
		{"1.02:00:00", 26 * time.Hour, true},
		{"00:00:04.5", 4500 * time.Millisecond, true},
		{"3", 0, false},
		{"00:61:00", 0, false},
		{"x:00:00", 0, false},
		// The seconds are digits with an optional fraction, not any
		// number strconv reads: no hexadecimal, exponent, sign or
		// underscore, which no server means.
		{"00:00:0x1p4", 0, false},
		{"00:00:0x_1p4", 0, false},
		{"00:00:1e1", 0, false},
		{"00:00:+5", 0, false},
		{"00:00:-0", 0, false},
		{"00:00:.5", 0, false},
		{"00:00:5.", 0, false},
		{"1.00:00:00.5", 24*time.Hour + 500*time.Millisecond, true},
	} {
		got, ok := ParseQuotaResetsAfter(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseQuotaResetsAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"5", "-5", "1e12", "abc", "Fri, 01 Jan 2999 00:00:00 GMT", "NaN", "Inf", "0x1p4", "00:00:03", "1.02:03:04"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d, ok := ParseRetryAfter(v, now); ok && d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v", v, d)
		}
		if d, ok := ParseQuotaResetsAfter(v); ok && d < 0 {
			t.Fatalf("ParseQuotaResetsAfter(%q) = %v", v, d)
		}
	})
}

// A whole number of milliseconds (retry-after-ms, x-ms-retry-after-ms,
// x-amz-retry-after) or of seconds (Retry-After) reads as that many, to
// the nanosecond: 1001 ms is 1.001 s, not a nanosecond less, as a float's
// 1.001 times 1e9 truncated is. (Up to about 97 days, where a float64
// holds every nanosecond; every pause caps a hint at MaxPause.)
func TestWholeMillisecondsAndSecondsReadExactly(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		ms := rapid.OneOf(rapid.Int64Range(0, 10_000_000), rapid.Int64Range(0, 1<<33)).Draw(t, "ms")
		key := rapid.SampledFrom([]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms", "X-Amz-Retry-After"}).Draw(t, "header")
		if d, ok := FromHeader(http.Header{key: {strconv.FormatInt(ms, 10)}}, 429, now); !ok || d != time.Duration(ms)*time.Millisecond {
			t.Fatalf("%s: %d = %v, %v; want %v", key, ms, d, ok, time.Duration(ms)*time.Millisecond)
		}
		s := rapid.Int64Range(0, 1<<23).Draw(t, "s")
		if d, ok := ParseRetryAfter(strconv.FormatInt(s, 10), now); !ok || d != time.Duration(s)*time.Second {
			t.Fatalf("Retry-After: %d = %v, %v; want %v", s, d, ok, time.Duration(s)*time.Second)
		}
	})
}
