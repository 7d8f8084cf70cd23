package resilience

import (
	"context"
	"time"
)

// NoRetries as RetryPolicy.MaxRetries makes a call try once.
const NoRetries = -1

// RetryPolicy bounds the retries of one call. Zero fields fall back to the
// provider's settings (max_retries, base_delay_seconds,
// max_backoff_seconds, deadline_seconds).
type RetryPolicy struct {
	// MaxRetries is the number of retries after the first attempt;
	// NoRetries (any negative value) means none; 0 means the provider's.
	MaxRetries int
	// BaseDelay is the shortest backoff, and the start of the jitter.
	BaseDelay time.Duration
	// MaxBackoff caps each backoff (a provider's Retry-After may still
	// make a backoff longer).
	MaxBackoff time.Duration
	// Deadline bounds the whole call, waits and retries included.
	Deadline time.Duration
	// UseBudget: whether the call's retries draw on the provider's retry
	// budget (every retry after the first two costs a token); nil means
	// true. new(false) makes them free of it.
	UseBudget *bool
	// RetryTransient: whether transient errors are retried; nil means
	// true. new(false) retries throttling only.
	RetryTransient *bool
}

// policy is a RetryPolicy resolved against a provider's settings, in
// governor time.
type policy struct {
	maxRetries int
	base, cap  int64
	deadline   int64
	useBudget  bool
	transient  bool
}

func (p *RetryPolicy) resolve(r retrySettings) policy {
	out := policy{
		maxRetries: r.maxRetries,
		base:       int64(r.baseDelay),
		cap:        int64(r.maxBackoff),
		deadline:   int64(r.deadline),
		useBudget:  true,
		transient:  true,
	}
	if p == nil {
		return out
	}
	switch {
	case p.MaxRetries < 0:
		out.maxRetries = 0
	case p.MaxRetries > 0:
		out.maxRetries = p.MaxRetries
	}
	if p.BaseDelay > 0 {
		out.base = int64(min(p.BaseDelay, maxDuration))
	}
	if p.MaxBackoff > 0 {
		out.cap = int64(min(p.MaxBackoff, maxDuration))
	}
	if p.Deadline > 0 {
		out.deadline = int64(min(p.Deadline, maxDuration))
	}
	if p.UseBudget != nil {
		out.useBudget = *p.UseBudget
	}
	if p.RetryTransient != nil {
		out.transient = *p.RetryTransient
	}
	return out
}

// A CallOption changes how one call is governed.
type CallOption interface{ callOption() }

type governorOption struct{ g *Governor }

func (governorOption) callOption() {}

// WithGovernor governs the call with g instead of the process governor.
func WithGovernor(g *Governor) CallOption { return governorOption{g} }

type policyOption struct{ p *RetryPolicy }

func (policyOption) callOption() {}

// WithPolicy bounds the call's retries with p. Make the option once and
// reuse it: each WithPolicy call allocates.
func WithPolicy(p RetryPolicy) CallOption { return policyOption{&p} }

// Call calls fn under scope's circuit breaker, rate limits, bulkhead and
// retry policy, and returns fn's result:
//
//  1. the breaker: open, and a *CircuitOpenError returns at once;
//  2. the deadline: spent, and a *DeadlineExceededError (or the last error);
//  3. a token from the provider, account and leaf buckets, waiting for the
//     slowest (a wait that would overrun the deadline ends the call);
//  4. a bulkhead slot of the provider x account;
//  5. fn;
//  6. on error: Fatal returns at once; Throttled halves the scope's rate
//     and pauses it for the provider's Retry-After; Throttled and Transient
//     back off (decorrelated jitter, never shorter than Retry-After) and go
//     to 1 while retries, deadline and retry budget allow. When retrying
//     stops, the caller gets fn's error as it was, and the breaker counts a
//     failure.
//
// Every step is counted in the governor's stats and in the Stats bound to
// ctx; give-ups go to the ledger bound to ctx. When the provider is
// disabled, fn is called once, directly. Call is safe for concurrent use
// and does not allocate on the success path.
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
// decorator form.
func Wrap[T any](scope Scope, fn func(context.Context) (T, error), opts ...CallOption) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) { return Call(ctx, scope, fn, opts...) }
}

// WrapArg returns fn governed as Call governs it, with the scope computed
// from the argument of each call.
func WrapArg[A, T any](scopeOf func(A) Scope, fn func(context.Context, A) (T, error), opts ...CallOption) func(context.Context, A) (T, error) {
	return func(ctx context.Context, a A) (T, error) {
		return Call(ctx, scopeOf(a), func(ctx context.Context) (T, error) { return fn(ctx, a) }, opts...)
	}
}

