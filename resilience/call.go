package resilience

import (
	"context"
	"sync/atomic"

	"github.com/cloudg/cloudg/internal/nestgate"
)

// Call calls fn under scope's circuit breaker, rate limits, bulkhead and
// retry policy, and returns fn's result:
//
//  1. the breaker: open, and a *CircuitOpenError returns at once (with
//     breaker_wait, once the call's deadline would not cover waiting for
//     the breaker's verdict);
//  2. the deadline: spent, and a *DeadlineExceededError (or the last error);
//  3. a token from the provider, account and leaf buckets, waiting for the
//     slowest (a wait that would overrun the deadline ends the call);
//  4. a bulkhead slot of the provider x account, held while fn runs (a
//     wait for one ends at the deadline);
//  5. fn;
//  6. on error: Fatal returns at once; Throttled halves the scope's rate
//     and pauses it for the provider's Retry-After; Throttled and Transient
//     back off (decorrelated jitter, min(cap, uniform(base, 3 x previous)),
//     never shorter than Retry-After) and go to 1 while retries, deadline
//     and retry budget allow. When retrying stops, the caller gets fn's
//     error as it was, and the breaker counts a failure.
//
// Every step is counted in the governor's stats and in the Stats bound to
// ctx; a call lost (given up, skipped, failed, refused, cancelled, ended
// by a local error, or by a panic of fn or of the governor's log handler,
// which goes on to the caller) goes to the ledger bound to ctx (see
// Loss). When the provider is disabled, fn is called once, directly. Call
// is safe for concurrent use and does not allocate on the success path.
//
// fn is given ctx as it is, so a governed call fn makes with it is not
// known to be nested in this one: it waits for a slot of the account's
// bulkhead as any call does, though this call holds one. With calls that
// each make another inside fn filling the bulkhead (with max_concurrency
// 1, one such call), they wait until their deadline. WithNestedCalls
// gives fn a context carrying the call, for one allocation.
func Call[T any](ctx context.Context, scope Scope, fn func(context.Context) (T, error), opts ...CallOption) (T, error) {
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
func Do(ctx context.Context, scope Scope, fn func(context.Context) error, opts ...CallOption) error {
	if fn == nil {
		return ErrNilFunc
	}
	return do(ctx, scope, fn, opts)
}

// Wrap returns fn governed as Call governs it, for a fixed scope: the
// decorator form. The scope is bound (Governor.Bind) to the governor of
// the first call, and again whenever the governor changes.
func Wrap[T any](scope Scope, fn func(context.Context) (T, error), opts ...CallOption) func(context.Context) (T, error) {
	var bound atomic.Pointer[Bound]
	return func(ctx context.Context) (T, error) {
		var res T
		if fn == nil {
			return res, ErrNilFunc
		}
		g, _, _ := callOptions(opts)
		b := bound.Load()
		if b == nil || b.g != g {
			nb, err := g.Bind(scope)
			if err != nil {
				return res, err
			}
			bound.Store(nb)
			b = nb
		}
		err := b.Do(ctx, func(ctx context.Context) error {
			var err error
			res, err = fn(ctx)
			return err
		}, opts...)
		return res, err
	}
}

// WrapArg returns fn governed as Call governs it, with the scope computed
// from the argument of each call. A scope that two calls in a row share is
// bound (Governor.Bind), and stays bound while the calls keep to it. When
// fn or scopeOf is nil every call returns ErrNilFunc, as Call does for a
// nil function.
func WrapArg[A, T any](scopeOf func(A) Scope, fn func(context.Context, A) (T, error), opts ...CallOption) func(context.Context, A) (T, error) {
	var bound atomic.Pointer[Bound] // the scope of the last call, bound once repeated
	return func(ctx context.Context, a A) (T, error) {
		var res T
		if fn == nil || scopeOf == nil {
			return res, ErrNilFunc
		}
		sc := scopeOf(a)
		g, _, _ := callOptions(opts)
		call := func(ctx context.Context) error {
			var err error
			res, err = fn(ctx, a)
			return err
		}
		b := bound.Load()
		if b != nil && b.g == g && b.scope == sc {
			return res, b.Do(ctx, call, opts...)
		}
		if nb, err := g.Bind(sc); err == nil && b != nil && b.scope == sc {
			bound.Store(nb) // the same scope again, with another governor
		} else if err == nil {
			bound.Store(&Bound{g: g, scope: sc}) // bound on its next call, unresolved until then
		}
		return res, do(ctx, sc, call, opts)
	}
}

// do is the retry loop of Call and Do, on a Guard kept on the stack.
func do(ctx context.Context, scope Scope, fn func(context.Context) error, opts []CallOption) error {
	g, rp, nest := callOptions(opts)
	if scope.Provider == "" {
		return ErrNoProvider
	}
	if nest {
		nc := new(nestingCall)
		if !nc.gd.begin(ctx, g, scope, rp) {
			return fn(ctx)
		}
		return nc.loop(ctx, fn)
	}
	var gd Guard
	if !gd.begin(ctx, g, scope, rp) {
		return fn(ctx)
	}
	return gd.loop(ctx, fn)
}

// nestingCall is a call made WithNestedCalls: its Guard, and the context
// its function's attempts are given, which carries the Guard as
// Guard.Enter looks an enclosing call up. One allocation holds both.
type nestingCall struct {
	gd  Guard
	ctx nestingCtx

	// gate orders the lookups of the calls nested in gd's attempts
	// (Guard.borrowSlot, Guard.lender), which may run in goroutines fn
	// started and did not wait for, with gd's own goroutine: open while
	// fn runs (gd is still then), it closes as fn returns, once no lookup
	// reads gd, so that a lookup reads nothing gd writes after, and a
	// call made with the context once the attempt is over is not nested
	// in it.
	gate nestgate.Gate
}

func init() {
	// The integrations' attempt contexts (package attemptctx) gate their
	// Guards' attempts as WithNestedCalls does.
	nestgate.Attach = func(guard any, g *nestgate.Gate) {
		gd := guard.(*Guard)
		if gd.gate != nil {
			panic("resilience: a Guard's attempts already have a gate")
		}
		gd.gate = g
	}
}

// lookIn readies outer, an enclosing call a nested call's context led
// to, for the nested call to read what it holds: it reports whether
// outer's attempt is running (always, for a Guard without a gate: one
// that a caller of Governor.Begin put in a context of its own), and if
// so the caller reads outer and then calls lookedIn.
func (outer *Guard) lookIn() bool {
	return outer.gate == nil || outer.gate.LookIn()
}

// lookedIn ends what lookIn began.
func (outer *Guard) lookedIn() {
	if g := outer.gate; g != nil {
		g.LookedIn()
	}
}

// nestingCtx is the caller's context, answering Value(gov) with the call's
// Guard.
type nestingCtx struct {
	context.Context
	gd *Guard
}

// Value returns the call's Guard for its governor, and asks the caller's
// context otherwise.
func (c *nestingCtx) Value(key any) any {
	if g, ok := key.(*Governor); ok && g == c.gd.g {
		return c.gd
	}
	return c.Context.Value(key)
}

// loop runs the call's attempts on its Guard, which begin set up, giving
// fn the context that carries it.
func (nc *nestingCall) loop(ctx context.Context, fn func(context.Context) error) error {
	nc.ctx = nestingCtx{Context: ctx, gd: &nc.gd}
	nc.gd.gate = &nc.gate
	return nc.gd.loop(ctx, func(context.Context) error {
		nc.gate.SetOpen(true)
		defer nc.gate.SetOpen(false) // a panic's too
		return fn(&nc.ctx)
	})
}

// loop runs fn's attempts on gd, which begin set up.
func (gd *Guard) loop(ctx context.Context, fn func(context.Context) error) error {
	if err := gd.Enter(ctx); err != nil {
		return err
	}
	if err := gd.attempt(ctx, fn); err != nil {
		return gd.retryLoop(ctx, fn, err)
	}
	return nil
}

// retryLoop retries fn's failed attempt, whose error is err, until an
// attempt succeeds or retrying stops. When what the Guard's verbs call
// between the attempts panics (the governor's log handler, on a retry
// budget running out or a breaker's change), it ends the call as attempt
// does: the call, whose first attempt was sent, is lost as panicked
// unless its outcome was recorded, and the panic goes on. It is apart
// from loop so that a call that succeeds at once pays nothing for it.
func (gd *Guard) retryLoop(ctx context.Context, fn func(context.Context) error, err error) error {
	returned := false
	defer gd.afterAttempt(&returned)
	err = gd.retryUntil(ctx, fn, err)
	returned = true
	return err
}

// retryUntil is retryLoop's loop.
func (gd *Guard) retryUntil(ctx context.Context, fn func(context.Context) error, err error) error {
	for {
		delay, rerr := gd.retryWithJitter()
		if rerr != nil {
			if ww, ok := rerr.(*WouldWaitError); ok {
				return ww // the hint is longer than the call may wait (WithMaxWait)
			}
			return err
		}
		if _, serr := gd.Backoff(ctx, delay); serr != nil {
			return gd.stopByContext(serr)
		}
		if err = gd.Enter(ctx); err != nil {
			return err
		}
		if err = gd.attempt(ctx, fn); err == nil {
			return nil
		}
	}
}

// attempt calls fn holding the slot Enter took, records its answer and
// gives the slot back: a success's first, since After records it at once;
// a failure's once After recorded it, so that a call waiting for the slot
// sees the pause a throttle's Retry-After set (a shared store's takes a
// round trip). When fn panics, or what After calls does (the governor's
// log handler), it gives the slot back and records the call as lost
// (LossPanicked); the panic goes on as it was, never recovered. It is its
// own function so that its defer is open-coded.
func (gd *Guard) attempt(ctx context.Context, fn func(context.Context) error) error {
	returned := false
	defer gd.afterAttempt(&returned)
	err := fn(ctx)
	if err == nil {
		gd.Release()
		gd.After(nil)
	} else {
		gd.After(err)
		gd.Release()
	}
	returned = true
	return err
}

// afterAttempt ends a call whose fn, or the record of its answer or of
// its retry, did not return (it panicked, or called runtime.Goexit) as
// EndPanicked does.
func (gd *Guard) afterAttempt(returned *bool) {
	if !*returned {
		gd.EndPanicked()
	}
}
