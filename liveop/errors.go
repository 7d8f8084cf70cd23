package liveop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Reason says why a live operation was refused.
type Reason string

// The reasons of a RefusedError.
const (
	// ReasonCooldown: a scope of the operation ran recently.
	ReasonCooldown Reason = "cooldown"
	// ReasonBusy: a scope, or the guard, is at its cap of running
	// operations, counting the slots kept for callers that wait
	// (Request.Wait) before this one; the message says which.
	ReasonBusy Reason = "busy"
	// ReasonQuota: the caller started its quota of operations in the
	// window.
	ReasonQuota Reason = "quota"
	// ReasonTimeout: the operation ran past its timeout and was cancelled.
	ReasonTimeout Reason = "timeout"
)

// Sentinels, one per reason: errors.Is(err, ErrCooldown) holds for a
// *RefusedError whose Reason is ReasonCooldown, and so on.
var (
	ErrCooldown = errors.New("liveop: refused: cooldown")
	ErrBusy     = errors.New("liveop: refused: busy")
	ErrQuota    = errors.New("liveop: refused: quota")
	ErrTimeout  = errors.New("liveop: refused: timeout")
)

// ErrPanicked is matched (errors.Is) by the error the callers of an
// operation get when its function panicked.
var ErrPanicked = errors.New("liveop: the operation panicked")

// ErrGoexit is the Value of the *PanicError the callers of an operation
// get when its function called runtime.Goexit (as testing.T.FailNow
// does) instead of returning: the operation ends as if it had panicked,
// and errors.Is finds ErrGoexit as well as ErrPanicked in the error, so
// that a caller can tell it from a panic (but for a panic with
// ErrGoexit itself).
var ErrGoexit = errors.New("liveop: the operation's function called runtime.Goexit")

// ErrResultType is matched (errors.Is) by the error Run returns to a
// caller that joined an operation whose function returned a value of
// another type than the caller's (Run[int] joining a Run[string] of the
// same key): a program error, not the operation's failure.
var ErrResultType = errors.New("liveop: the operation returned another type")

// ErrNilFunc is the error Run returns, starting and joining nothing, when
// it is given a nil function: a program error, as ErrResultType is.
var ErrNilFunc = errors.New("liveop: Run with a nil function")

// ErrAbandoned is the cause (context.Cause) of the context of an
// operation's function cancelled because every caller waiting for its
// result has gone. It wraps context.Canceled, so that errors.Is finds
// either, as it finds context.DeadlineExceeded in the cause of an
// operation cancelled at its timeout.
var ErrAbandoned = fmt.Errorf("liveop: every caller of the operation has gone: %w", context.Canceled)

// ErrNested is matched (errors.Is) by the error Run returns when it is
// called, with the context an operation's function was given, for the key
// of that operation, of one it runs inside, or of one that waits for it
// (its function runs, or joined, a Run that waits for it, for its result
// or for a slot that only it, or operations that wait for it, can free,
// however indirectly): joining it, the call would wait for its own
// result. An operation that the caller's operation runs inside waits
// for it only while its function's Run for it has not returned (it may
// return at a deadline of its own, or at the operation's timeout), and
// nothing waits for a Run made once the function whose context it has
// has returned. Only the operations of the Guard the Run is given count:
// a Run on another Guard is nested in none of them.
var ErrNested = errors.New("liveop: Run inside the operation it would join")

