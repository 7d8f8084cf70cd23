package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/state"
)

// CircuitOpenError is returned, without sending anything, for a call whose
// scope's circuit breaker is open (or half-open with its probe out). It
// classifies as Throttled and reports the code Throttling, so error-code
// helpers treat it as throttling, and errors.Is(err, state.ErrCircuitOpen)
// holds. Err, when set, is the provider error of the attempt before the
// rejected retry; Unwrap returns it. Reason says why the breaker opened,
// as state.ScopeSnapshot.OpenReason does: "throttling" or "errors" (calls
// failed after their retries, the last with that kind of answer),
// "throttled for good" or "down" (every answer of the scope failed for
// the provider's breaker_dead_seconds). A breaker shared through a state
// store that keeps why it opened (fleet's) gives the reason of the process
// that opened it; it is empty when no process said (this process did not
// see the breaker open, and the store does not keep it).
// The governor returns it by pointer and never changes it afterwards, so
// that any goroutine may read it. The zero value names no scope (its
// Scope prints */*/*/*), no wait and no reason; it still matches
// state.ErrCircuitOpen.
type CircuitOpenError struct {
	Scope  Scope
	Wait   time.Duration // until the breaker lets a probe through
	Err    error
	Reason string // why the breaker opened; empty when unknown
}

// Error returns "circuit open for <scope>", then why: " after repeated
// throttling", " after repeated errors", ": throttled for good" or ":
// down" (nothing when the reason is unknown), then "; retry in <n>s".
func (e *CircuitOpenError) Error() string {
	var why string
	switch e.Reason {
	case "":
	case "throttling", "errors":
		why = " after repeated " + e.Reason
	default:
		why = ": " + e.Reason
	}
	return fmt.Sprintf("circuit open for %s%s; retry in %ds", oneLine(e.Scope), why, ceilSeconds(e.Wait))
}

// RetryAfter returns the time until the breaker lets a probe through.
func (e *CircuitOpenError) RetryAfter() time.Duration { return e.Wait }

// ErrorCode returns "Throttling".
func (e *CircuitOpenError) ErrorCode() string { return "Throttling" }

// ErrorMessage returns the message without the code, like an SDK API error.
func (e *CircuitOpenError) ErrorMessage() string { return e.Error() }

// Unwrap returns the provider error of the attempt before the refused
// retry, or nil.
func (e *CircuitOpenError) Unwrap() error { return e.Err }

// Is reports whether target is state.ErrCircuitOpen.
func (e *CircuitOpenError) Is(target error) bool { return target == state.ErrCircuitOpen }

// RetryBudgetExhaustedError ends a retry loop (the SDK's own loop, for the
// integrations) because the provider's retry budget is empty: the provider
// is degraded and more retries would only add load. Err is the provider
// error that would have been retried; Unwrap returns it. An integration
// whose retry also stops at a limit of consecutive retries may end it
// with this error too, as cloudggcp's GCP retry does past max_retries
// retries of a page: its Err is then that integration's error for the
// limit (cloudggcp.RetriesExhaustedError), which wraps the provider's, so
// that errors.As tells the limit from an empty budget. It classifies as
// Throttled and reports the code Throttling, and errors.Is(err,
// state.ErrBudgetExhausted) holds.
// The governor returns it by pointer and never changes it afterwards, so
// that any goroutine may read it. The zero value names no scope and
// wraps no answer; it still matches state.ErrBudgetExhausted.
type RetryBudgetExhaustedError struct {
	Scope Scope
	Err   error
}

// Error returns "retry budget exhausted for <provider> (<scope>)", with the
// provider error after a colon.
func (e *RetryBudgetExhaustedError) Error() string {
	msg := fmt.Sprintf("retry budget exhausted for %s (%s)", scopekey.OneLine(e.Scope.Provider), oneLine(e.Scope))
	if e.Err != nil {
		msg += ": " + errorText(e.Err)
	}
	return msg
}

// RetryAfter returns the provider's hint carried by Err, or 0: what
// RetryAfter(Err) returns, but that a *RetryBudgetExhaustedError in Err's
// chain gives none of its own, so that a chain that cycles through e is
// read once, as any chain is.
func (e *RetryBudgetExhaustedError) RetryAfter() time.Duration { return causeHint(e.Err) }

// ErrorCode returns "Throttling".
func (e *RetryBudgetExhaustedError) ErrorCode() string { return "Throttling" }

// ErrorMessage returns the message without the code.
func (e *RetryBudgetExhaustedError) ErrorMessage() string { return e.Error() }

// Unwrap returns the provider error that would have been retried.
func (e *RetryBudgetExhaustedError) Unwrap() error { return e.Err }

// Is reports whether target is state.ErrBudgetExhausted.
func (e *RetryBudgetExhaustedError) Is(target error) bool { return target == state.ErrBudgetExhausted }

