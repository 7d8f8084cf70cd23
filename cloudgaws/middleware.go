package cloudgaws

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/cloudgaws/internal/awsname"
	"github.com/cloudg/cloudg/internal/attemptctx"
	"github.com/cloudg/cloudg/internal/ctxend"
	"github.com/cloudg/cloudg/internal/cutctx"
	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/resilience"
)

// provider is the scope provider of every AWS call.
const provider = "aws"

// sdkPolicy is the retry policy of a governed AWS call: the SDK's retryer
// bounds the attempts, and only the context's deadline bounds the waits,
// so the guard's own limits never stop the SDK's loop first.
var sdkPolicy = resilience.WithPolicy(resilience.RetryPolicy{
	MaxAttempts: math.MaxInt32,
	Deadline:    time.Duration(math.MaxInt64),
})

// callState is one logical call's governor state, shared by the
// Initialize middleware (once per call), the per-attempt middleware and
// the retryer (once per retry). It is the context the rest of the call's
// stack runs with: carrying the state as the context itself costs one
// allocation per call instead of two (a state and a context.WithValue),
// and it is held in the call's initializeMiddleware, made for the call's
// stack, which costs the call no allocation more. An SDK pipeline runs
// one attempt at a time, so its fields need no lock.
type callState struct {
	gov *resilience.Governor
	gd  *resilience.Guard // nil: the call is not governed (provider disabled)

	// gate is gd's: a call made with this context (credentials fetched
	// through STS while signing) reads gd, and is nested in the call,
	// only while an attempt is sent (see Value). The context may outlive
	// the attempt (a goroutine the credentials provider started); the
	// gate closes as each attempt returns, before the guard records it.
	gate attemptctx.Gate

	sent           bool                // an attempt was sent: the next one is a retry
	onWire         bool                // the attempt in progress reached the HTTP client, in a stack with wireMiddleware
	retryAccounted bool                // the retryer accounted for the retry about to be sent
	begun          bool                // the state is, or was, a call's (see initializeMiddleware.newState)
	unsent         error               // the last attempt never left (an *unsentError), not yet recorded (see HandleFinalize)
	first          *smithyhttp.Request // the first attempt's request, whose stream a resend rewinds
	stopErr        error               // the error with which the governor ended the SDK's loop
	ended          bool                // the guard's End was called: the base retryer refused a retry (see refused)

	// The call's context but for the cut of the SDK's backoff sleep when
	// the scope's breaker opens (see watch): the state's Deadline, Done,
	// Err and Value are its (Value but for the state's own keys), and
	// from the SDK's decision to retry until the retry's attempt begins,
	// Done and Err are those of the cut, which the breaker's opening
	// cancels. An attempt runs on the call's own Done and Err, so that
	// neither the breaker nor the call's end cancels its request, or the
	// body of its answer (S3 GetObject's), which is read after the call.
	cut       cutctx.Context
	stopWatch func() bool // the watch of the sleep in progress, if any

	// The retryer that expects RetryDelay for this call's retry of
	// expectedErr, which GetRetryToken allowed (see retryer.expect).
	expected    *retryer
	expectedErr error
}

// newState returns the state of the call the middleware's stack makes
// with ctx, governed by gd of gov (gd nil: not governed): the
// middleware's own, or, when the stack runs again (a middleware of the
// caller's before this one sends the call twice), a new one, since the
// first may still be read (a context a credentials provider's goroutine
// goes on with).
func (m *initializeMiddleware) newState(ctx context.Context, gov *resilience.Governor, gd *resilience.Guard) *callState {
	st := &m.state
	if st.begun {
		st = new(callState)
	}
	st.begun = true
	st.gov, st.gd = gov, gd
	if gd != nil {
		st.gate.Attach(gd)
	}
	st.cut.Init(ctx)
	return st
}

// Deadline is the call's context's.
func (s *callState) Deadline() (time.Time, bool) { return s.cut.Deadline() }

// Done is the call's context's, or during the SDK's sleep before a retry,
// the cut's, which the breaker's opening also closes.
func (s *callState) Done() <-chan struct{} { return s.cut.Done() }

// Err goes with Done.
func (s *callState) Err() error { return s.cut.Err() }

