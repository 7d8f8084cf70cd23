//go:build go1.26

package resilience

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
)

// derefErr is an error type whose methods read their receiver, as the
// SDKs' are (smithy's *OperationError, azcore's *ResponseError,
// googleapi's *Error): a nil one panics in every method.
type derefErr struct {
	code   string
	status int
	inner  error
}

func (e *derefErr) Error() string             { return e.code + ": failed" }
func (e *derefErr) ErrorCode() string         { return e.code }
func (e *derefErr) HTTPStatusCode() int       { return e.status }
func (e *derefErr) Header() http.Header       { return http.Header{"Retry-After": {fmt.Sprint(e.status)}} }
func (e *derefErr) RetryAfter() time.Duration { return time.Duration(e.status) }
func (e *derefErr) Unwrap() error             { return e.inner }
func (e *derefErr) ErrorMessage() string      { return e.code }
func (e *derefErr) ConnectionError() bool     { return e.inner != nil }
func (e *derefErr) Temporary() bool           { return e.status > 0 }
func (e *derefErr) Timeout() bool             { return e.status > 0 }

// noResponse is an answer error whose response is missing (the AWS SDK's
// ResponseError with no Response): its status method dereferences a nil
// field, its message does not.
type noResponse struct{ resp *http.Response }

func (e *noResponse) Error() string       { return "https response error" }
func (e *noResponse) HTTPStatusCode() int { return e.resp.StatusCode }

// badMessage is an error whose only method, Error, reads its receiver.
type badMessage struct{ msg string }

func (e *badMessage) Error() string { return e.msg }

// The classifier reads every error of the process, an application's or
// an SDK's, by the methods those errors have. An error of the chain whose
// methods panic (a typed nil pointer whose methods read their receiver, a
// response error without its response) must not crash the process in the
// governor's code: it reads as FATAL, not a provider's answer, with no
// hint, and its description says that it could not be read.
func TestAnErrorWhoseMethodsPanicReadsAsFatal(t *testing.T) {
	var nilDeref *derefErr
	var nilMessage *badMessage
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"typed nil", nilDeref},
		{"wrapped typed nil", fmt.Errorf("op: %w", nilDeref)},
		{"joined typed nil", errors.Join(errors.New("first"), nilDeref)},
		{"typed nil under errors with no word of their own", fmt.Errorf("a: %w", fmt.Errorf("b: %w", nilDeref))},
		{"no response", fmt.Errorf("op: %w", &noResponse{})},
		{"typed nil message", nilMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			try := func(what string, f func()) {
				t.Helper()
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s panicked: %v", what, r)
					}
				}()
				f()
			}
			try("Classify", func() {
				if k := Classify(tc.err); k != Fatal {
					t.Errorf("Classify = %v, want FATAL", k)
				}
			})
			try("ClassifyStrict", func() {
				if k, _ := ClassifyStrict(tc.err); k != Fatal {
					t.Errorf("ClassifyStrict = %v, want FATAL", k)
				}
			})
			try("IsProviderAnswer", func() {
				if IsProviderAnswer(tc.err) {
					t.Error("IsProviderAnswer = true, want false")
				}
			})
			try("RetryAfter", func() {
				if d, ok := RetryAfter(tc.err); ok {
					t.Errorf("RetryAfter = %v, true; want no hint", d)
				}
			})
			try("DescribeError", func() {
				if d := DescribeError(tc.err); !strings.Contains(d, "panicked") {
					t.Errorf("DescribeError = %q, want it to say a method panicked", d)
				}
			})
		})
	}
}