// DeadlineExceededError ends a call whose deadline (the policy's, or the
// context's) would be overrun by a wait: for a rate token before anything
// was sent, or before a retry (Guard.Retry). It classifies as Transient and
// reports the code RequestTimeout, and errors.Is(err,
// context.DeadlineExceeded) holds. Err is the provider error that was not
// retried, or the context's error; Unwrap returns it.
// The governor returns it by pointer and never changes it afterwards, so
// that any goroutine may read it. The zero value names no scope, no
// wait and no error; it still matches context.DeadlineExceeded.
type DeadlineExceededError struct {
	Scope Scope
	Wait  time.Duration // the wait that would have overrun the deadline
	Err   error
}

// Error returns "deadline exceeded for <scope>", with the wait that would
// have overrun it and the provider error not retried, when there are.
func (e *DeadlineExceededError) Error() string {
	msg := fmt.Sprintf("deadline exceeded for %s", oneLine(e.Scope))
	if e.Wait > 0 {
		msg += fmt.Sprintf(": a wait of %.1fs would overrun it", e.Wait.Seconds())
	}
	if e.Err != nil && e.Err != context.DeadlineExceeded {
		msg += ": " + errorText(e.Err)
	}
	return msg
}

// RetryAfter returns the wait that would have overrun the deadline.
func (e *DeadlineExceededError) RetryAfter() time.Duration { return e.Wait }

// ErrorCode returns "RequestTimeout".
func (e *DeadlineExceededError) ErrorCode() string { return "RequestTimeout" }

// ErrorMessage returns the message without the code.
func (e *DeadlineExceededError) ErrorMessage() string { return e.Error() }

// Unwrap returns the provider error that was not retried, or the
// context's error, or nil.
func (e *DeadlineExceededError) Unwrap() error { return e.Err }

// Is reports whether target is context.DeadlineExceeded.
func (e *DeadlineExceededError) Is(target error) bool { return target == context.DeadlineExceeded }

// WouldWaitError is returned, before anything is sent, for a call that
// could go only after a wait it may not make: Guard.TryEnter makes none,
// and a call whose context carries WithMaxWait makes none longer than it
// says. Err says which check refused it: ErrNoToken (no rate token is
// usable in time), ErrNoSlot (no concurrency slot is free), or
// ErrCircuitOpen (the first call under WithAdmission, for a provider that
// waits for its breakers' verdicts, would have had to wait for the
// verdict longer than the admission allows). errors.Is(err, Err) holds;
// for a retry, Last is the answer it would have retried, which errors.Is
// and errors.As find too. A call refused so is lost as LossRefused
// (TryEnter records nothing until the caller gives up with End, and the
// first call under WithAdmission records nothing: its task runs again,
// which Deferred and ErrDeferred say, unless it had returned: see
// EndAdmission).
// It classifies as Throttled and reports the code Throttling, so that a
// scheduler requeues the work rather than failing it; RetryAfter says
// when the check may let the call through.
// The governor returns it by pointer and never changes it afterwards, so
// that any goroutine may read it. The zero value, whose Err is nil,
// names no check: errors.Is finds none of the three in it.
type WouldWaitError struct {
	Scope Scope
	Wait  time.Duration // until a token may be used, or the breaker lets a probe through; 0 when unknown (a slot)
	Err   error         // ErrNoToken, ErrNoSlot or ErrCircuitOpen
	Last  error         // for a retry, the provider's answer it would have retried

	// Deferred is true for a task's first call that its scheduler runs
	// again (WithAdmission, Admission.Deferred): nothing was sent or
	// recorded, and errors.Is(err, ErrDeferred) holds.
	Deferred bool
}

// Error returns "no rate token now for <scope>; retry in <n>s", "no
// concurrency slot now for <scope>", or "circuit open now for <scope>;
// retry in <n>s".
func (e *WouldWaitError) Error() string {
	switch e.Err {
	case ErrNoSlot:
		return fmt.Sprintf("no concurrency slot now for %s", oneLine(e.Scope))
	case ErrCircuitOpen:
		return fmt.Sprintf("circuit open now for %s; retry in %ds", oneLine(e.Scope), ceilSeconds(e.Wait))
	}
	return fmt.Sprintf("no rate token now for %s; retry in %ds", oneLine(e.Scope), ceilSeconds(e.Wait))
}

// RetryAfter returns the time until the check may let the call through
// (a token usable, a probe let through), or 0 when unknown.
func (e *WouldWaitError) RetryAfter() time.Duration { return e.Wait }

// ErrorCode returns "Throttling".
func (e *WouldWaitError) ErrorCode() string { return "Throttling" }

// ErrorMessage returns the message without the code.
func (e *WouldWaitError) ErrorMessage() string { return e.Error() }

// Is reports whether target is ErrDeferred and the error refused a first
// call that its scheduler runs again (Deferred).
func (e *WouldWaitError) Is(target error) bool { return target == ErrDeferred && e.Deferred }

// Unwrap returns Err (ErrNoToken, ErrNoSlot or ErrCircuitOpen), and the
// last answer when there is one.
func (e *WouldWaitError) Unwrap() []error {
	if e.Last != nil {
		return []error{e.Err, e.Last}
	}
	return []error{e.Err}
}