// watch cuts the SDK's backoff sleep before a retry, of length sleep,
// short when the scope's breaker opens and would still refuse the retry
// when the sleep ends (resilience.Guard.AfterOpen): the sleep, on this
// context, ends at once, the SDK's loop ends with a cancelled request,
// and the Initialize middleware asks the guard, which refuses the retry
// and records it. A breaker whose cooldown ends before the sleep does
// leaves it whole: the retry goes as its probe. The retryer calls it once
// the SDK has decided to retry and chosen its backoff, before its sleep.
func (s *callState) watch(sleep time.Duration) {
	s.stopWatch = s.gd.AfterOpen(sleep, s.cut.Arm())
}

// rewatch watches the SDK's sleep again, knowing its length, in place of
// the watch GetRetryToken started, unless that one has cut the sleep
// already (the breaker was open as the retry was allowed): that watch is
// then left for unwatch to report the cut.
func (s *callState) rewatch(sleep time.Duration) {
	if s.stopWatch != nil {
		if !s.stopWatch() {
			return // it cut: stop reports that again to unwatch
		}
		s.stopWatch = nil
	}
	s.watch(sleep)
}

// endCut stops the watch of the SDK's sleep, if one is left, and cancels
// the context the SDK's sleeps watched, if a retry made one: both end
// with the call.
func (s *callState) endCut() {
	s.forget()
	s.unwatch() // a panic out of the SDK's loop left its watch running
	s.cut.Close()
}

// unwatch ends the watch of the sleep, and reports whether it cut the
// sleep short.
func (s *callState) unwatch() (cut bool) {
	if s.stopWatch == nil {
		return false
	}
	cut = !s.stopWatch()
	s.stopWatch = nil
	return cut
}

type stateKey struct{}

// Value returns the state itself for stateKey and the call's guard for
// its governor (so that a call made inside this one's attempt, credentials
// fetched through STS while signing, never waits for the slot this call
// holds); it defers to the parent context for every other key. The guard
// is read through the call's gate, as package resilience reads a call made
// resilience.WithNestedCalls: a call made with this context is nested in
// this one while an attempt is sent only (from Enter until the attempt
// returns, and from a retry's Pace until it returns), not while the SDK
// sleeps before a retry or once the call is over, though the call holds
// its slot across the SDK's retries.
func (s *callState) Value(key any) any {
	if key == (stateKey{}) {
		return s
	}
	return attemptctx.Value(&s.cut, s.gov, s.gd, key)
}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	return st
}

// retry asks the guard whether the retry the SDK is about to make may go,
// after the attempt After recorded. It returns nil to let it go, or the
// error that ends the SDK's loop, which the call then returns:
//   - an empty retry budget: a *ThrottlingError wrapping the core's
//     *resilience.RetryBudgetExhaustedError;
//   - a provider's hint longer than the call may wait
//     (resilience.WithMaxWait): a *ThrottlingError wrapping the core's
//     *resilience.WouldWaitError;
//   - a provider's hint that would pass the context's deadline: the
//     attempt's error, marked not retryable, as resilience.Call returns
//     the last error of a call whose retry the deadline stops: the core's
//     *resilience.DeadlineExceededError, which resilience.Classify reads
//     as Transient, would turn a throttle into a transient error for the
//     caller and resilience.DescribeError. The ledger bound to the
//     context records the give-up as "deadline exceeded after ...".
//
// A retry of an error the core took for a fatal one (a clock-skewed
// AuthFailure, which the SDK retries) is counted and paid from the
// budget like any other, and the empty budget ends it the same way. A
// retry of an attempt that never left the process (credentials that
// could not be had) is not asked: it adds no load to the provider, whose
// retry budget it does not pay (see attemptMiddleware).
func (s *callState) retry() error {
	if s.unsent != nil {
		return nil
	}
	_, err := s.gd.Retry(0)
	switch e := err.(type) {
	case nil:
		return nil
	case *resilience.RetryBudgetExhaustedError, *resilience.WouldWaitError:
		s.stopErr = &ThrottlingError{Err: e}
	case *resilience.DeadlineExceededError:
		s.stopErr = &notRetryable{err: e.Err}
	default:
		return nil
	}
	return s.stopErr
}

