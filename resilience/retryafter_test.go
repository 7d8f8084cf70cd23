package resilience

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/hint"
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
	} {
		got, ok := hint.ParseQuotaResetsAfter(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseQuotaResetsAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestRetryAfterHeaderOrder(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	for _, c := range []struct {
		name   string
		status int
		h      http.Header
		want   time.Duration
		ok     bool
	}{
		{"retry-after-ms first", 429, h("retry-after-ms", "1500", "Retry-After", "9"), 1500 * time.Millisecond, true},
		{"x-ms-retry-after-ms", 429, h("x-ms-retry-after-ms", "250", "Retry-After", "9"), 250 * time.Millisecond, true},
		{"x-amz-retry-after (ms)", 503, h("x-amz-retry-after", "2000"), 2 * time.Second, true},
		{"Retry-After seconds", 429, h("Retry-After", "4"), 4 * time.Second, true},
		{"garbage ms falls through to Retry-After", 429, h("retry-after-ms", "soon", "Retry-After", "4"), 4 * time.Second, true},
		{"quota resets when remaining is 0", 200, h("x-ms-user-quota-remaining", "0", "x-ms-user-quota-resets-after", "00:00:05"), 5 * time.Second, true},
		{"quota resets when remaining is missing", 200, h("x-ms-user-quota-resets-after", "00:00:05"), 5 * time.Second, true},
		{"quota resets on a 429", 429, h("x-ms-user-quota-remaining", "3", "x-ms-user-quota-resets-after", "00:00:05"), 5 * time.Second, true},
		{"quota left: no hint", 200, h("x-ms-user-quota-remaining", "3", "x-ms-user-quota-resets-after", "00:00:05"), 0, false},
		{"Retry-After wins over quota", 429, h("Retry-After", "2", "x-ms-user-quota-resets-after", "00:00:05"), 2 * time.Second, true},
		{"negative is 0", 429, h("Retry-After", "-5"), 0, true},
		{"none", 429, h(), 0, false},
	} {
		got, ok := hint.FromHeader(c.h, c.status, time.Now())
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
		err := &apiErr{code: "Throttling", status: c.status, header: c.h}
		if got, ok := RetryAfter(err); got != c.want || ok != c.ok {
			t.Errorf("%s via an error: %v, %v", c.name, got, ok)
		}
	}
}

func TestRetryAfterOfOwnErrors(t *testing.T) {
	if d, ok := RetryAfter(&CircuitOpenError{Wait: 42 * time.Second}); !ok || d != 42*time.Second {
		t.Fatalf("%v %v", d, ok)
	}
	if _, ok := RetryAfter(nil); ok {
		t.Fatal("nil has a hint")
	}
	if _, ok := RetryAfter(codeErr{"Throttling", ""}); ok {
		t.Fatal("an error without headers has a hint")
	}
}

func TestHintCap(t *testing.T) {
	if hint.Cap(time.Duration(math.MaxInt64)) != 300*time.Second || hint.Cap(-time.Second) != 0 || hint.Cap(5*time.Second) != 5*time.Second {
		t.Fatal("capPause")
	}
}
