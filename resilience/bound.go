package resilience

import (
	"context"
	"sync/atomic"
)

// Bound is a scope resolved once: a handle to its provider and its state
// in the governor, so that a program calling one scope many times (a
// paginator, a worker pool on one API) does not look the scope up on every
// call. Its Do and Begin are Do and Governor.Begin for the scope, without
// the lookup; it follows reconfigurations and reclamation on its own. A
// Bound is safe for concurrent use. The zero Bound is not usable: it
// names no governor and no scope, and its Do and Begin panic, saying so.
// Make one with Governor.Bind.
type Bound struct {
	g     *Governor
	scope Scope
	at    atomic.Pointer[boundAt]
}

// boundAt is what a Bound resolved, and when.
type boundAt struct {
	gen uint64 // the governor's generation at the time
	p   *provider
	e   *scopeEntry // nil when the provider is disabled
}

// Bind resolves scope once. It fails only for a scope without a provider.
func (g *Governor) Bind(scope Scope) (*Bound, error) {
	if scope.Provider == "" {
		return nil, ErrNoProvider
	}
	return &Bound{g: g, scope: scope}, nil
}

// Scope returns the bound scope.
func (b *Bound) Scope() Scope { return b.scope }

// resolved returns the scope's provider and entry, resolving them again
// after a reconfiguration, a Reset, or the reclamation of the entry.
func (b *Bound) resolved() *boundAt {
	at := b.at.Load()
	if at != nil && at.gen == b.g.gen.Load() && (at.e == nil || !at.e.flags.dead()) {
		return at
	}
	if b.g == nil {
		panic("resilience: Do or Begin of a zero Bound; make one with Governor.Bind")
	}
	gen := b.g.gen.Load()
	p := b.g.provider(b.scope.Provider)
	na := &boundAt{gen: gen, p: p}
	if p.set.enabled {
		na.p, na.e = b.g.resolve(b.scope) // the provider, read again with the entry
		if !na.p.set.enabled {
			na.e = nil // disabled meanwhile
		}
	}
	b.at.Store(na)
	return na
}

// Do is Do for the bound scope: fn is called under the scope's breaker,
// rate limits, bulkhead and retry policy. WithPolicy among opts bounds the
// retries and WithNestedCalls gives fn a context carrying the call; other
// options are ignored. It is safe for concurrent use and
// does not allocate on the success path.
func (b *Bound) Do(ctx context.Context, fn func(context.Context) error, opts ...CallOption) error {
	if fn == nil {
		return ErrNilFunc
	}
	_, rp, nest := pickOptions(opts)
	at := b.resolved()
	if at.e == nil {
		b.g.admitUngoverned(ctx, b.scope)
		return fn(ctx)
	}
	if nest {
		nc := new(nestingCall)
		nc.gd.beginAt(ctx, b.g, b.scope, at.p, at.e, rp)
		return nc.loop(ctx, fn)
	}
	var gd Guard
	gd.beginAt(ctx, b.g, b.scope, at.p, at.e, rp)
	return gd.loop(ctx, fn)
}

// Begin is Governor.Begin for the bound scope.
func (b *Bound) Begin(ctx context.Context, opts ...CallOption) (*Guard, error) {
	_, rp, _ := pickOptions(opts)
	at := b.resolved()
	gd := new(Guard)
	if at.e == nil {
		gd.g, gd.p, gd.scope, gd.ctx, gd.rp = b.g, at.p, b.scope, ctx, rp
		b.g.admitUngoverned(ctx, b.scope)
		return gd, nil
	}
	gd.beginAt(ctx, b.g, b.scope, at.p, at.e, rp)
	gd.orphan = watchOrphan(gd)
	return gd, nil
}