// initializeMiddleware runs once per logical call, before the SDK's retry
// loop and after it. installation.addTo makes one for each call's stack,
// with the call's state in it, so that it knows the stack it runs in once
// every option of the call has run (see markWire).
type initializeMiddleware struct {
	inst  *installation
	deser *middleware.DeserializeStep // the stack's Deserialize step
	state callState
}

func (*initializeMiddleware) ID() string { return initializeID }

func (m *initializeMiddleware) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	out middleware.InitializeOutput, md middleware.Metadata, err error,
) {
	inst := m.inst
	gov := inst.governor()
	service := inst.cache.lookup(awsmiddleware.GetServiceID(ctx), inst.names)
	scope := resilience.Scope{
		Provider:  provider,
		Account:   inst.account,
		Region:    awsname.Region(service, awsmiddleware.GetRegion(ctx)),
		Service:   service,
		Operation: awsmiddleware.GetOperationName(ctx),
	}
	if !gov.Enabled(provider) {
		// Sent at once, ungoverned. Begin decides the admission ctx may
		// carry (a scheduler's hold on the scope's next task, package
		// pool's), as the core's calls of a disabled provider do.
		if gd, err := gov.Begin(ctx, scope, sdkPolicy); err == nil {
			gd.End(nil)
		}
		if stateFrom(ctx) != nil {
			// Hide the enclosing call's state from this call's retryer.
			ctx = m.newState(ctx, nil, nil)
		}
		return next.HandleInitialize(ctx, in)
	}
	gd, err := gov.Begin(ctx, scope, sdkPolicy)
	if err != nil {
		return next.HandleInitialize(ctx, in) // not reached: the scope has its provider
	}
	// Before the call: breaker, deadline, one counted call, a rate token,
	// a slot held across the SDK's retries.
	if err := gd.Enter(ctx); err != nil {
		gd.End(err)
		return out, md, refusal(err)
	}
	var st *callState
	returned := false
	defer func() {
		if !returned {
			// A panic below (a middleware, the HTTP client): the slot goes
			// back, the call is lost to the panic, and the panic goes on.
			if st != nil {
				st.gate.Close()
			}
			gd.EndPanicked()
		}
	}()

	st = m.newState(ctx, gov, gd)
	defer st.endCut() // even on a panic: nothing derived from ctx is left behind
	m.markWire()
	// The first attempt is entered: a call made with st is nested in it
	// until the attempt middleware closes the gate, once it is sent.
	st.gate.Open()
	out, md, err = next.HandleInitialize(st, in)
	for st.unwatch() && st.stopErr == nil && sleepCut(ctx, err) {
		// The breaker opened while the SDK slept before a retry, which
		// ended its loop: the retry asks the guard now, as it would have
		// after the sleep. Refused (the breaker is open), it ends the call
		// as a retry the breaker refused; let through after all (its
		// cooldown ended meanwhile), it is sent, in a loop of its own.
		st.cut.Reset()
		if perr := gd.Pace(ctx); perr != nil {
			st.stopErr = paceError(ctx, perr)
			break
		}
		if st.first != nil && st.first.RewindStream() != nil {
			break
		}
		st.retryAccounted = true
		out, md, err = next.HandleInitialize(st, in)
	}
	for st.stopErr == nil && attemptsRanOut(err) {
		// A provider that waits for its breakers' verdicts (breaker_wait)
		// loses no call to an outage its deadline could wait out: the
		// failure counts towards the breaker, and the call is sent again
		// with the SDK's attempts renewed once the verdict has come (the
		// attempt middleware's Pace waits for it). A body the caller gave
		// is sent again whole, or the call is not.
		if st.first != nil && st.first.RewindStream() != nil || !gd.Resend() {
			break
		}
		st.retryAccounted = true
		out, md, err = next.HandleInitialize(st, in)
	}
	st.endUnsent()
	if st.stopErr != nil {
		// The SDK joins its last error with the retryer's; the caller
		// gets one error, the governor's, which wraps the provider's.
		err = st.stopErr
	}
	// After the call: the slot, and the outcome the SDK's loop left open.
	st.gate.Close() // a loop that ended before its attempt was sent left it open
	if !st.ended {
		gd.End(err)
	}
	returned = true
	return out, md, err
}