// CallEndedError is returned, without sending anything, for a retry
// readied (Guard.Pace, Guard.Admit, and the integrations' resend of an
// attempt that never left the process) on a Guard whose call's request
// has already ended: its outcome recorded (a stop the governor made, a
// refusal, a give-up, a context's end, a success), or its success held
// for End to record (a call that holds its slot across the SDK's
// retries). Nothing is recorded for it (the call's end was, once), and
// nothing is paced: an SDK that retried what ended the call (a retryer
// that retries the governor's refusal by its error code) sends nothing
// more. Err is the error the call ended with, which Guard.Retry returns
// after the call ended: the refusal that stopped it (a
// *RetryBudgetExhaustedError, a *WouldWaitError, a *CircuitOpenError, a
// *DeadlineExceededError, the context's error), which wraps the last
// answer, or else the last answer; Unwrap returns it, so that errors.Is
// finds the refusal's sentinel, errors.As the provider's error, and
// errors.Is(err, ErrCallEnded) holds. It is
// cloudg's own error: classified Fatal whatever it wraps (retrying it
// sends nothing), no provider's answer, and After and End record nothing
// of it.
// The governor returns it by pointer and never changes it afterwards, so
// that any goroutine may read it. The zero value names no scope and wraps
// no answer; it still matches ErrCallEnded.
type CallEndedError struct {
	Scope Scope
	Err   error // the error the call ended with (the refusal that stopped it, or its last answer); nil after a success
}

// Error returns "call to <scope> already ended; the retry was not sent",
// with the error the call ended with after a colon when there is one.
func (e *CallEndedError) Error() string {
	msg := fmt.Sprintf("call to %s already ended; the retry was not sent", oneLine(e.Scope))
	if e.Err != nil {
		msg += ": " + errorText(e.Err)
	}
	return msg
}

// Unwrap returns the error the call ended with, or nil.
func (e *CallEndedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCallEnded.
func (e *CallEndedError) Is(target error) bool { return target == ErrCallEnded }

// ErrCallEnded matches a *CallEndedError: a retry readied (Guard.Pace,
// Guard.Admit) after its call's request ended, which was not sent.
var ErrCallEnded = errors.New("resilience: call already ended")

// Sentinels of the checks that refuse a call which may not wait
// (WouldWaitError): no rate token is usable now (the scope's rate, its
// pause, or the provider's Retry-After for a retry), or no slot of the
// account's concurrency cap is free.
var (
	ErrNoToken = errors.New("resilience: no rate token now")
	ErrNoSlot  = errors.New("resilience: no concurrency slot now")
)

// ErrDeferred matches a *WouldWaitError that refused a task's first call
// on behalf of the task's scheduler (WithAdmission; package pool's tasks
// carry it): the scope could not go within the admission's wait, nothing
// was sent, nothing was recorded as lost, and the scheduler runs the task
// again from its start once the scope can go. A task that sees it should
// return at once (with that error: the scheduler discards the run's
// result), and a program that counts its failed calls should not count
// it. It tells such a refusal apart from a WithMaxWait's, which is a lost
// call (LossRefused) with the same *WouldWaitError and Err.
var ErrDeferred = errors.New("resilience: first call deferred by its scheduler")

// ownKind recognises cloudg's own errors by exact type, so that a wrapped
// provider error under them does not decide the classification.
func ownKind(e error) (Kind, bool) {
	switch e.(type) {
	case *CircuitOpenError, *RetryBudgetExhaustedError, *WouldWaitError:
		return Throttled, true
	case *DeadlineExceededError:
		return Transient, true
	case *CallEndedError:
		return Fatal, true // retrying it sends nothing
	}
	return Fatal, false
}

func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(max(d, 0).Seconds()))
}

// Sentinels of the governor's refusals, for errors.Is: ErrCircuitOpen
// matches a *CircuitOpenError (a call an open breaker refused),
// ErrBudgetExhausted a *RetryBudgetExhaustedError (a retry the empty retry
// budget refused). They are package state's, the same values.
var (
	ErrCircuitOpen     = state.ErrCircuitOpen
	ErrBudgetExhausted = state.ErrBudgetExhausted
)

// ConfigError is the error of a configuration that does not validate
// (ParseConfig, LoadConfig, Config.Validate, Configure, NewGovernor): Path
// is the key path (ratelimit.aws.services.ec2.burst), Msg what is wrong
// with it. Validation reports every mistake at once, joined
// (errors.Join): errors.As finds the first, and the joined error's
// Unwrap() []error lists them all. Nothing changes a ConfigError once
// returned: several goroutines may read one at once. The zero ConfigError,
// of no path and no message, reads ": ".
type ConfigError = yamlconf.Error

// Errors for calls that cannot be governed.
var (
	// ErrNoProvider is returned for a scope without a provider.
	ErrNoProvider = errors.New("resilience: scope has no provider")
	// ErrNilFunc is returned when the function to call is nil.
	ErrNilFunc = errors.New("resilience: nil function")
)

// oneLine returns the scope's String form for an error's message, quoted
// when a part holds a character that is not printable (scopekey.OneLine),
// as Stats.Messages write it, so that the message stays on one line.
func oneLine(s Scope) string { return scopekey.OneLine(s.String()) }