// RefusedError is a live operation refused (cooldown, busy, quota) or cut
// off (timeout). Its message is the one to show a person or an agent; it
// ends by pointing at the cached dataset. MarshalJSON gives the form for a
// tool's output. Each refusal of a Run is a RefusedError of its own, but
// every caller of an operation cut off by its timeout gets the same
// *RefusedError, as every caller of a panicking one gets the same
// *PanicError. The Guard never changes a RefusedError it returned, so it
// may be read from several goroutines at once, as long as none changes
// its fields (or Scopes, which the callers of a timeout share); the zero
// RefusedError has no reason, matches no sentinel and has an empty
// message.
type RefusedError struct {
	Reason Reason
	// RetryAfter is when retrying may succeed: the longest cooldown left,
	// or the time until the caller's oldest start leaves the window; zero
	// when unknown (busy, timeout).
	RetryAfter time.Duration
	// Scopes are the scopes that caused the refusal (the cooling ones, the
	// ones at their cap; none when every scope is), sorted, or the
	// operation's scopes for a timeout.
	Scopes []string
	// Caller is the caller refused; empty for a timeout.
	Caller string

	msg   string
	cause error // the waiting caller's context error, or the timeout's
}

// Error returns the message, such as "live collection of aws/123456789012
// ran recently; cooling down, retry in 118s or use the cached dataset".
func (e *RefusedError) Error() string { return e.msg }

// Is reports whether target is the sentinel of the reason.
func (e *RefusedError) Is(target error) bool {
	switch e.Reason {
	case ReasonCooldown:
		return target == ErrCooldown
	case ReasonBusy:
		return target == ErrBusy
	case ReasonQuota:
		return target == ErrQuota
	case ReasonTimeout:
		return target == ErrTimeout
	}
	return false
}

// Unwrap returns what ended a wait: context.DeadlineExceeded for a
// timeout, the caller's context error for a busy refusal that ended a
// Request.Wait, ErrNested for a busy refusal of a Request.Wait that would
// wait for a slot only the operation the caller runs inside (or one that
// waits for it) can free; nil otherwise.
func (e *RefusedError) Unwrap() error { return e.cause }

// MarshalJSON returns {reason, message, retry_after_seconds, scopes,
// caller}, with the retry-after in seconds rounded up to 0.1 (so that a
// retry at that time is not refused again; 0.1 at the least when there is
// one) and empty fields left out.
func (e *RefusedError) MarshalJSON() ([]byte, error) {
	retryAfter := tenthsUp(max(0, e.RetryAfter)) // known, however short: 0.1 at the least, not left out as unknown
	return json.Marshal(struct {
		Reason     Reason   `json:"reason"`
		Message    string   `json:"message"`
		RetryAfter float64  `json:"retry_after_seconds,omitempty"`
		Scopes     []string `json:"scopes,omitempty"`
		Caller     string   `json:"caller,omitempty"`
	}{e.Reason, e.msg, retryAfter, e.Scopes, e.Caller})
}

func cooldownError(scopes []string, wait time.Duration) *RefusedError {
	return &RefusedError{Reason: ReasonCooldown, RetryAfter: wait, Scopes: scopes,
		msg: fmt.Sprintf("live collection of %s ran recently; cooling down, retry in %ds or use the cached dataset",
			strings.Join(scopes, ", "), ceilSeconds(wait))}
}

// busyError refuses for the scopes at their cap, or for every scope when
// there are none (the total cap). Of those, waiting are the ones full of
// the slots kept for callers waiting before this one (Request.Wait),
// whose operations have yet to start, not of operations that run.
func busyError(scopes, waiting []string) *RefusedError {
	running := slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return slices.Contains(waiting, s) })
	var msg string
	switch {
	case len(scopes) == 0:
		msg = "a live operation is already running for all scopes; retry when it finishes or use the cached dataset"
	case len(waiting) == 0:
		msg = fmt.Sprintf("a live operation is already running for %s; retry when it finishes or use the cached dataset", strings.Join(scopes, ", "))
	case len(running) == 0:
		msg = fmt.Sprintf("a live operation waiting before this one holds %s; retry when it starts and finishes or use the cached dataset", strings.Join(scopes, ", "))
	default:
		msg = fmt.Sprintf("a live operation is already running for %s, and one waiting before this one holds %s; retry when they finish or use the cached dataset",
			strings.Join(running, ", "), strings.Join(waiting, ", "))
	}
	return &RefusedError{Reason: ReasonBusy, Scopes: scopes, msg: msg}
}