// sleepCut reports whether the SDK's loop ended on a cancelled request
// while the caller's ctx is live, when the watch says it cut the call's
// context: a backoff sleep that the breaker's opening cut short (see
// watch), or, when the cut came as the sleep ended, the SDK's check of
// the context before the attempt, or its adaptive mode's wait for an
// attempt token (both return the context's error, not a cancelled
// request).
func sleepCut(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	var rc *aws.RequestCanceledError
	if cut, _ := errread.As(err, &rc); cut {
		return true
	}
	cancelled, _ := errread.Is(err, context.Canceled)
	return cancelled && ctx.Err() == nil
}

// attemptsRanOut reports whether the SDK's loop ended because its
// attempts ran out.
func attemptsRanOut(err error) bool {
	if err == nil {
		return false // before the target below, which escapes: no allocation on success
	}
	var mae *retry.MaxAttemptsError
	ran, _ := errread.As(err, &mae)
	return ran
}

// attemptMiddleware runs once per attempt, inside the SDK's retry loop
// after its backoff sleep and before signing.
type attemptMiddleware struct{ inst *installation }

func (*attemptMiddleware) ID() string { return attemptID }

func (m *attemptMiddleware) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	out middleware.FinalizeOutput, md middleware.Metadata, err error,
) {
	st := stateFrom(ctx)
	if st == nil || st.gd == nil {
		return next.HandleFinalize(ctx, in)
	}
	if st.stopErr != nil {
		// The governor ended the call at an attempt before: a retryer
		// that retried it anyway, whatever its RetryableError says (see
		// stop), sends nothing more.
		return out, md, &stopped{err: st.stopErr}
	}
	if st.sent && st.unsent != nil {
		// The attempt before never left the process (see ownAnswer): this
		// one goes on its admission, as the call's first to the scope,
		// which it adds no load to. It is no retry of the scope's: not
		// counted, paid from the retry budget or paced. What the SDK's
		// sleep may have changed is asked again (attemptctx.ReadyResend):
		// a breaker that opened meanwhile refuses it, as it refuses a
		// retry (with breaker_wait, holds it until its verdict, as it
		// holds a retry's Pace); a pause of the scope holds it until it
		// ends, as it holds every call of the scope; and the slot held
		// across the SDK's retries, when it is lent to a call nested in
		// the attempt before that goes on (a credentials refresh), is
		// left to that call while this attempt waits for another.
		st.retryAccounted = false
		st.unwatch()
		st.cut.Reset()
		if err := attemptctx.ReadyResend(ctx, st.gd); err != nil {
			return out, md, st.stop(st.unsentStop(ctx, err))
		}
		st.unsent = nil
	} else if st.sent {
		// The SDK's sleep is over: the watch ends, and the retry runs on
		// the call's own context (if the breaker opened as the sleep
		// ended, the cut one is done, and the retry asks the guard below).
		// A request sent on the cut one would be cancelled when the call
		// ends, and with it the body of its answer, which the caller reads
		// after the call returns.
		st.unwatch()
		st.cut.Reset()
		if !st.retryAccounted {
			// The client's retryer is not the one Install set (replaced
			// per client): account for the retry here.
			if stop := st.retry(); stop != nil {
				return out, md, st.stop(stop)
			}
		}
		st.retryAccounted = false
		// A throttled retry waits for a fresh token (and for the scope's
		// Retry-After pause) on top of the SDK's backoff.
		if perr := st.gd.Pace(ctx); perr != nil {
			return out, md, st.stop(paceError(ctx, perr))
		}
	}
	if !st.sent {
		st.first, _ = in.Request.(*smithyhttp.Request)
	}
	st.sent = true
	st.onWire = false
	st.gate.Open()
	out, md, err = next.HandleFinalize(ctx, in)
	st.gate.Close()
	if ans := st.ownAnswer(err, md); isUnsentError(ans) {
		// Nothing was sent: the guard is told when the call ends with it
		// (endUnsent), not before the SDK's retry, which it would count
		// and pay from the retry budget.
		st.unsent = ans
	} else {
		st.gd.After(ans)
	}
	return out, md, err
}

// stop makes err, with which the governor ends the call at the attempt
// about to be sent (its refusal, or the end of the call's context), the
// call's error, and returns what the SDK's retry loop gets in its place:
// a *stopped, which no retryer retries by its code. A retryer of the
// caller's that reads error codes before RetryableError
// (retry.AddWithErrorCodes, wrapped around the governed retryer or put
// in its place) would take err for an error to retry, by its own code
// (Throttling) or by the code of the provider's answer it wraps: the
// retry would be refused again, or sent without its token once the guard
// had ended the call. The Initialize middleware returns err, as the SDK's
// loop would have with the governed retryer alone.
func (s *callState) stop(err error) error {
	s.stopErr = err
	return &stopped{err: err}
}

