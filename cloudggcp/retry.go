package cloudggcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// initialBackoff is the spec's first pause of the GCP retry; each retry of
// a page doubles it, up to the provider's max backoff.
const initialBackoff = time.Second

// RetryStoppedError is returned instead of a provider error that was not
// retried because the pause before the retry (the backoff, or the
// provider's RetryInfo delay, whichever is longer) would outlast the
// deadline, or because the context ended during that pause. gax would
// return a bare context error and lose the provider's answer; this keeps
// both: errors.As finds the provider error (*apierror.APIError) and
// errors.Is finds Reason (context.DeadlineExceeded or context.Canceled).
// It classifies as the provider error does.
type RetryStoppedError struct {
	Scope  resilience.Scope
	Err    error         // the provider error that was not retried
	Reason error         // context.DeadlineExceeded, or the context's error
	Pause  time.Duration // the pause the retry needed
	Left   time.Duration // the time that was left before the deadline
}

func (e *RetryStoppedError) Error() string {
	if errors.Is(e.Reason, context.DeadlineExceeded) && e.Pause > 0 {
		return fmt.Sprintf("%s: not retried: a pause of %s would pass the deadline (%s left): %v",
			e.Scope, e.Pause.Round(time.Millisecond), max(e.Left, 0).Round(time.Millisecond), e.Err)
	}
	return fmt.Sprintf("%s: %v while waiting to retry: %v", e.Scope, e.Reason, e.Err)
}

// Unwrap returns the provider error and the reason.
func (e *RetryStoppedError) Unwrap() []error { return []error{e.Err, e.Reason} }

// callState is the governed retry loop of one logical call: a page fetch
// of a listing (reused page after page), or one unary call made with the
// Retry option. It is the gax.Retryer of that call.
type callState struct {
	ctx   context.Context
	scope resilience.Scope
	gov   *resilience.Governor
	gd    *resilience.Guard // a listing's guard; a unary call's, made on first use
	set   resilience.RetrySettings
	paced bool // the caller (a listing, Do) paces and records the call

	start    time.Time // when the current page fetch or call started
	n        int       // consecutive retries of this page or call
	last     error     // the last provider error seen by Retry
	final    error     // what to return instead of gax's error, once stopped
	recorded bool      // the call's outcome is recorded
}

// reset starts a new page fetch (or call) at now.
func (s *callState) reset(now time.Time) {
	s.start, s.n, s.last, s.final, s.recorded = now, 0, nil, nil, false
	if s.gd != nil {
		s.gd.ResetRetries()
	}
}

func (s *callState) guard() *resilience.Guard {
	if s.gd == nil {
		gd, err := s.gov.Begin(s.ctx, s.scope)
		if err != nil { // a scope without a provider: cannot happen here
			panic(err)
		}
		s.gd = gd
	}
	return s.gd
}

// Retry implements gax.Retryer. It is called after every failed attempt.
func (s *callState) Retry(err error) (time.Duration, bool) {
	s.last = err
	if s.ctx.Err() != nil {
		return 0, false // the caller's context ended: nothing to record
	}
	gd := s.guard()
	code, ok := retryable(err)
	if !ok {
		s.stop(err, err)
		return 0, false
	}
	// Report the retried error: throttling halves the rate and pauses it
	// for RetryInfo's delay; a transient error is counted.
	hint, hasHint := resilience.RetryAfter(err)
	if code == codes.ResourceExhausted || code == codes.Unavailable {
		gd.ThrottledFor(err, hint, hasHint)
	} else {
		gd.Transient(err)
	}
	if s.n >= max(s.set.MaxRetries, 0) {
		// Consecutive-retry limit of the page: the breaker counts a
		// failure, throttling is a give-up.
		s.stop(err, &resilience.RetryBudgetExhaustedError{Scope: s.scope, Err: err})
		return 0, false
	}
	pause := backoff(s.n+1, s.set.MaxBackoff)
	if hasHint {
		pause = max(pause, min(hint, resilience.MaxPause))
	}
	if left, ok := s.timeLeft(); ok && pause >= left {
		s.stop(err, &RetryStoppedError{Scope: s.scope, Err: err, Reason: context.DeadlineExceeded, Pause: pause, Left: left})
		return 0, false
	}
	if rerr := gd.Retry(err); rerr != nil {
		// The budget is empty: recorded as a give-up by the guard.
		s.final, s.recorded = rerr, true
		return 0, false
	}
	s.n++
	return pause, true
}

// stop ends the loop on err, records the outcome and keeps final as the
// error to return.
func (s *callState) stop(err, final error) {
	s.final = final
	s.recorded = true
	s.gd.Failed(err)
}

// outcome returns the error a fetch or call ends with, given gax's err.
func (s *callState) outcome(err error) error {
	if s.final != nil {
		return s.final
	}
	if s.last != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) && !errors.Is(s.last, err) {
		// gax's sleep before a retry was cut short by a context.
		return &RetryStoppedError{Scope: s.scope, Err: s.last, Reason: err}
	}
	return err
}

