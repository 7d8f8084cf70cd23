package resilience

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/state"
)

// WithMaxWait returns a context under which a governed call waits at most
// d to be admitted (for its breaker's verdict, a rate token or a pause,
// the Retry-After of a retry, a concurrency slot) before each attempt it
// sends. A call that would wait longer is refused at once, before sending,
// with a *WouldWaitError (or, for an open breaker, a *CircuitOpenError)
// whose RetryAfter says when the scope can go, and that classifies as
// Throttled: a scheduler requeues the task and gives its worker to
// another scope instead of leaving it blocked. The call is recorded as
// lost (LossRefused, or LossSkipped for the breaker), not as a give-up. A
// d of 0 or less admits only a call that can go at once. The bound holds
// through every SDK integration, whose hooks see the context of the SDK
// call.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	b := *bindingOf(ctx)
	b.maxWait, b.bounded = max(d, 0), true
	return context.WithValue(ctx, bindingKey{}, &b)
}

// Delay reports, changing nothing, how long a call to scope would wait now
// before it could be sent, and which check binds: nil when it can go at
// once; ErrCircuitOpen when its breaker is open, or half-open with its
// probe out (the wait is until the breaker lets a probe through);
// ErrNoToken when a rate token of the provider, account or leaf bucket, or
// a pause of one, holds it (the wait is until the token is usable);
// ErrNoSlot when the account's concurrency cap is full (the wait is not
// known, and 0). The breaker binds first, then the tokens, then the slot,
// as Enter checks them. A scope the governor holds no state for can go at
// once, and so can any call of a disabled provider. A scheduler asks Delay
// to give a worker only work whose scope can go (see the package's doc on
// structuring a scan); the answer may be stale by the time the call is
// made, which then waits as any call does.
func (g *Governor) Delay(scope Scope) (time.Duration, error) {
	if scope.Provider == "" {
		return 0, nil
	}
	p := g.existing(scope.Provider)
	if p == nil || !p.set.enabled {
		return 0, nil
	}
	e, acct := p.scopes.peek(scope)
	now := g.now()
	if e != nil {
		if s := e.breaker.Snapshot(now); s.State != state.Closed && s.Wait > 0 {
			return s.Wait, ErrCircuitOpen
		}
	}
	var w time.Duration
	if acct != nil {
		w = max(tokenWait(acct.global, now), tokenWait(acct.bucket, now))
	} else {
		w = tokenWait(p.scopes.global, now)
	}
	if e != nil {
		w = max(w, tokenWait(e.leaf, now))
	}
	if w > 0 {
		return w, ErrNoToken
	}
	if acct != nil {
		if inUse, _ := acct.bulkhead.InUse(); inUse >= acct.bulkhead.Limit() {
			return 0, ErrNoSlot
		}
	}
	return 0, nil
}

// tokenWait is how long a caller arriving at now would wait for a token of
// b (nil: none), read from its snapshot.
func tokenWait(b state.Bucket, now time.Duration) time.Duration {
	if b == nil {
		return 0
	}
	s := b.Snapshot(now)
	w := s.Paused
	if s.Tokens < 1 && s.Rate > 0 {
		w += time.Duration((1 - s.Tokens) / s.Rate * float64(time.Second))
	}
	return w
}