// A governed call that ends with such an error is lost as errored (a
// local error: no provider's answer was read), listed with a description
// that says the error could not be read; the governor's log and events do
// not panic on it, and the log says once which type it was.
func TestAGovernedCallEndingWithAnUnreadableError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var events []observe.Event
		g := newGov(t, Config{}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
			WithObserver(observe.Func(func(ev observe.Event) { events = append(events, ev) })))
		var nilDeref *derefErr
		for _, how := range []string{"Do", "After and End", "End"} {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: panicked: %v", how, r)
					}
				}()
				r := newRun(context.Background())
				err := error(nilDeref)
				switch how {
				case "Do":
					sent := 0
					if got := Do(r.ctx, iamUsers, always(&sent, err), WithGovernor(g)); got != err || sent != 1 {
						t.Errorf("Do: %v after %d attempts, want the error after 1", got, sent)
					}
				case "After and End":
					gd, _ := g.Begin(r.ctx, iamUsers)
					gd.Enter(r.ctx)
					if k := gd.After(err); k != Fatal {
						t.Errorf("After = %v, want FATAL", k)
					}
					gd.End(err)
				case "End":
					gd, _ := g.Begin(r.ctx, iamUsers)
					gd.Enter(r.ctx)
					gd.End(err)
				}
				r.lost(t, g, LossErrored, 1)
				if rs := r.ledger.Reasons(); len(rs) != 1 || !strings.Contains(rs[0], "*resilience.derefErr") || !strings.Contains(rs[0], "panicked") {
					t.Errorf("%s: the ledger's reasons %q, want one naming the type and saying its method panicked", how, rs)
				}
			}()
		}
		if n := strings.Count(logs.String(), "panicked while the governor read it"); n != 1 {
			t.Errorf("the log says %d times that the error's method panicked, want once:\n%s", n, logs.String())
		}
		if len(events) == 0 {
			t.Error("no events")
		}
	})
}

// An error whose method panics may be wrapped by one that was read before
// the walk met it: an application's or an SDK's outer layer that carries
// the provider's error code itself. What those outer errors say is whole
// (the walk reads each error's methods before it unwraps it, and the first
// code, outermost, wins over any below), so it stands: a throttle the
// provider answered slows the scope, as it would without the broken error
// below it. The error is still unreadable for the log and its
// description, and what the broken error would have said (a hint, a
// status) is not read. Without a word of an outer layer's, the error is
// FATAL and no answer (TestAnErrorWhoseMethodsPanicReadsAsFatal).
func TestAnOuterLayersCodeStandsOverAnErrorWhoseMethodsPanic(t *testing.T) {
	var nilDeref *derefErr
	for _, tc := range []struct {
		name string
		err  error
		want Kind
	}{
		{"throttle code over a typed nil", &derefErr{code: "Throttling", status: 400, inner: nilDeref}, Throttled},
		{"wrapped throttle code over a typed nil", fmt.Errorf("op: %w", &derefErr{code: "Throttling", inner: nilDeref}), Throttled},
		{"transient status over a typed nil", &derefErr{status: 503, code: "ServiceUnavailable", inner: nilDeref}, Transient},
		{"fatal code over a typed nil", &derefErr{code: "AccessDenied", status: 403, inner: nilDeref}, Fatal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := Classify(tc.err); k != tc.want {
				t.Errorf("Classify = %v, want %v: the outer error's code was read whole before the error below it panicked", k, tc.want)
			}
			if k, ok := ClassifyStrict(tc.err); k != tc.want || !ok {
				t.Errorf("ClassifyStrict = %v, %v; want %v, true", k, ok, tc.want)
			}
			if !IsProviderAnswer(tc.err) {
				t.Error("IsProviderAnswer = false, want true: the outer error carries the provider's code")
			}
			d := DescribeError(tc.err)
			if !strings.Contains(d, "panicked") || (tc.want == Throttled) != strings.HasPrefix(d, "throttled: ") {
				t.Errorf("DescribeError = %q, want it to say a method panicked, prefixed \"throttled: \" when THROTTLED", d)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		gd, _ := g.Begin(context.Background(), iamUsers)
		gd.Enter(context.Background())
		if k := gd.After(&derefErr{code: "Throttling", status: 400, inner: nilDeref}); k != Throttled {
			t.Errorf("a governed call's After = %v, want THROTTLED", k)
		}
		gd.End(nil)
	})
}
