package resilience

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/hint"
)

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

// The parser is public and measures an HTTP-date from the time it is
// given, and RetryAfterAt reads an error's hint against another clock.
func TestParseRetryAfterTakesItsClock(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	if d, ok := ParseRetryAfter("Wed, 02 Dec 2026 10:00:30 GMT", now); !ok || d != 30*time.Second {
		t.Fatalf("HTTP-date: %v %v", d, ok)
	}
	if d, ok := ParseRetryAfter("1.5", now); !ok || d != 1500*time.Millisecond {
		t.Fatalf("seconds: %v %v", d, ok)
	}
	if _, ok := ParseRetryAfter("soon", now); ok {
		t.Fatal("a word is a hint")
	}
	err := &apiErr{code: "Throttling", status: 429, header: http.Header{"Retry-After": {"Wed, 02 Dec 2026 10:01:00 GMT"}}}
	if d, ok := RetryAfterAt(err, now); !ok || d != time.Minute {
		t.Fatalf("RetryAfterAt: %v %v", d, ok)
	}
}

// Budget reads a provider's budget, making nothing.
func TestBudgetIsARead(t *testing.T) {
	seven := 7
	g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: &seven}})
	if b := g.Budget("aws"); b != 7 {
		t.Fatalf("aws budget %v", b)
	}
	if b := g.Budget("github"); b != 500 || g.existing("github") != nil {
		t.Fatalf("github budget %v, made: %v", b, g.existing("github") != nil)
	}
}

// The governor's own error that refused a call says when the scope can
// go: its wait, not the hint of the answer it wraps, which is as old as
// that answer (a pause for it is part of the wait). Here the answer asked
// for 2 s and the scope can go in 60 s. Before, RetryAfter read the
// wrapped answer's Retry-After first and said 2 s: a scheduler that
// requeued the work for then found the scope shut.
func TestRetryAfterOfARefusalIsTheScopesWait(t *testing.T) {
	answer := throttleAfter(2 * time.Second)
	aws := fmt.Errorf("operation error EC2: DescribeVpcs: %w", &CircuitOpenError{Wait: time.Minute, Err: answer})
	for _, err := range []error{
		&CircuitOpenError{Wait: time.Minute, Err: answer},
		&WouldWaitError{Wait: time.Minute, Err: ErrNoToken, Last: answer},
		&DeadlineExceededError{Wait: time.Minute, Err: answer},
		aws, // inside an SDK's error
	} {
		if d, ok := RetryAfter(err); !ok || d != time.Minute {
			t.Errorf("RetryAfter(%v) = %v, %v; want 1m0s, the scope's wait", err, d, ok)
		}
	}
	// A retry budget's refusal has no wait of its own: the answer's hint.
	if d, ok := RetryAfter(&RetryBudgetExhaustedError{Err: answer}); !ok || d != 2*time.Second {
		t.Errorf("RetryAfter of a budget's refusal = %v, %v; want the answer's 2s", d, ok)
	}
}
