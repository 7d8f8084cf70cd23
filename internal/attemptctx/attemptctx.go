// Package attemptctx is the context an integration sends an attempt of a
// governed call with, so that a governed call made with it (a credential's
// token fetch while the request is signed or sent, a transport below the
// integration's) is known to be nested in the attempt: the core looks for
// the enclosing call by asking the context for Value(gov), and such a call
// borrows the slot the attempt holds instead of waiting for it, and goes
// as the probe the attempt holds (see resilience.Guard.Enter). It is what
// resilience.WithNestedCalls gives a Do's function, for the integrations
// that drive a resilience.Guard themselves.
//
// Such a context may outlive the attempt (a dial net/http goes on with,
// a goroutine of the caller's, an SDK's background refresh), so the
// Guard is read through a Gate, as WithNestedCalls's is: a call nested in
// the attempt reads the Guard only while the Gate is open, which the
// integration opens as the attempt is sent and closes as soon as it is
// over, before the Guard's next verb; a call made with the context once
// the attempt is over is not nested in it.
package attemptctx

import (
	"context"

	"github.com/cloudg/cloudg/internal/challengeresend"
	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/internal/nestgate"
	"github.com/cloudg/cloudg/internal/resendslot"
	"github.com/cloudg/cloudg/resilience"
)

// Gate is the gate of the calls nested in one Guard's attempts. Its zero
// value is closed and attached to no Guard. It is safe for concurrent
// use.
type Gate struct{ g nestgate.Gate }

// Attach makes g the Guard's gate, for its life: call it once, before a
// context that carries gd is made. A Guard has one gate.
func (g *Gate) Attach(gd *resilience.Guard) { nestgate.Attach(gd, &g.g) }

// Open opens the gate as the Guard's attempt is sent: Enter (or Pace)
// returned, and the Guard's goroutine calls none of its verbs until
// Close.
func (g *Gate) Open() { g.g.SetOpen(true) }

// Close closes the gate as the attempt is over, before any verb of the
// Guard (After, Release, End, EndPanicked): it waits for the nested calls
// reading the Guard. Closing a closed gate does nothing.
func (g *Gate) Close() { g.g.SetOpen(false) }

// Context is a context that answers Value(Gov) with Guard, and asks the
// embedded context for every other key. It is safe for concurrent use as
// its embedded context is; its fields are set once, before it is used.
// Gate is there for an integration that makes one Context for the life
// of its Guard (one request's), and attaches it to the Guard. The zero
// Context is no context: its methods panic on its nil embedded context.
type Context struct {
	context.Context
	Gov   *resilience.Governor
	Guard *resilience.Guard
	Gate  Gate
}

// Value returns Guard for Gov, and the embedded context's value otherwise.
func (c *Context) Value(key any) any { return Value(c.Context, c.Gov, c.Guard, key) }

// Value answers key as a context carrying gd, the call of gov, does: gd
// for gov, and parent's value for any other key. It is for an integration
// whose attempt context is a type of its own (one that also cuts a
// sleep, say).
func Value(parent context.Context, gov *resilience.Governor, gd *resilience.Guard, key any) any {
	if g, ok := key.(*resilience.Governor); ok && g == gov {
		return gd
	}
	return parent.Value(key)
}