// timeLeft returns the time until the deadline of the current fetch:
// the context's, or else gax's timeout (the provider's deadline), which gax
// applies only to a context without one.
func (s *callState) timeLeft() (time.Duration, bool) {
	if d, ok := s.ctx.Deadline(); ok {
		return time.Until(d), true
	}
	if s.set.Deadline > 0 {
		return time.Until(s.start.Add(s.set.Deadline)), true
	}
	return 0, false
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
// interceptor, so that a call governed by a listing or by Retry is not
// governed twice.
type governed struct {
	grpc.EmptyCallOption
	st *callState
}

// Retry returns a gax.CallOption for calls in scope (gcp/<parent>/*/<service>/<Rpc>,
// see Scope) that replaces the method's retry settings with the spec's GCP
// retry:
//
//   - ResourceExhausted, Unavailable, DeadlineExceeded and Internal are
//     retried, after 1 s, doubling, capped at the provider's max backoff
//     (60 s), never sooner than the error's RetryInfo delay (capped at
//     resilience.MaxPause);
//   - each retried error is reported to the governor: throttling halves the
//     scope's rate and pauses it for RetryInfo's delay;
//   - the first two retries of a call are free, each further one costs a
//     token of the provider's retry budget; at most max_retries (8) retries
//     are made;
//   - the call's timeout is the provider's deadline (900 s) when ctx has
//     none; a retry whose pause would pass the deadline is not made.
//
// When a limit stops the loop the outcome is recorded (the breaker counts
// a failure; throttling is a give-up in the stats and ctx's ledger); a
// non-retryable provider answer resets the breaker. ctx is the context the
// calls are made with: it carries the run's Stats and Ledger, and its
// deadline bounds the retries. Make one per run, not per call.
//
// gax's Retryer cannot replace the error gax returns, so a call made with
// this option alone returns the provider error when a limit stops it; Do
// and the listings return the *resilience.RetryBudgetExhaustedError or
// *RetryStoppedError instead. Successes are seen only through the
// interceptor (ClientOption) or Do, which count and pace each call.
func Retry(ctx context.Context, scope resilience.Scope, opts ...Option) gax.CallOption {
	cfg := newConfig(opts)
	gov := cfg.governor()
	set := gov.RetrySettings(scope.Provider)
	return &retryOption{ctx: ctx, scope: scope, gov: gov, set: set, timeout: gax.WithTimeout(set.Deadline)}
}

type retryOption struct {
	ctx     context.Context
	scope   resilience.Scope
	gov     *resilience.Governor
	set     resilience.RetrySettings
	timeout gax.CallOption
}

// Resolve is called by gax.Invoke at the start of every call: each call
// gets its own state.
func (o *retryOption) Resolve(cs *gax.CallSettings) {
	st := &callState{ctx: o.ctx, scope: o.scope, gov: o.gov, set: o.set, start: time.Now()}
	cs.Retry = func() gax.Retryer { return st }
	o.timeout.Resolve(cs)
	cs.GRPC = append(cs.GRPC[:len(cs.GRPC):len(cs.GRPC)], governed{st: st})
}

// stateOption resolves every call to one state: a listing's pages, or the
// call of Do. It allocates nothing per call.
type stateOption struct {
	st      *callState
	retryer func() gax.Retryer
	timeout gax.CallOption
	grpc    [1]grpc.CallOption
}

func (o *stateOption) init(st *callState) {
	o.st = st
	o.retryer = func() gax.Retryer { return st }
	o.timeout = gax.WithTimeout(st.set.Deadline)
	o.grpc[0] = governed{st: st}
}

func (o *stateOption) Resolve(cs *gax.CallSettings) {
	cs.Retry = o.retryer
	if o.st.set.Deadline > 0 {
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
// and the Retry policy for gax's retries of it (pass opts on to the
// client's method). It records the outcome and returns the call's result,
// with the error a limit stopped it on (*resilience.RetryBudgetExhaustedError,
// *RetryStoppedError) rather than gax's.
//
//	resp, err := cloudggcp.Do(ctx, cloudggcp.Scope(parent, "BatchGetAssetsHistory"),
//		func(ctx context.Context, opts ...gax.CallOption) (*assetpb.BatchGetAssetsHistoryResponse, error) {
//			return client.BatchGetAssetsHistory(ctx, req, opts...)
//		})
func Do[T any](ctx context.Context, scope resilience.Scope, call func(ctx context.Context, opts ...gax.CallOption) (T, error), opts ...Option) (T, error) {
	var zero T
	cfg := newConfig(opts)
	gov := cfg.governor()
	gd, err := gov.Begin(ctx, scope)
	if err != nil {
		return zero, err
	}
	defer gd.End()
	if err := gd.Admit(); err != nil {
		return zero, err
	}
	gd.Count()
	if err := gd.Wait(ctx); err != nil {
		return zero, err
	}
	if err := gd.Acquire(ctx); err != nil {
		return zero, err
	}
	d := &struct {
		st  callState
		opt stateOption
	}{st: callState{ctx: ctx, scope: scope, gov: gov, gd: gd, set: gov.RetrySettings(scope.Provider), paced: true}}
	st := &d.st
	d.opt.init(st)
	st.reset(time.Now())
	res, err := call(ctx, &d.opt)
	gd.Release()
	if err == nil {
		gd.Succeeded()
		return res, nil
	}
	err = st.outcome(err)
	if !st.recorded {
		gd.Failed(err)
	}
	return res, err
}