// stopped is what the SDK's retry loop gets of the error with which the
// governor ended the call before an attempt (see callState.stop): its
// message, and RetryableError false, but nothing of its chain, which a
// retryer would search for an error code to retry (errors.As); the
// Initialize middleware returns the error itself.
type stopped struct{ err error }

func (e *stopped) Error() string        { return e.err.Error() }
func (e *stopped) RetryableError() bool { return false }

// unsentStop is the error that ends the SDK's loop when the retry of an
// attempt that never left the process may not go (see
// attemptctx.ReadyResend), which the SDK does not retry. The scope's
// breaker opened (with breaker_wait, and no verdict let the attempt
// through by the call's deadline or within its max wait): the attempt's
// own failure, as when the SDK's attempts run out, recorded as endUnsent
// records it, lost as errored. Otherwise the governor ended the call and
// recorded it, as it records a call it does not send, and endUnsent
// records nothing more: the caller's context ended, or its deadline came
// before the timer due then ran (see contextEnded), a canceled request
// (cancelled); no token or slot would come within the call's max wait
// (resilience.WithMaxWait), a
// *ThrottlingError wrapping the core's *resilience.WouldWaitError
// (refused); the scope's pause outlasts the call's deadline, the core's
// *resilience.DeadlineExceededError joined to the attempt's failure
// (refused).
func (s *callState) unsentStop(ctx context.Context, err error) error {
	failure := s.unsent.(*unsentError).err
	if _, open := err.(*resilience.CircuitOpenError); open {
		return &notRetryable{err: failure}
	}
	s.unsent = nil // recorded by the governor
	if _, wait := err.(*resilience.WouldWaitError); wait {
		return &ThrottlingError{Err: err}
	}
	if ctx.Err() != nil || contextEnded(err) {
		return &aws.RequestCanceledError{Err: err}
	}
	return &notRetryable{err: fmt.Errorf("%w while waiting to send again after: %w", err, failure)}
}

// contextEnded reports whether err, with which the guard ended a call
// before sending it (attemptctx.ReadyResend, resilience.Guard.Pace), is
// the context's end the governor read before the context said so (its
// deadline come, the timer due then not run yet): the context's error
// alone, or with the call's last answer (Pace's, before a retry; see
// ctxend.Of), or a *resilience.DeadlineExceededError of no wait. A
// *resilience.DeadlineExceededError with a wait (a pause that outlasts
// the deadline) is the governor's refusal, not the context's end; so is
// the last answer, which Pace returns as it is when a token's wait would
// pass the deadline, or no verdict of the breaker came by it, even when
// the answer matches context.DeadlineExceeded itself (a transport's
// timeout).
func contextEnded(err error) bool {
	if de, ok := err.(*resilience.DeadlineExceededError); ok {
		return de.Wait == 0
	}
	return ctxend.Of(err) != nil
}

// endUnsent records the attempt the call ended with, when it never left
// the process (see HandleFinalize), as a local error: the call is lost as
// errored.
func (s *callState) endUnsent() {
	if s.unsent != nil {
		s.gd.After(s.unsent)
		s.unsent = nil
	}
}

// ownAnswer is what the guard records of the attempt that ended with err
// and md: err itself when the attempt's request reached the HTTP client
// (see reachedClient), whose error (a refused connection, a reset, the
// service's answer) is the scope's. An attempt that failed before (its
// credentials could not be had, from a credential server or through
// another SDK call made inside it, STS's while signing; its endpoint could
// not be resolved; it could not be signed) sent nothing to the scope,
// which it must neither slow, pause nor fail, whatever its error says (a
// refused connection to a credential server, a throttle of STS's): it is
// recorded as a local error (unsentError), a call lost as errored if it
// ends with it. The governor's stop of a call made inside the attempt
// that the error holds is recorded alone, in its place: the core reads
// it as another call's stop, whatever else the error's chain holds.
// attemptctx.GovernorStop reads the error for it without panicking, past
// a method of its chain that panics (an Unwrap that reads a nil pointer,
// from a credentials provider), so that the attempt middleware never
// crashes on an error the SDK itself may read without panicking.
func (s *callState) ownAnswer(err error, md middleware.Metadata) error {
	if err == nil || s.reachedClient(md) {
		return err
	}
	if stop := attemptctx.GovernorStop(err); stop != nil {
		return stop
	}
	return &unsentError{err: err}
}