func do(ctx context.Context, scope Scope, fn func(context.Context) error, opts []CallOption) error {
	// A type switch rather than an apply method: a call through the
	// interface would move the options to the heap on every call.
	var g *Governor
	var rp *RetryPolicy
	for _, o := range opts {
		switch o := o.(type) {
		case governorOption:
			g = o.g
		case policyOption:
			rp = o.p
		}
	}
	if g == nil {
		g = Default()
	}
	if scope.Provider == "" {
		return ErrNoProvider
	}
	ps := g.provider(scope.Provider)
	if !ps.set.enabled {
		return fn(ctx)
	}
	now := g.now()
	var t tracker
	t.init(g, ps, ctx, scope, now)
	defer t.end()

	// The policy and the deadline are resolved only when a call waits or
	// fails: the common call neither waits nor fails.
	b := bounds{g: g, ctx: ctx, rp: rp, set: ps.set.retry, start: now}
	var prevSleep int64
	var lastErr error // the provider error of the previous attempt, if any
	var lastKind Kind
	for {
		if lastErr != nil {
			// A retry: every way it can stop before it is sent is the end
			// of a call that failed with lastErr.
			if err := t.admit(now, lastErr); err != nil {
				t.failed(now, lastKind, lastErr)
				return err
			}
			if ctx.Err() != nil {
				return ctxError(ctx.Err(), lastErr)
			}
			if now >= b.get().limit {
				t.failed(now, lastKind, lastErr)
				return lastErr
			}
			if stopped, err := t.wait(ctx, now, &b, lastErr); err != nil {
				if stopped {
					t.failed(now, lastKind, lastErr)
				}
				return err
			}
			t.countRetry()
		} else {
			if err := t.admit(now, nil); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return b.spent(scope)
			}
			if _, err := t.wait(ctx, now, &b, nil); err != nil {
				return err
			}
		}
		if err := t.acquire(ctx); err != nil {
			return ctxError(err, lastErr)
		}
		t.count()
		err := fn(ctx)
		t.release()
		if err == nil {
			t.succeeded()
			return nil
		}
		now = g.now()
		if ctx.Err() != nil {
			return err // the caller gave up; nothing to learn
		}
		pol := &b.get().pol
		if prevSleep == 0 {
			prevSleep = pol.base
		}
		f := inspect(err)
		kind, known := f.decide()
		if !known && mentionsThrottling(err.Error()) {
			kind = Throttled
		}
		hint, hasHint := f.hint()
		switch kind {
		case Fatal:
			if f.answer && !f.hasOwn {
				t.proved()
			}
			return err
		case Throttled:
			t.throttled(now, err, hint, hasHint)
		case Transient:
			t.transient(err)
			if !pol.transient {
				t.failed(now, kind, err)
				return err
			}
		}
		if t.retries >= pol.maxRetries {
			t.failed(now, kind, err)
			return err
		}
		delay := g.backoff(prevSleep, pol.base, pol.cap)
		if hasHint {
			delay = max(delay, int64(capPause(hint)))
		}
		if now+delay > b.limit {
			t.failed(now, kind, err)
			return err
		}
		if !t.payRetry(pol.useBudget) {
			// The budget, not the service, stopped the call: no breaker
			// failure; a give-up when it was throttled.
			if kind == Throttled {
				t.gaveUp(err)
			} else {
				t.recordErr(err)
			}
			return err
		}
		if serr := g.sleep(ctx, delay); serr != nil {
			return ctxError(serr, err)
		}
		prevSleep = delay
		lastErr, lastKind = err, kind
		now = g.now()
	}
}

// bounds are a call's retry policy and deadline, resolved on first use.
type bounds struct {
	g     *Governor
	ctx   context.Context
	rp    *RetryPolicy
	set   retrySettings
	start int64

	resolved bool
	pol      policy
	limit    int64 // the deadline in governor time: the policy's or the context's
	isCtx    bool  // the context's deadline is the binding one
}

func (b *bounds) get() *bounds {
	if !b.resolved {
		b.resolved = true
		b.pol = b.rp.resolve(b.set)
		b.limit = b.start + b.pol.deadline
		if cl, ok := b.g.ctxLimit(b.ctx, b.start); ok && cl < b.limit {
			b.limit, b.isCtx = cl, true
		}
	}
	return b
}

// spent is the error of a call whose context ended before its first
// attempt: the context's error if it was cancelled, a
// *DeadlineExceededError (that is also context.DeadlineExceeded) if its
// deadline passed.
func (b *bounds) spent(scope Scope) error {
	b.get()
	err := b.ctx.Err()
	if err != nil && (!b.isCtx || err != context.DeadlineExceeded) {
		return err
	}
	de := &DeadlineExceededError{Scope: scope}
	if b.isCtx {
		de.Err = context.DeadlineExceeded
	}
	return de
}

// backoff returns the next decorrelated-jitter sleep: uniform in
// [base, 3*prev), capped.
func (g *Governor) backoff(prev, base, cap int64) int64 {
	hi := max(3*prev, base)
	d := base + int64(g.random()*float64(hi-base))
	return min(d, cap)
}

// hint returns the provider's Retry-After for the error the facts describe.
func (f *facts) hint() (time.Duration, bool) {
	if f.header != nil {
		if d, ok := headerRetryAfter(f.header, f.status, time.Now()); ok {
			return d, true
		}
	}
	if f.hasRA {
		return max(0, f.retryAfter), true
	}
	return 0, false
}
