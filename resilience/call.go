package resilience

import "context"

// Call calls fn under scope's circuit breaker, rate limits, bulkhead and
// retry policy, and returns fn's result:
//
//  1. the breaker: open, and a *CircuitOpenError returns at once;
//  2. the deadline: spent, and a *DeadlineExceededError (or the last error);
//  3. a token from the provider, account and leaf buckets, waiting for the
//     slowest (a wait that would overrun the deadline ends the call);
//  4. a bulkhead slot of the provider x account, held while fn runs;
//  5. fn;
//  6. on error: Fatal returns at once; Throttled halves the scope's rate
//     and pauses it for the provider's Retry-After; Throttled and Transient
//     back off (decorrelated jitter, min(cap, uniform(base, 3 x previous)),
//     never shorter than Retry-After) and go to 1 while retries, deadline
//     and retry budget allow. When retrying stops, the caller gets fn's
//     error as it was, and the breaker counts a failure.
//
// Every step is counted in the governor's stats and in the Stats bound to
// ctx; give-ups go to the ledger bound to ctx. When the provider is
// disabled, fn is called once, directly. Call is safe for concurrent use
// and does not allocate on the success path.
func Call[T any](ctx context.Context, scope Scope, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	var res T
	if fn == nil {
		return res, ErrNilFunc
	}
	err := do(ctx, scope, func(ctx context.Context) error {
		var err error
		res, err = fn(ctx)
		return err
	}, opts)
	return res, err
}

// Do is Call for a function without a result.
func Do(ctx context.Context, scope Scope, fn func(context.Context) error, opts ...Option) error {
	if fn == nil {
		return ErrNilFunc
	}
	return do(ctx, scope, fn, opts)
}

// Wrap returns fn governed as Call governs it, for a fixed scope: the
// decorator form.
func Wrap[T any](scope Scope, fn func(context.Context) (T, error), opts ...Option) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) { return Call(ctx, scope, fn, opts...) }
}

// WrapArg returns fn governed as Call governs it, with the scope computed
// from the argument of each call. When fn or scopeOf is nil every call
// returns ErrNilFunc, as Call does for a nil function.
func WrapArg[A, T any](scopeOf func(A) Scope, fn func(context.Context, A) (T, error), opts ...Option) func(context.Context, A) (T, error) {
	return func(ctx context.Context, a A) (T, error) {
		if fn == nil || scopeOf == nil {
			var zero T
			return zero, ErrNilFunc
		}
		return Call(ctx, scopeOf(a), func(ctx context.Context) (T, error) { return fn(ctx, a) }, opts...)
	}
}

// do is the retry loop of Call and Do, on a Guard kept on the stack.
func do(ctx context.Context, scope Scope, fn func(context.Context) error, opts []Option) error {
	g, rp := callOptions(opts)
	if scope.Provider == "" {
		return ErrNoProvider
	}
	var gd Guard
	if !gd.begin(ctx, g, scope, rp) {
		return fn(ctx)
	}
	for {
		if err := gd.Enter(ctx); err != nil {
			return err
		}
		err := gd.attempt(ctx, fn)
		gd.After(err)
		if err == nil {
			return nil
		}
		delay, rerr := gd.retry(0, true)
		if rerr != nil {
			return err
		}
		if serr := g.sleep(ctx, delay); serr != nil {
			return ctxError(serr, err)
		}
	}
}

// attempt calls fn holding the slot Enter took, and gives it back even if
// fn panics. It is its own function so that its one defer is open-coded.
func (gd *Guard) attempt(ctx context.Context, fn func(context.Context) error) error {
	defer gd.Release()
	return fn(ctx)
}
