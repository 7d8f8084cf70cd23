package cloudggcp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/attemptctx"
	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// initialBackoff is the first pause of the GCP retry; each retry of a page
// or call doubles it, up to the provider's max backoff.
const initialBackoff = time.Second

// RetryStoppedError is returned instead of a provider error that was not
// retried because the pause before the retry (the backoff, or the
// provider's RetryInfo delay, whichever is longer) would outlast the
// deadline, or because the context ended during that pause. gax would
// return a bare context error and lose the provider's answer; this keeps
// both: errors.As finds the provider error (*apierror.APIError) and
// errors.Is finds Reason (context.DeadlineExceeded or context.Canceled).
// It classifies as the provider error does.
//
// Its methods only read it: any number of goroutines may use one at once
// while none changes its fields. The zero RetryStoppedError wraps no
// error and no reason, and reads "*/*/*/*: <nil> while waiting to retry:
// <nil>".
type RetryStoppedError struct {
	Scope  resilience.Scope
	Err    error         // the provider error that was not retried
	Reason error         // context.DeadlineExceeded, or the context's error
	Pause  time.Duration // the pause the retry needed; 0 when the context ended
}

func (e *RetryStoppedError) Error() string {
	if errors.Is(e.Reason, context.DeadlineExceeded) && e.Pause > 0 {
		return fmt.Sprintf("%s: not retried: a pause of %s would pass the deadline: %v",
			e.Scope, e.Pause.Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("%s: %v while waiting to retry: %v", e.Scope, e.Reason, e.Err)
}

// Unwrap returns the provider error and the reason.
func (e *RetryStoppedError) Unwrap() []error { return []error{e.Err, e.Reason} }

// callState is the gax.Retryer of one governed call: a page fetch of a
// listing (reused page after page), the call of Do, or one unary call made
// with the Retry option. It reports each failed attempt to the call's
// guard and asks the guard whether the retry may go.
type callState struct {
	ctx        context.Context
	scope      resilience.Scope
	gov        *resilience.Governor // gd's
	gd         *resilience.Guard    // a listing's once its first page is fetched
	maxBackoff time.Duration
	// nested is gd's gate: a call made with an attempt's context (per-RPC
	// credentials fetching a token) reads gd, and is nested in the call,
	// only while an attempt is sent (see attemptContext). The context may
	// outlive the attempt; the gate closes as the attempt returns, before
	// the guard records it or gax's Retryer asks it for a retry.
	nested attemptctx.Gate
	paced  bool // the caller (a listing, Do) paces the call and reports its success
	off    bool // a listing of a disabled provider: its pages are fetched once each, ungoverned
	// opens: Do's call, whose gate is open while gax sends an attempt
	// (from Do's call of its function to the Retryer's next step, and
	// again once the Retryer let the retry go), so that a governed call
	// made with the call's context then (a REST client's Transport) is
	// nested in it.
	opens bool
	// superseded: a later option of the call's governs it instead (Do's,
	// a listing's, or a later Retry option's: see supersede); this state,
	// a Retry option's, does nothing more.
	superseded bool

	n        int   // retries of this page or call
	last     error // the last provider error seen by Retry
	final    error // what to return instead of gax's error, once stopped
	refused  error // the interceptor's Enter, or the Retry option's gate, refused the attempt, and recorded why
	recorded bool  // the interceptor recorded the last attempt's failure (After), before giving its slot back
	settled  bool  // the call's success is reported (the Retry option)

	// The Retry option's call on a client with the interceptor: a retry the
	// guard refused for the call's max wait is let through to the
	// interceptor, which returns the refusal unsent, so that gax returns it.
	intercepted bool                       // an attempt of the call went through the interceptor
	refusal     *resilience.WouldWaitError // the refusal the interceptor returns for the next attempt

	// The Retry option's call while gax sleeps before a retry: gax ends
	// the call without telling its Retryer when the context ends then, so
	// a watch of the context ends the guard instead.
	unwatch func() bool // stops the watch; nil when there is none
	over    bool        // the watch ends the call: the guard is the watch's (set by woke)

	// The Retry option's call on a client with the interceptor, whose
	// Retryer sleeps the backoff (see sleep): the context of its last
	// attempt, which gax would sleep on, and the error of that context
	// once it ended the Retryer's sleep (the call is over, and recorded:
	// see sleep). On a client without the interceptor, attemptCtx is set
	// only when the call's context ended an attempt (see finished).
	attemptCtx context.Context
	ended      error

	// The Retry option's call on a client without the interceptor, whose
	// gate (retryGate) sleeps the pause before a retry: gated, the gate
	// saw the last attempt; pause, the pause its next attempt waits for.
	gated bool
	pause time.Duration
	// sent is the context grpc gave the gate for the attempt it let
	// through, until grpc reports the attempt's end (see finished).
	sent context.Context

	// bound is the deadline of the Retry option's call its client gave no
	// timeout (see Resolve), which the interceptor gives each unary
	// attempt whose context has none (see bounded); zero when gax's
	// timeout bounds the call.
	bound time.Time
}

// bounded returns the context a unary attempt of the Retry option's call
// is sent with through the interceptor: ctx, or, when the call's client
// gave it no timeout (the option gave gax none, see Resolve) and ctx has
// no deadline, a child of ctx with the call's bound, the provider's
// deadline from the call's start, as gax's timeout would have given it.
// done, called as the attempt returns, releases the child, or, when it
// ended (its bound came, or ctx ended), leaves it to Retry as the
// attempt's context, which ended the call (see endedByContext).
func (s *callState) bounded(ctx context.Context) (actx context.Context, done func()) {
	if s.bound.IsZero() {
		return ctx, func() {}
	}
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	bctx, cancel := context.WithDeadline(ctx, s.bound)
	return bctx, func() {
		if ctxEnded(bctx) == nil {
			cancel()
			return
		}
		s.attemptCtx = bctx // ended: the timer due at the bound releases it
	}
}

// reset starts a new page fetch or call.
func (s *callState) reset() {
	s.n, s.last, s.final, s.refused, s.settled, s.recorded = 0, nil, nil, nil, false, false
	s.intercepted, s.refusal = false, nil
}

// Retry implements gax.Retryer; gax calls it after every failed attempt.
// The guard records the attempt's answer (After; the interceptor has
// recorded it already for an attempt it sent on the call's guard), then,
// for a code the GCP retry retries, decides whether the retry may go after
// the backoff (Guard.Retry: max_retries, the deadline, the retry budget).
// The pause before it (the backoff, or the provider's hint when longer) is
// slept here, watching the scope's breaker (see sleep), and gax is told to
// go at once. The Retry option's call on a gRPC client without the
// interceptor, whose Retryer does not know the call's context, has its
// gate sleep the pause on the retry's context (see retryGate), and gax
// go on at once; when the gate did not see the attempt (the call's own
// credentials replaced it), and for a REST call, the pause is left to
// gax's own sleep (a REST call's retry asks nothing: see watchPause).
func (s *callState) Retry(err error) (time.Duration, bool) {
	if s.opens {
		// Do's attempt is over: its gate closes before the guard's
		// verbs, and opens again as gax sends the retry.
		s.nested.Close()
		d, ok := s.retryer(err)
		if ok {
			s.nested.Open()
		}
		return d, ok
	}
	return s.retryer(err)
}

// retryer is Retry's decision.
func (s *callState) retryer(err error) (time.Duration, bool) {
	if !s.woke() {
		return 0, false // the context ended the call while gax or the Retryer slept
	}
	if !s.paced && s.refused == nil && s.attemptCtx != nil && ctxEnded(s.attemptCtx) != nil {
		return s.endedByContext(err)
	}
	d, ok := s.retry(err)
	switch {
	case !ok:
		if !s.paced {
			// The Retry option's call ends here (a listing or Do ends its
			// own call): a throttled or transient answer not retried is a
			// failure.
			s.gd.End(err)
		}
		return d, ok
	case s.refusal != nil:
		return d, ok // the interceptor returns the refusal, sending nothing
	case s.paced:
		return s.sleep(s.ctx, d)
	case s.attemptCtx != nil && s.attemptCtx.Err() == nil:
		return s.sleep(s.attemptCtx, d)
	case restAnswer(err):
		s.watchPause(d)
		return d, ok
	case s.gated && s.pause == 0:
		// The gate (see retryGate) saw the attempt: it sleeps the pause
		// before the retry on the retry's context, a child of the call's
		// own, as grpc asks it for the retry's metadata, and gax goes on
		// at once.
		s.gated, s.pause = false, max(d, time.Nanosecond)
		return 0, true
	}
	// The gate did not see the attempt (the call's own credentials
	// replaced it, or grpc failed the attempt before asking it): gax
	// sleeps, and a watch of ctx records the call if ctx ends meanwhile.
	s.gated, s.pause = false, 0
	s.watchSleep()
	return d, ok
}

// endedByContext ends the Retry option's call whose attempt, sent through
// the interceptor or let through by the gate (see finished), the context
// of the call's attempts ended (the run's, or the call's own: a timeout
// or cancel of its own, which the guard, begun on the run's, does not
// know): the call is lost as cancelled, as
// when that context ends the pause before a retry (see sleep), not
// retried, nor recorded as the local error the context's gRPC status
// reads as.
func (s *callState) endedByContext(err error) (time.Duration, bool) {
	if !s.recorded {
		s.gd.After(err)
	}
	s.recorded, s.last = false, err
	cerr := ctxEnded(s.attemptCtx)
	if eerr := s.gd.Enter(s.attemptCtx); eerr != nil {
		cerr = eerr
	}
	s.gd.End(cerr)
	s.ended = cerr
	return 0, false
}

// restAnswer reports whether err is a REST client's answer (gax's
// *apierror.APIError wrapping the client's *googleapi.Error): of a REST
// call gax tells the Retry option nothing once it succeeds.
func restAnswer(err error) bool {
	var ge *googleapi.Error
	found, _ := errread.As(err, &ge)
	return found
}

// sleep sleeps d, the pause before the retry the guard just allowed, on
// ctx, the context the call's attempts are made with (Do's, a listing's,
// or for the Retry option's call on a client with the interceptor, its
// last attempt's, which gax would sleep on), and returns what Retry
// returns to gax. The sleep ends early when the scope's breaker opens
// meanwhile and would still refuse the retry when the pause ended (a dead
// scope; see resilience.Guard.Backoff): the retry is refused then, as it
// would have been after the pause, rather than after up to the max backoff
// (60 s) or the provider's hint. Whether the pause was cut or whole, the
// retry asks the breaker before it goes: the interceptor's Enter asks it
// for the Retry option's retry; Do and the listings, whose retries are
// sent without Enter, ask the guard's Admit, which takes no token (GCP's
// retries are paced by the provider's answers, not by tokens) unless
// another call's pause holds the scope: then it waits for the pause's end
// and goes at the scope's rate. An open
// breaker refuses the retry with a *resilience.CircuitOpenError wrapping
// the last answer, the call lost as failed after its retries (a give-up
// when throttled); a provider that waits for its breakers' verdicts
// (breaker_wait) holds the retry until the verdict, within the deadline.
//
// A context that ends during the sleep, or during the wait for a verdict,
// ends the call as it ends during gax's sleep: Do and the listings return
// a *RetryStoppedError with the provider's error and the context's; the
// Retry option's call returns the context's error, recorded as cancelled
// as the sleep ends, whether the context is the option's or the call's
// own.
func (s *callState) sleep(ctx context.Context, d time.Duration) (time.Duration, bool) {
	_, err := s.gd.Backoff(ctx, d)
	switch {
	case err != nil && s.paced:
		s.final = &RetryStoppedError{Scope: s.scope, Err: s.last, Reason: err}
		return 0, false
	case err != nil:
		// The context of the call's attempts ended the pause: the run's
		// (the option's), or the call's own (a timeout of its own), which
		// a watch of the run's context would never see. The call ends
		// here, lost as cancelled, as Enter ends a retry whose context is
		// done (an ungoverned call's records nothing); gax returns the
		// context's error, from its own sleep, or the call's, from the
		// interceptor's next attempt (see UnaryClientInterceptor), which
		// sends nothing.
		if eerr := s.gd.Enter(ctx); eerr != nil {
			err = eerr
		}
		s.gd.End(err)
		s.ended = err
		return 0, true
	case s.paced:
		if err := s.gd.Admit(ctx); err != nil {
			s.final = err
			if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
				s.final = &RetryStoppedError{Scope: s.scope, Err: s.last, Reason: cerr}
			}
			return 0, false
		}
	}
	return 0, true
}

// watchSleep watches the context of the Retry option's call while gax
// sleeps before the retry just allowed: when it ends, gax returns its
// error without calling the Retryer or sending, and the watch ends the
// guard with it, which records the call as cancelled. The watch runs on a
// goroutine of its own and holds no lock: the guard's End calls the
// governor's observer and logger, and the call never waits for them.
func (s *callState) watchSleep() {
	gd, ctx := s.gd, s.ctx
	s.unwatch = context.AfterFunc(ctx, func() { gd.End(ctx.Err()) })
}

// watchPause watches the context of the Retry option's REST call while
// gax sleeps d before the retry just allowed, and no longer: when it ends
// during the sleep, gax returns its error without calling the Retryer or
// sending, and the watch ends the guard with it, which records the call
// as cancelled. Nothing of the option's is called as gax sends a REST
// call's retry, nor once the retry succeeds (a gRPC call's retry asks its
// credentials, see retryGate, and its success comes through
// grpc.OnFinish), so the watch ends with the pause, by a timer of d
// started before gax's: a context that ends once the pause is over, when
// the retry may have been sent and may have succeeded, records nothing,
// and the call holds nothing of the context past its pause. The next
// Retry, if the retry fails, stops the watch as woke does.
func (s *callState) watchPause(d time.Duration) {
	gd, ctx := s.gd, s.ctx
	until := time.Now().Add(d)
	var st atomic.Int32 // pauseWatched, then pauseEnded or pauseOver
	stopWatch := context.AfterFunc(ctx, func() {
		if time.Now().Before(until) && st.CompareAndSwap(pauseWatched, pauseEnded) {
			gd.End(ctx.Err())
			return
		}
		st.CompareAndSwap(pauseWatched, pauseOver)
	})
	over := func() bool {
		if st.CompareAndSwap(pauseWatched, pauseOver) {
			stopWatch()
		}
		return st.Load() == pauseOver
	}
	t := time.AfterFunc(d, func() { over() })
	s.unwatch = func() bool {
		t.Stop()
		return over()
	}
}

// The states of watchPause's watch.
const (
	pauseWatched = iota // the pause goes on, the context watched
	pauseEnded          // the context ended during the pause: the watch ended the call
	pauseOver           // the pause is over, or the call went on: nothing recorded
)

// woke stops the watch of gax's sleep, if any, at the call's next step
// (its next attempt, or gax's report of it), and reports whether the call
// is still on: false when its context ended it during the sleep. The
// watch has then started, and the guard is its own: the call does not
// touch it again, and does not wait for the watch to finish. A call whose
// context ended the Retryer's own sleep (ended) is over too, and
// recorded.
func (s *callState) woke() bool {
	if s.ended != nil {
		return false // sleep ended the call
	}
	if s.unwatch != nil {
		if !s.unwatch() {
			s.over = true
		}
		s.unwatch = nil
	}
	return !s.over
}

func (s *callState) retry(err error) (time.Duration, bool) {
	if s.refused != nil {
		// Nothing was sent: the guard refused the attempt and recorded it.
		return 0, false
	}
	s.last = err
	if s.recorded {
		s.recorded = false // the interceptor recorded it
	} else {
		s.gd.After(err)
	}
	if !retryable(err) || s.ctx.Err() != nil {
		return 0, false
	}
	delay, rerr := s.gd.Retry(backoff(s.n+1, s.maxBackoff))
	if rerr != nil {
		s.final = s.stopped(err, rerr)
		if ww, ok := rerr.(*resilience.WouldWaitError); ok && !s.paced && s.intercepted {
			// gax returns the error of the last attempt, not the Retryer's:
			// one more turn of its loop, which the interceptor ends with
			// the refusal, sending nothing.
			s.refusal = ww
			return 0, true
		}
		return 0, false
	}
	s.n++
	return delay, true
}

// stopped returns the error a call ends with when the guard refused to
// retry err with rerr.
func (s *callState) stopped(err, rerr error) error {
	switch e := rerr.(type) {
	case *resilience.RetryBudgetExhaustedError, *resilience.WouldWaitError:
		return e
	case *resilience.DeadlineExceededError:
		return &RetryStoppedError{Scope: s.scope, Err: err, Reason: context.DeadlineExceeded, Pause: e.Wait}
	}
	// No attempts left: max_retries consecutive retries of the page or
	// call were made. Past either limit the GCP retry ends with the
	// budget's error, chained to the provider's.
	return &resilience.RetryBudgetExhaustedError{Scope: s.scope, Err: &RetriesExhaustedError{Scope: s.scope, Retries: s.n, Err: err}}
}

// RetriesExhaustedError says that a page fetch or a call stopped after
// max_retries consecutive retries (ratelimit.gcp.max_retries) failed. The
// GCP retry stops a page past that limit as it does past an empty retry
// budget: a listing or Do ends with a *resilience.RetryBudgetExhaustedError
// whose Err is the RetriesExhaustedError, which wraps the last provider
// error. errors.As finds all three, so code written for a
// RetriesExhaustedError keeps finding it, and the limit that stopped the
// page stays known. It reads "ListAssets: 8 consecutive retries exhausted:
// <error>", and classifies, alone, as the provider error does.
//
// Its methods only read it: any number of goroutines may use one at once
// while none changes its fields. The zero RetriesExhaustedError wraps no
// error and reads ": 0 consecutive retries exhausted: <nil>".
type RetriesExhaustedError struct {
	Scope   resilience.Scope
	Retries int   // the consecutive retries made
	Err     error // the last provider error
}

func (e *RetriesExhaustedError) Error() string {
	return fmt.Sprintf("%s: %d consecutive retries exhausted: %v", e.Scope.Operation, e.Retries, e.Err)
}

// Unwrap returns the last provider error.
func (e *RetriesExhaustedError) Unwrap() error { return e.Err }

// succeed reports the success of the last attempt of the Retry option's
// call, once, and ends the call, which gax does not retry: the success is
// recorded (the breaker reset, a half-open breaker's probe closing it, the
// budget's refund). On a client with the interceptor it comes from
// grpc.OnFinish while the attempt still holds its slot, which End gives
// back.
func (s *callState) succeed() {
	if !s.settled {
		s.settled = true
		s.gd.After(nil)
		s.gd.End(nil)
	}
}

// finished is the grpc.OnFinish callback of the Retry option: it sees the
// success that gax does not show a Retryer. Failures go to Retry. grpc
// calls it as the attempt's answer is read, before the invoker returns:
// the gate of the calls nested in the attempt closes first, before the
// guard records the success and ends.
//
// On a client without the interceptor it also tells Retry whether the
// call's own context ended the attempt the gate let through: grpc asks
// the gate with a context it cancels as the attempt ends, but only after
// it called the OnFinish callbacks (clientStream.finish cancels last), so
// that context is done here only when one it derives from is: the call's
// own (a timeout or cancel of its own, under the run's), or gax's timeout.
// An attempt that failed with that context's error is then the context's
// end, which Retry records as it does on a client with the interceptor
// (see endedByContext). grpc cancels first when it fails to open the
// attempt's stream after asking the gate, and reports the failure's own
// error, which is not the context's.
func (s *callState) finished(err error) {
	if s.superseded {
		return // a later option of the call's governs it
	}
	s.nested.Close()
	sent := s.sent
	s.sent = nil
	if err != nil && sent != nil && endedBy(err, sent) {
		s.attemptCtx = sent
	}
	if err == nil && s.woke() {
		s.succeed()
	}
}

// endedBy reports whether err, the failure of an attempt, is the end of
// ctx, the context grpc gave the attempt: ctx ended (see ctxEnded), and
// err has the gRPC status of its end, DeadlineExceeded (the client's, or
// the server's, which may come before the client's timer has run), or
// Canceled for the context's cancellation ("context canceled"), not
// grpc's own Canceled for a connection closing.
func endedBy(err error, ctx context.Context) bool {
	cerr := ctxEnded(ctx)
	if cerr == nil {
		return false
	}
	st := grpcStatus(err)
	if errors.Is(cerr, context.DeadlineExceeded) {
		return st.Code() == codes.DeadlineExceeded
	}
	return st.Code() == codes.Canceled && strings.Contains(st.Message(), cerr.Error())
}

// ctxEnded returns ctx's error, or context.DeadlineExceeded once its
// deadline has come though the timer due then has not run yet, as the
// governor reads a context (see resilience.Guard.Enter): an attempt may
// fail with the server's DeadlineExceeded at that instant.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// outcome returns the error a fetch or call ends with, given gax's err.
func (s *callState) outcome(err error) error {
	if s.final != nil {
		return s.final
	}
	if s.last != nil && contextEnd(err) && !isErr(s.last, err) {
		// gax's sleep before a retry was cut short by a context.
		return &RetryStoppedError{Scope: s.scope, Err: s.last, Reason: err}
	}
	return err
}

// contextEnd reports whether err is, or wraps, a context's end
// (context.DeadlineExceeded or context.Canceled); an error whose chain
// panics as it is read (a typed nil an application wrapped) is not,
// unless the context's end is beside the panic (in another branch of a
// join: see errread.Is).
func contextEnd(err error) bool {
	return isErr(err, context.DeadlineExceeded) || isErr(err, context.Canceled)
}

// isErr is errors.Is(err, target), read through errread.Is: a method of
// err's chain that panics ends the read of that error's causes only, and
// isErr is false unless target is among the errors read.
func isErr(err, target error) bool {
	found, _ := errread.Is(err, target)
	return found
}

// backoff returns the pause before retry n (1-based): 1 s, doubling,
// capped at maxBackoff.
func backoff(n int, maxBackoff time.Duration) time.Duration {
	d := initialBackoff
	for i := 1; i < n && (maxBackoff <= 0 || d < maxBackoff); i++ {
		d *= 2
	}
	if maxBackoff > 0 && d > maxBackoff {
		d = maxBackoff
	}
	return d
}

// governed is a grpc.CallOption that carries a call's state to the
// interceptor, so that a call governed by a listing, Do or Retry is not
// governed twice.
type governed struct {
	grpc.EmptyCallOption
	st *callState
}

// Retry returns a gax.CallOption for calls in scope (gcp/<parent>/*/<service>/<Rpc>,
// see Scope) that replaces the method's retry settings with the GCP retry:
//
//   - ResourceExhausted (but grpc's own for a message over a size limit),
//     Unavailable, DeadlineExceeded and Internal are retried, after 1 s, doubling, capped at the provider's max backoff
//     (60 s), never sooner than the error's RetryInfo delay (capped at
//     resilience.MaxPause);
//   - each attempt's answer is reported to the governor: throttling halves
//     the scope's rate and pauses it for RetryInfo's delay, a transient
//     error is counted, a success resets the breaker;
//   - the first two retries of a call are free, each further one costs a
//     token of the provider's retry budget; at most max_retries (8)
//     retries are made;
//   - a unary call whose context has no deadline is bounded by the
//     provider's deadline (900 s): the option replaces the timeout its
//     client gives it (gax.WithTimeout; a generated client gives one to
//     each unary method its service config bounds), and the interceptor
//     gives each attempt of one its client gives none the deadline from
//     the call's start; a stream gets none (see below); a retry whose
//     pause would pass the deadline is not made.
//
// On a client with the interceptor, the call's Retryer sleeps the pause
// before a retry itself, on the context of the call's attempts, and ends
// it when the scope's breaker opens meanwhile and would still refuse the
// retry when the pause ended (a dead scope): the interceptor's Enter then
// refuses the retry as it refuses it after a full pause (a
// *resilience.CircuitOpenError, the call lost as failed after its
// retries). On a gRPC client without the interceptor the per-RPC
// credentials the option gives the call (grpc asks them for each attempt,
// with its context, a child of the call's, before sending it; they add no
// metadata) sleep the pause before the retry, and end it as the Retryer
// does. The retry then asks the breaker before it is sent: an open breaker
// refuses it, nothing sent, and the call ends with a
// *resilience.CircuitOpenError wrapping the last answer (its gRPC status
// Unknown, as the interceptor's refusal), lost as failed after its
// retries; a half-open breaker lets it through as its probe; with
// breaker_wait the retry waits for the verdict on the call's context (and,
// having waited, takes a token). A call's own per-RPC credentials
// (grpc.PerRPCCredentials) given before the option are kept, and asked
// once the breaker let the attempt through; given after it, they replace
// the option's: gax sleeps the whole pause, the retry goes without
// asking the breaker, and the option sees no attempt's context (below).
//
// A call whose context ends while its Retryer, or its credentials, sleep
// before a retry is recorded as cancelled as the sleep ends, whether that
// context is ctx or the call's own (a timeout of its own, a child of
// ctx); so is one whose context ends while an attempt is out, on a
// client with the interceptor (or a stream it opened there) or on a gRPC
// client without it, where the option's credentials saw the attempt:
// grpc reports the attempt's end, through grpc.OnFinish, before it
// cancels the context it gave them, which is done then only when the
// call's context is. One whose ctx ends while gax sleeps (a REST call, or
// one whose own credentials replaced the option's) is recorded as
// cancelled by a watch of ctx, since gax returns without telling its
// Retryer: the record is made as ctx ends, on a goroutine of its own, and
// may come a moment after the call returned (Do and the listings record
// it before they return). That watch sees ctx alone: of a REST call with
// a context of its own that ends during gax's sleep, nothing is recorded
// (the watch ends with the pause); of a gRPC call whose own credentials
// replaced the option's, the watch lasts until the call's next attempt
// reports, so that such a call, which gax does not resend, is recorded as
// cancelled when ctx ends, however long after. Nor is such a gRPC call's
// own context known to have ended while an attempt was out: grpc asks
// only the last per-RPC credentials given for an attempt's metadata, and
// credentials are the only call option grpc gives the attempt's context
// (grpc.OnFinish and gax's Retryer are given its error alone, and a
// server's DeadlineExceeded, which a gRPC server answers when the deadline
// the call sent it passes, reads as the call's own timeout's). The call's
// timeout is then allowed a retry gax never makes (the call recorded as
// cancelled when ctx ends, by the watch), and its cancellation is
// recorded at once as a local error (resilience.LossErrored). Give a
// call's own credentials before the option.
//
// When a limit stops the loop the outcome is recorded: max_retries and the
// deadline count a breaker failure (throttling is a give-up in the stats
// and ctx's ledger); an empty budget is a give-up without a breaker
// failure. ctx is the context the calls are made with: it carries the
// run's Stats and Ledger, and its deadline bounds the retries. Make one per
// run, not per call. A scope without a provider, or of a disabled one
// (ratelimit.gcp.enabled false), leaves the call to the client's own retry
// and timeout settings: it is made as if the option were not given.
//
// gax's Retryer cannot replace the error gax returns, so a call made with
// this option alone returns the provider error when a limit stops it; Do
// and the listings return the *resilience.RetryBudgetExhaustedError (past
// the budget or max_retries; see RetriesExhaustedError) or
// *RetryStoppedError instead. A retry whose wait (the provider's RetryInfo
// delay) is longer than ctx allows (resilience.WithMaxWait) is refused at
// once, recorded as refused: Do and the listings return the
// *resilience.WouldWaitError, which wraps the provider error, and so does
// a call made with this option on a client with the interceptor (the
// interceptor returns the refusal for the attempt gax makes next, sending
// nothing); without the interceptor, the call returns the provider error. The option sees a gRPC call's success through
// grpc.OnFinish; it counts no calls and takes no tokens (but for a retry
// that waited for a breaker's verdict, or that a pause of the scope
// holds): the interceptor (ClientOption) or
// Do does that.
//
// On a REST client (compute's) the option retries as above, but gax tells
// it of a REST call's failed attempts alone: nothing of the option's is
// called as a retry is sent, nor once the call succeeds. Of a REST call
// the option records each failed attempt's answer, a retry once a further
// failure shows it was sent, the outcome of a call that fails (an error
// not retried, or a limit that stopped its retries), and a context that
// ends during gax's sleep before a retry, as cancelled, by a watch of ctx
// that lasts that pause alone (a timer ends it as the pause ends): the
// call holds nothing of ctx past its pause, and ctx's end once the pause
// is over records nothing of it. It records no
// success (the breaker is not reset by it, the budget gets no refund, a
// slowed rate takes no recovery step, a retry that succeeded is not
// counted), and its retries do not ask the breaker before they are sent.
// RESTClientOption records each request of a REST client, its success
// too: do not give the option to such a client, whose answers both would
// record (and both retry).
//
// A call the option reaches twice (a client whose CallOptions carry it,
// given it again by the call) is governed by the later, as gax lets a
// later option override an earlier one; a call of Do's or of a listing's
// is theirs, whatever options the client adds: the option steps aside.
//
// The option is made for unary calls; gax retries a streaming RPC's
// opening alone. It gives a stream no timeout: gax.Invoke cancels the
// context of its timeout as it returns, which for a stream is as soon as
// it is open, so a generated client gives its streaming methods none,
// and the option gives gax its deadline only as a timeout the client
// gave the call, a unary method's. A stream opened with the option on a
// context without a deadline is served until its caller ends it. Nothing
// else the option sees (gax's settings, grpc's call options) tells a
// stream from a unary call: on a gRPC client without the interceptor, and
// on a REST client, a unary call its client gives no timeout (a generated
// method without one, a call made with gax.Invoke directly) is bounded by
// its context alone. On a client with StreamClientInterceptor
// (StreamClientOption) a stream opened with the option is governed on the
// option's guard as that interceptor governs any stream, and its end
// recorded once. On a client without it, the option sees only
// grpc.OnFinish: a stream that ends with io.EOF is recorded as a success
// of a call never counted (the breaker reset, the budget's refund), and
// one that fails is not recorded. Do not give the option to a streaming
// RPC there.
func Retry(ctx context.Context, scope resilience.Scope, opts ...Option) gax.CallOption {
	cfg := newConfig(opts)
	gov := cfg.governor()
	p := gov.Policy(scope.Provider)
	return &retryOption{ctx: ctx, scope: scope, gov: gov, maxBackoff: p.MaxBackoff, deadline: p.Deadline,
		timeout: gax.WithTimeout(p.Deadline)}
}

type retryOption struct {
	ctx        context.Context
	scope      resilience.Scope
	gov        *resilience.Governor
	maxBackoff time.Duration
	deadline   time.Duration  // the provider's
	timeout    gax.CallOption // gax.WithTimeout(deadline)
}

// supersede makes the Retry option's state s give the call it was
// resolved for over to a later option of the call's, which governs it
// instead: its Guard, begun and never entered, ends with nothing
// recorded, and its call options (governed, its grpc.OnFinish, its gate)
// do nothing more.
func (s *callState) supersede() {
	s.superseded = true
	s.gd.End(nil)
}

// Resolve is called by gax.Invoke at the start of every call: each call
// gets its own guard and state. A call that Do or a listing governs
// (their options come first) is theirs: the option steps aside. Of two
// Retry options given to a call (one in the client's CallOptions, one
// given to the call), the later governs it, as gax lets a later option
// override an earlier one. A call its client gave a timeout (see
// clientTimeout) gets the provider's deadline as its gax timeout instead;
// one it gave none (a stream, or a unary method without one) gets none,
// so that a stream is not cut as gax.Invoke returns: the interceptor
// bounds each attempt of a unary call by the deadline instead (see
// bounded).
func (o *retryOption) Resolve(cs *gax.CallSettings) {
	if !o.gov.Enabled(o.scope.Provider) {
		return // a disabled provider: not governed, the client's settings kept
	}
	prev := stateOf(cs.GRPC)
	if prev != nil && prev.paced {
		return // Do's or a listing's call: governed already
	}
	gd, err := o.gov.Begin(o.ctx, o.scope)
	if err != nil {
		return // a scope without a provider: not governed, the client's settings kept
	}
	if prev != nil {
		prev.supersede() // an earlier Retry option's
	}
	st := &callState{ctx: o.ctx, scope: o.scope, gov: o.gov, gd: gd, maxBackoff: o.maxBackoff}
	if clientTimeout(cs) {
		o.timeout.Resolve(cs)
	} else if o.deadline > 0 {
		st.bound = time.Now().Add(o.deadline)
	}
	st.nested.Attach(gd)
	cs.Retry = func() gax.Retryer { return st }
	gate := retryGate{st: st}
	for _, o := range cs.GRPC {
		if c, ok := o.(grpc.PerRPCCredsCallOption); ok {
			gate.next = c.Creds // the call's own credentials: the gate's replace them, and ask them
			if g, ok := c.Creds.(retryGate); ok {
				gate.next = g.next // a superseded option's gate: the call's own before it
			}
		}
	}
	cs.GRPC = append(cs.GRPC[:len(cs.GRPC):len(cs.GRPC)], governed{st: st}, grpc.OnFinish(st.finished),
		grpc.PerRPCCredentials(gate))
}

// clientTimeout reports whether the options gax resolved before the Retry
// option gave the call a timeout (gax.WithTimeout, which CallSettings
// holds unexported): a generated client gives one to each unary method
// its service config bounds, and none to a streaming method, since
// gax.Invoke cancels the context of its timeout as it returns, which for a
// stream is as soon as it is open. It compares the settings with a copy
// whose timeout gax.WithTimeout(0) cleared; the Retryer is left out, as
// reflect.DeepEqual finds no two funcs equal. A field gax may add that
// reflect.DeepEqual cannot compare reads as a timeout: the call keeps the
// provider's deadline as its gax timeout, as it did before streams were
// told apart.
func clientTimeout(cs *gax.CallSettings) bool {
	with := *cs
	with.Retry = nil
	without := with
	gax.WithTimeout(0).Resolve(&without)
	return !reflect.DeepEqual(with, without)
}

// retryGate sleeps the pause before the retry of the Retry option's call
// on a gRPC client without the interceptor and asks the breaker for it,
// just before it is sent: grpc asks a call's credentials for each
// attempt's metadata, with the attempt's context (a child of the call's
// own), before it sends anything, and fails the attempt, unsent, with
// the gRPC status of the error they return. The pause is slept as the
// Retryer sleeps it on a client with the interceptor (see sleep): a
// breaker that opens meanwhile and would still refuse the retry when it
// ended ends it; a context that ends it ends the call, recorded as
// cancelled, with the context's error (its gRPC status the context's,
// errors.Is finds the context's error). The retry then asks the guard's
// Admit (as Do's does): an open breaker refuses it, a half-open one lets
// it through as its probe, and with breaker_wait it waits for the verdict
// on the attempt's context. It does nothing for the call's first attempt
// or on a client with the interceptor, whose Enter asks the breaker. It
// adds no metadata of its own: a call's own credentials given to it
// (grpc.PerRPCCredentials) before the Retry option are asked once the
// gate let the attempt through (given after it, they replace the gate).
type retryGate struct {
	st   *callState
	next credentials.PerRPCCredentials // the call's own, or nil
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (g retryGate) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	if s := g.st; !s.intercepted && !s.superseded {
		if !s.woke() {
			if s.ended != nil {
				// The context ended the call while the gate slept, and the
				// gate recorded it: nothing more is sent.
				reason := context.Canceled
				if errors.Is(s.ended, context.DeadlineExceeded) {
					reason = context.DeadlineExceeded
				}
				return nil, &refusedRetry{err: s.ended, ctx: reason}
			}
			// The context ended the call while gax slept, and the watch
			// recorded it: nothing more is sent.
			return nil, status.FromContextError(s.ctx.Err()).Err()
		}
		s.gated = true
		if d := s.pause; d > 0 {
			// The pause before this retry, slept here, on the retry's
			// context, which ends with the call's own, as the Retryer of
			// a client with the interceptor sleeps it (see sleep): a
			// breaker that opens meanwhile, and would still refuse the
			// retry when the pause ended, ends it, and Admit refuses the
			// retry; a context that ends it ends the call, recorded as
			// cancelled.
			s.pause = 0
			if _, err := s.gd.Backoff(ctx, d); err != nil {
				if eerr := s.gd.Enter(ctx); eerr != nil {
					err = eerr
				}
				s.gd.End(err)
				s.ended = err
				return nil, &refusedRetry{err: err, ctx: ctx.Err()}
			}
		}
		if err := s.gd.Admit(ctx); err != nil {
			s.refused = err
			return nil, &refusedRetry{err: err, ctx: ctx.Err()}
		}
	}
	var md map[string]string
	if g.next != nil {
		var err error
		if md, err = g.next.GetRequestMetadata(ctx, uri...); err != nil {
			return nil, err
		}
	}
	if s := g.st; !s.intercepted && !s.superseded {
		s.sent = ctx // the attempt goes: finished reads its context
	}
	return md, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: the
// gate sends nothing, and needs a secure transport only when the call's
// own credentials do.
func (g retryGate) RequireTransportSecurity() bool {
	return g.next != nil && g.next.RequireTransportSecurity()
}

// refusedRetry is the error of a retry retryGate refused: the guard's
// (a *resilience.CircuitOpenError, or the context's joined to the last
// answer), which errors.As finds, with the gRPC status Unknown, as the
// interceptor's refusal reads, or the context's. The status is borrowed:
// the error classifies as the guard's does, never as a provider's answer.
type refusedRetry struct {
	err error
	ctx error // the attempt's context's error, if it ended
}

func (e *refusedRetry) Error() string { return e.err.Error() }

// Unwrap returns the guard's error.
func (e *refusedRetry) Unwrap() error { return e.err }

// WrapsGovernorError tells the core's classifier to read the guard's
// error, not the status.
func (*refusedRetry) WrapsGovernorError() {}

// GRPCStatus returns the refusal's gRPC status.
func (e *refusedRetry) GRPCStatus() *status.Status {
	if e.ctx != nil {
		return status.New(status.FromContextError(e.ctx).Code(), e.err.Error())
	}
	return status.New(codes.Unknown, e.err.Error())
}

// stateOption resolves every call to one state: a listing's pages, or the
// call of Do. It allocates nothing per call.
type stateOption struct {
	st      *callState
	retryer func() gax.Retryer
	timeout gax.CallOption
	grpc    [1]grpc.CallOption
}

func (o *stateOption) init(st *callState, deadline time.Duration) {
	o.st = st
	o.retryer = func() gax.Retryer { return st }
	if deadline > 0 {
		o.timeout = gax.WithTimeout(deadline)
	}
	o.grpc[0] = governed{st: st}
}

func (o *stateOption) Resolve(cs *gax.CallSettings) {
	if o.st.off {
		return // a listing of a disabled provider: the client's settings kept
	}
	if prev := stateOf(cs.GRPC); prev != nil && !prev.paced {
		prev.supersede() // a Retry option in the client's CallOptions: the call is Do's, or the listing's
	}
	cs.Retry = o.retryer
	if o.timeout != nil {
		o.timeout.Resolve(cs)
	}
	if len(cs.GRPC) == 0 {
		cs.GRPC = o.grpc[:]
	} else {
		cs.GRPC = append(cs.GRPC[:len(cs.GRPC):len(cs.GRPC)], o.grpc[0])
	}
}

// Do makes one unary call in scope, governed the way a listing's first page
// is: breaker check (*resilience.CircuitOpenError, nothing sent), one
// counted call, one token, one bulkhead slot for the call and its retries,
// and the GCP retry (see Retry) for gax's retries of it (pass opts on to
// the client's method). It records the outcome and returns the call's
// result, with the error a limit stopped it on
// (*resilience.RetryBudgetExhaustedError past the budget or max_retries,
// *RetryStoppedError, *resilience.WouldWaitError for a wait longer than
// ctx allows, resilience.WithMaxWait) rather than gax's. The pause before
// a retry is slept on ctx (pass call's ctx on to the client's method) and
// ends when the scope's breaker opens meanwhile and would still refuse the
// retry when it ended: the retry is refused then, with a
// *resilience.CircuitOpenError wrapping the provider's error. After a
// whole pause the retry asks the breaker too: an open one refuses it the
// same way, and for a provider that waits for its breakers' verdicts
// (breaker_wait) the retry waits for the verdict, within the deadline. The
// retry takes no token unless it waited for a verdict or a pause of the
// scope holds it. A panic of call
// reaches the caller as it was, never recovered: the slot is given back
// and the call is recorded as lost to it (resilience.LossPanicked). When
// scope's provider is disabled, call is called once, directly, with no
// option of Do's (the client's own retry settings apply), as the core's Do
// calls its function.
//
// call's context carries the call's Guard while gax sends an attempt, as
// the interceptor's attempt's context does: a governed call made with it
// then is nested in the call, and borrows its slot rather than wait for
// it. So a REST client built with RESTClientOption, whose Transport
// governs each request in a scope of the same account, does not wait for
// the slot its own Do holds (before, with one slot, or as many calls of
// Do at once as the account has slots, its requests waited for the
// deadline); its requests are counted as calls of their own, and the
// Transport retries them, so that Do sees their final answer.
//
//	resp, err := cloudggcp.Do(ctx, cloudggcp.Scope(parent, "BatchGetAssetsHistory"),
//		func(ctx context.Context, opts ...gax.CallOption) (*assetpb.BatchGetAssetsHistoryResponse, error) {
//			return client.BatchGetAssetsHistory(ctx, req, opts...)
//		})
func Do[T any](ctx context.Context, scope resilience.Scope, call func(ctx context.Context, opts ...gax.CallOption) (T, error), opts ...Option) (T, error) {
	var zero T
	cfg := newConfig(opts)
	gov := cfg.governor()
	if scope.Provider != "" && !gov.Enabled(scope.Provider) {
		// Made once, directly, with the client's own settings, as the
		// core's Do calls its function. Begin decides the admission ctx
		// may carry (a scheduler's hold), as for any disabled call.
		if gd, err := gov.Begin(ctx, scope); err == nil {
			gd.End(nil)
		}
		return call(ctx)
	}
	gd, err := gov.Begin(ctx, scope)
	if err != nil {
		return zero, err
	}
	if err := gd.Enter(ctx); err != nil {
		gd.End(err)
		return zero, err
	}
	p := gov.Policy(scope.Provider)
	d := &struct {
		st  callState
		opt stateOption
	}{st: callState{ctx: ctx, scope: scope, gov: gov, gd: gd, maxBackoff: p.MaxBackoff, paced: true, opens: true}}
	d.st.nested.Attach(gd)
	d.opt.init(&d.st, p.Deadline)
	returned := false
	defer func() {
		if !returned {
			// call panicked: the slot goes back, the call is lost to the
			// panic, and the panic goes on.
			d.st.nested.Close()
			gd.EndPanicked()
		}
	}()
	// call's context carries the call's Guard while an attempt is sent
	// (the gate open): a governed call made with it then, a REST
	// client's Transport's request among them, is nested in the call,
	// and borrows its slot rather than wait for it.
	d.st.nested.Open()
	res, err := call(d.st.attemptContext(ctx), &d.opt)
	d.st.nested.Close()
	returned = true
	gd.Release()
	if err == nil {
		gd.After(nil)
	} else {
		err = d.st.outcome(err)
	}
	gd.End(err)
	return res, err
}