// ReadyResend readies the resend of gd's attempt in progress (Enter or
// Pace let it through, its answer not reported yet), which failed before
// its request left the process and which the integration sends again on
// the attempt's admission, after a wait of its own: nothing is counted
// for it, and it takes a slot, and a token only while its scope is
// paused (another call's Retry-After, PauseAccount), which holds it until
// the pause ends, as it holds every call of the scope, or once it waited
// for the breaker's verdict (below). It returns nil when the resend may
// go: the breaker would let a call through now (or the call holds its
// probe), the scope is not paused or its pause is over, and the Guard
// holds a slot that no call nested in the attempt still goes on, or has
// taken one, waiting with ctx. For a provider that waits for its
// breakers' verdicts (breaker_wait), a breaker that would refuse the
// resend holds it until its verdict instead, as it holds a retry, within
// the call's deadline and max wait; a resend that waited takes a token,
// going at the scope's rate like a new call. Otherwise the resend is not
// sent. A *resilience.CircuitOpenError (the breaker opened meanwhile,
// or with breaker_wait, no verdict let the resend through by the call's
// deadline or within its max wait) records nothing: the integration
// ends the call with the attempt's failure (After, then End), lost as
// errored. Any other error ends the call and records it, as the core
// records a call it does not send, and the integration only ends it
// (End), reporting no answer: a
// *resilience.WouldWaitError matching resilience.ErrNoSlot or
// resilience.ErrNoToken when no slot or token would come within the
// call's max wait (resilience.WithMaxWait), and a
// *resilience.DeadlineExceededError when the scope's pause outlasts the
// call's deadline, both lost as refused; the context's error when it
// ended, lost as cancelled. Call it with the Guard's gate closed, as any
// of its verbs. A Guard whose call's request already ended (its outcome
// recorded, or its success held for End) refuses the resend with a
// *resilience.CallEndedError, recording nothing, as Pace refuses a retry
// then; any other Guard with no attempt in progress is ready.
func ReadyResend(ctx context.Context, gd *resilience.Guard) error {
	return resendslot.Ready(ctx, gd)
}

// ResendChallenged readies gd, whose last attempt was answered with its
// provider's fatal answer (After read it as one: a 401), for the
// request's resend that answers it: an authentication challenge that a
// policy of the SDK's answers by sending the request again with a token,
// within the same try of the SDK's retry loop. The answer's request is
// over, recording nothing more (a fatal answer, which After recorded),
// and the resend is the call's next request, which Enter counts as a
// call, sent, and not as a retry: no Retry event, no free retry or retry
// budget token spent. It is not a new request either: it keeps the
// call's retries, so that the first two of the request's retries are
// free and every later one is paid for however many challenges come
// between them, and the call's deadline. The resend asks the breaker
// again, as a call after a stop does. A Guard whose last answer is no
// fatal answer of the provider's that After recorded (a local error,
// an answer that came once Begin's context was done) is ended with that
// answer (End), and the resend is its next call. Call it with the
// Guard's gate closed, as any of its verbs, just before the resend's
// Enter.
func ResendChallenged(gd *resilience.Guard) { challengeresend.Resend(gd) }

// GovernorStop returns the governor's own error that err, the error an
// attempt ended with, holds (an open breaker's, an empty retry budget's,
// a wait's bound, a deadline's), rather than an answer or a failure of
// the attempt's request, and nil when it holds none: the refusal of a
// governed call made inside the attempt (a credential's token fetch).
// The integration records that refusal as the attempt's answer, not err:
// the core reads it as that call's stop, not as the attempt's scope's,
// whatever else err's chain holds (a token server's 429 beside it, which
// the core would take for the scope's answer). GovernorStop reads err
// through errread.As and never panics: a method of an error of err's
// chain that panics (an Unwrap that reads a nil pointer, an As method the
// core classifier never calls) ends the read of that error's causes
// only, so that a refusal beside it (the other branches of an
// errors.Join) is found all the same. A refusal that is a nil pointer is
// none: the governor never makes one, and the core reads it as an
// unreadable error (its RetryAfter panics), not as a stop.
func GovernorStop(err error) error {
	var (
		coe *resilience.CircuitOpenError
		rbe *resilience.RetryBudgetExhaustedError
		wwe *resilience.WouldWaitError
		dee *resilience.DeadlineExceededError
	)
	if found, _ := errread.As(err, &coe); found {
		return coe
	}
	if found, _ := errread.As(err, &rbe); found {
		return rbe
	}
	if found, _ := errread.As(err, &wwe); found {
		return wwe
	}
	if found, _ := errread.As(err, &dee); found {
		return dee
	}
	return nil
}