// selfWaitError turns the busy refusal r of a Run inside an operation's
// function into the refusal of a Run that would wait for itself
// (Guard.waitsForItself): the slot it would wait for (of the scopes
// holding; none: of the total) is held only by operations that cannot
// end while it waits, the one it runs inside or ones that wait for it.
// It wraps ErrNested, and its message says to make the Run once the
// operation it runs inside has returned, not to retry when those
// operations finish, which they do not while the Run waits. r keeps its
// Scopes, those at their cap.
func selfWaitError(r *RefusedError, holding []string) *RefusedError {
	what := "every slot of all scopes"
	if len(holding) > 0 {
		what = strings.Join(holding, ", ")
	}
	r.msg = fmt.Sprintf("the live operations holding %s cannot finish while this one waits for a slot: this one runs inside one of them, or inside one they wait for; run this one once the operation it runs inside has returned, or use the cached dataset", what)
	r.cause = ErrNested
	return r
}

// busyWaitingError refuses for the total cap, full of the slots kept for
// callers waiting before this one, whose operations have yet to start.
func busyWaitingError() *RefusedError {
	return &RefusedError{Reason: ReasonBusy,
		msg: "a live operation waiting before this one holds the last slot of all scopes; retry when it starts and finishes or use the cached dataset"}
}

func quotaError(caller string, max int, window string, wait time.Duration) *RefusedError {
	return &RefusedError{Reason: ReasonQuota, RetryAfter: wait,
		msg: fmt.Sprintf("caller '%s' reached its quota of %d live operations per %ss; retry in %ds or use the cached dataset",
			caller, max, window, ceilSeconds(wait))}
}

func timeoutError(scopes []string, timeout time.Duration, cause error) *RefusedError {
	return &RefusedError{Reason: ReasonTimeout, Scopes: scopes, cause: cause,
		msg: fmt.Sprintf("live operation did not finish within %ss and was cancelled; retry later or use the cached dataset",
			formatSeconds(timeout))}
}

func ceilSeconds(d time.Duration) int64 { return int64(math.Ceil(max(d, 0).Seconds())) }

// PanicError is what the callers of a panicking operation get (errors.As
// finds it; it matches ErrPanicked): Value is what the function panicked
// with (ErrGoexit when it called runtime.Goexit), Stack the stack of its
// goroutine at the panic, as x/sync/singleflight reports a panic. A program that shows the error to
// someone who cannot act on a stack (an agent, through a tool result)
// shows Value, and logs Stack. Every caller of the operation gets the same
// *PanicError, which neither the Guard nor its methods change: it may be
// read from several goroutines at once, as long as none changes its
// fields (or Value, which they share). The zero PanicError, which the
// Guard never returns, still matches ErrPanicked and says the operation
// panicked with <nil>, with no stack.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns "liveop: the operation panicked: <value>", then a blank
// line and the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("%v: %v\n\n%s", ErrPanicked, e.Value, e.Stack)
}

// Unwrap returns ErrPanicked and, when the operation panicked with an
// error, that error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrPanicked, err}
	}
	return []error{ErrPanicked}
}

// resultTypeError is what a caller gets that joined an operation whose
// function returned a value of another type than the caller's.
type resultTypeError struct {
	key       string
	got, want reflect.Type // got nil: the function returned a nil value of an interface type
	err       error        // the operation's own error, if it returned one too
}

func (e *resultTypeError) Error() string {
	got := "nil" // a nil value of the function's interface type
	if e.got != nil {
		got = e.got.String()
	}
	msg := fmt.Sprintf("liveop: operation %q returned %s, not %v", e.key, got, e.want)
	if e.err != nil {
		msg += " (and the error: " + e.err.Error() + ")"
	}
	return msg
}

// Unwrap returns ErrResultType and, when the operation returned an error
// with its value, that error.
func (e *resultTypeError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrResultType, e.err}
	}
	return []error{ErrResultType}
}
