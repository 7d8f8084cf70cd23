package cloudgaws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/resilience"
)

// callState is one logical call's governor state, shared by the
// Initialize middleware (once per call), the per-attempt middleware and
// the retryer (once per retry). It is the context the rest of the call's
// stack runs with: carrying the state as the context itself costs one
// allocation per call instead of two (a state and a context.WithValue).
// An SDK pipeline runs one attempt at a time, so its fields need no lock.
type callState struct {
	context.Context
	gd *resilience.Guard // nil: the call is not governed (provider disabled)

	attempts       int   // attempts sent so far
	lastErr        error // the error of the last attempt
	lastThrottled  bool  // the last attempt was throttled
	retryAccounted bool  // the retryer accounted for the retry about to be sent
	budgetErr      error // the *resilience.RetryBudgetExhaustedError that ended the loop
}

type stateKey struct{}

// Value returns the state itself for stateKey, and defers to the parent
// context for every other key.
func (s *callState) Value(key any) any {
	if key == (stateKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(stateKey{}).(*callState)
	return st
}

// initializeMiddleware runs once per logical call (the spec's before-call
// and after-call hooks).
type initializeMiddleware struct{ inst *installation }

func (*initializeMiddleware) ID() string { return initializeID }

func (m *initializeMiddleware) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	out middleware.InitializeOutput, md middleware.Metadata, err error,
) {
	inst := m.inst
	parent := stateFrom(ctx)
	scope := resilience.Scope{
		Provider:  "aws",
		Account:   inst.account,
		Region:    awsmiddleware.GetRegion(ctx),
		Service:   inst.cache.lookup(awsmiddleware.GetServiceID(ctx), inst.names),
		Operation: awsmiddleware.GetOperationName(ctx),
	}
	gd, gerr := inst.governor().Begin(ctx, scope)
	if gerr != nil || !gd.Enabled() {
		if parent != nil {
			// Hide the enclosing call's state from this call's retryer.
			ctx = &callState{Context: ctx}
		}
		return next.HandleInitialize(ctx, in)
	}
	defer gd.End()

	// Before the call: breaker, one counted call, a rate token, a slot.
	if err := gd.Admit(); err != nil {
		return out, md, &ThrottlingError{Err: err}
	}
	gd.Count()
	if err := gd.Wait(ctx); err != nil {
		return out, md, err
	}
	if parent != nil && parent.gd != nil {
		// A call made inside another governed call (credentials fetched
		// while signing) may find every slot held by calls waiting for
		// it: it takes a slot only if one is free.
		gd.TryAcquire()
	} else if err := gd.Acquire(ctx); err != nil {
		return out, md, err
	}

	st := &callState{Context: ctx, gd: gd}
	out, md, err = next.HandleInitialize(st, in)

	// After the call: the slot, then the outcome.
	gd.Release()
	if st.budgetErr != nil {
		// The SDK joins its last error with the retryer's; the caller
		// gets one error, the budget's, which wraps the provider's.
		err = &ThrottlingError{Err: st.budgetErr}
	}
	if err == nil {
		gd.Succeeded()
	} else {
		gd.Failed(err)
	}
	return out, md, err
}

// attemptMiddleware runs once per attempt, inside the SDK's retry loop
// after its backoff sleep and before signing (the spec's needs-retry hook,
// seen from the attempt's side).
type attemptMiddleware struct{ inst *installation }

func (*attemptMiddleware) ID() string { return attemptID }

func (m *attemptMiddleware) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	out middleware.FinalizeOutput, md middleware.Metadata, err error,
) {
	st := stateFrom(ctx)
	if st == nil || st.gd == nil {
		return next.HandleFinalize(ctx, in)
	}
	if st.attempts > 0 {
		if !st.retryAccounted {
			// The client's retryer is not the one Install set (replaced
			// per client): account for the retry here.
			if rerr := st.gd.Retry(st.lastErr); rerr != nil {
				st.budgetErr = rerr
				return out, md, &ThrottlingError{Err: rerr}
			}
		}
		st.retryAccounted = false
		if st.lastThrottled {
			// A throttled retry waits for a fresh token (and for the
			// scope's Retry-After pause) on top of the SDK's backoff.
			if werr := st.gd.Wait(ctx); werr != nil {
				return out, md, waitError(ctx, werr, st.lastErr)
			}
		}
	}
	st.attempts++
	out, md, err = next.HandleFinalize(ctx, in)
	st.lastErr, st.lastThrottled = err, false
	if err == nil || ctx.Err() != nil {
		return out, md, err
	}
	if governorError(err) {
		// A call made inside this attempt (credentials from STS while
		// signing) was stopped by the governor: nothing was sent to this
		// scope, and the inner call recorded it against its own.
		return out, md, err
	}
	switch resilience.Classify(err) {
	case resilience.Throttled:
		if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil && resp.Response != nil {
			hint, has := resilience.HeaderRetryAfter(resp.Header, resp.StatusCode)
			st.gd.ThrottledFor(err, hint, has)
		} else {
			st.gd.Throttled(err)
		}
		st.lastThrottled = true
	case resilience.Transient:
		st.gd.Transient(err)
	}
	return out, md, err
}

// waitError is the error of a retry whose token wait failed: the caller's
// context ended (the SDK does not retry a canceled request), or the wait
// would overrun the context's deadline, which ends the call with the
// provider's last error, as resilience.Call does.
func waitError(ctx context.Context, werr, lastErr error) error {
	if ctx.Err() != nil || lastErr == nil {
		return &aws.RequestCanceledError{Err: werr}
	}
	return &notRetryable{err: lastErr}
}
