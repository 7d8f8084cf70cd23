//go:build go1.26

package resilience

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// brokenCause is an answer error whose own methods read fields it has
// (its code, status, headers and message), and whose Unwrap reads the
// cause through a pointer left nil: only Unwrap panics.
type brokenCause struct {
	code   string
	status int
	msg    string
	cause  *struct{ err error }
}

func (e *brokenCause) Error() string       { return e.code + ": " + e.msg }
func (e *brokenCause) ErrorCode() string   { return e.code }
func (e *brokenCause) HTTPStatusCode() int { return e.status }
func (e *brokenCause) Header() http.Header { return http.Header{"Retry-After": {"7"}} }
func (e *brokenCause) Unwrap() error       { return e.cause.err }

// An error whose Unwrap alone panics was read whole before the walk
// asked it for its cause: its code, status, headers and message are
// what it says, and they stand, as an outer layer's do over an error
// below it that panics (TestAnOuterLayersCodeStandsOverAnErrorWhoseMethodsPanic).
// Only its cause is unreadable: a throttle it carries is Throttled, the
// provider's answer, with its Retry-After; a fatal code is the
// provider's fatal answer, not a local error; and its description still
// says that a method panicked, with its message.
func TestAnErrorWhoseUnwrapAlonePanicsKeepsWhatItSays(t *testing.T) {
	throttled := &brokenCause{code: "Throttling", status: 400, msg: "Rate exceeded"}
	denied := &brokenCause{code: "AccessDenied", status: 403, msg: "not authorized"}
	for _, tc := range []struct {
		name string
		err  error
		want Kind
		msg  string
	}{
		{"its own throttle code", throttled, Throttled, "Throttling: Rate exceeded"},
		{"its own throttle code, wrapped", fmt.Errorf("op: %w", throttled), Throttled, "op: Throttling: Rate exceeded"},
		{"its own fatal code", denied, Fatal, "AccessDenied: not authorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := Classify(tc.err); k != tc.want {
				t.Errorf("Classify = %v, want %v: the error's own code was read before its Unwrap panicked", k, tc.want)
			}
			if !IsProviderAnswer(tc.err) {
				t.Error("IsProviderAnswer = false, want true: the error carries the provider's code and status")
			}
			if d, ok := RetryAfter(tc.err); tc.want == Throttled && (!ok || d != 7*time.Second) {
				t.Errorf("RetryAfter = %v, %v; want 7s, true: the error's own header", d, ok)
			}
			d := DescribeError(tc.err)
			if !strings.Contains(d, "panicked") || !strings.HasSuffix(d, ": "+tc.msg) || (tc.want == Throttled) != strings.HasPrefix(d, "throttled: ") {
				t.Errorf("DescribeError = %q, want it to say a method panicked, end with the message %q, and be prefixed \"throttled: \" when THROTTLED", d, tc.msg)
			}
		})
	}

	// A governed call's answer: the throttle slows the scope and pauses
	// it for the hint; the fatal answer loses no call as errored.
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		r := newRun(context.Background())
		gd, _ := g.Begin(r.ctx, iamUsers)
		gd.Enter(r.ctx)
		if k := gd.After(throttled); k != Throttled {
			t.Errorf("a governed call's After = %v, want THROTTLED", k)
		}
		gd.End(throttled)
		if s := g.Inspect(iamUsers); s.Leaf.Rate >= s.Leaf.Ceiling || s.Leaf.Paused < 6*time.Second {
			t.Errorf("the scope at %.2f of %.2f rps, paused %v: want it slowed and paused for the answer's 7s", s.Leaf.Rate, s.Leaf.Ceiling, s.Leaf.Paused)
		}
		if n := r.ledger.Count(LossGaveUp); n != 1 {
			t.Errorf("the ledger counts %d calls given up, want 1: %q", n, r.ledger.Describe())
		}

		gd, _ = g.Begin(r.ctx, iamUsers)
		gd.Enter(r.ctx)
		gd.After(denied)
		gd.End(denied)
		if n := r.ledger.Count(LossErrored); n != 0 {
			t.Errorf("the provider's fatal answer, whose Unwrap panics, lost a call as errored (a local error): %q", r.ledger.Describe())
		}
	})
}