// isUnsentError reports whether err, what ownAnswer made of an attempt's
// error, is an *unsentError: the attempt never left the process.
func isUnsentError(err error) bool {
	_, ok := err.(*unsentError)
	return ok
}

// reachedClient reports whether the attempt that ended with md reached the
// HTTP client. The SDK's client handler, the innermost of the Deserialize
// step, gives every request it hands the client a raw response (an empty
// one when the client failed it), which the SDK's AddRawResponseToMetadata
// middleware, in every AWS client's stack, puts in the attempt's metadata:
// the attempt middleware reads it there once the attempt returns, so that
// the governor adds no middleware to the call's stack, which would cost an
// allocation a call. The error is not read: one of another SDK call made
// inside the attempt (STS's answer while signing) carries that call's
// response. A stack without that middleware has a mark of its own
// (wireMiddleware, see initializeMiddleware.markWire). An attempt's error before
// the client (in the Finalize step's credentials, endpoint resolution and
// signing, which run after the attempt middleware, or the client
// handler's checks of the request) is no answer of the scope's (see
// callState.ownAnswer).
func (s *callState) reachedClient(md middleware.Metadata) bool {
	return s.onWire || awsmiddleware.GetRawResponse(md) != nil
}

// markWire adds wireMiddleware to the stack's Deserialize step, innermost,
// when the step has not the SDK's AddRawResponseToMetadata (see
// callState.reachedClient), nor the mark already. It looks as the call
// begins, once every option of the call has run, whatever their order:
// an option of the caller's that removes the SDK's middleware may run
// after the installation's (a client's option, a call's), which would
// leave every failed attempt read as one that never left the process.
// Every AWS client's stack has the SDK's middleware: the governor then
// adds nothing to it, which would cost an allocation a call.
func (m *initializeMiddleware) markWire() {
	if _, raw := m.deser.Get(rawID); raw {
		return
	}
	if _, ok := m.deser.Get(wireID); !ok {
		_ = m.deser.Add(wireMiddleware{}, middleware.After)
	}
}

// wireMiddleware marks the attempt in progress as having reached the HTTP
// client, in a stack without the SDK's AddRawResponseToMetadata (see
// callState.reachedClient): it is the innermost middleware of the
// Deserialize step, the last before the SDK hands the signed request to
// the client.
type wireMiddleware struct{}

func (wireMiddleware) ID() string { return wireID }

func (wireMiddleware) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	out middleware.DeserializeOutput, md middleware.Metadata, err error,
) {
	if st := stateFrom(ctx); st != nil {
		st.onWire = true
	}
	return next.HandleDeserialize(ctx, in)
}

// refusal is the error of a call the guard refused before sending it: an
// open breaker's *resilience.CircuitOpenError and a wait's
// *resilience.WouldWaitError (resilience.WithMaxWait) as a
// *ThrottlingError, which the SDK does not retry; any other error (the
// deadline's, the context's) as it is.
func refusal(err error) error {
	switch err.(type) {
	case *resilience.CircuitOpenError, *resilience.WouldWaitError:
		return &ThrottlingError{Err: err}
	}
	return err
}

// paceError is the error of a retry the guard did not let go: the
// caller's context ended, or its deadline came before the timer due then
// ran (see contextEnded), a canceled request, which the SDK does not
// retry, as it gives one when a context ends; the breaker refused it, or
// its wait would pass the call's max wait (resilience.WithMaxWait): a
// *ThrottlingError wrapping the core's error, which wraps the provider's
// last error; or the wait would pass the context's deadline, which ends
// the call with the provider's last error, as resilience.Call does.
func paceError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &aws.RequestCanceledError{Err: err}
	}
	if te, ok := refusal(err).(*ThrottlingError); ok {
		return te
	}
	if contextEnded(err) {
		return &aws.RequestCanceledError{Err: err}
	}
	return &notRetryable{err: err}
}
