package cloudggcp

import (
	"context"

	"github.com/cloudg/cloudg/resilience"
)

// An Option changes how a listing, a retry option or the interceptor is
// governed. Options are values that the package only reads: one may be
// passed to any number of calls, from any goroutines. A nil Option is
// ignored.
type Option interface{ apply(*config) }

type config struct {
	gov     *resilience.Governor
	service string
	scopeOf ScopeFunc
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// governor returns the configured governor, or the process governor.
func (c *config) governor() *resilience.Governor {
	if c.gov != nil {
		return c.gov
	}
	return resilience.Default()
}

// WithGovernor governs with g instead of the process governor
// (resilience.Default).
func WithGovernor(g *resilience.Governor) Option {
	return optionFunc(func(c *config) { c.gov = g })
}

// WithService names the service of the interceptor's scopes ("compute",
// "pubsub"). By default the interceptor takes it from the connection's
// *.googleapis.com target, then from the RPC's proto package.
func WithService(name string) Option {
	return optionFunc(func(c *config) { c.service = name })
}

// A ScopeFunc returns the scope of one attempt of a unary RPC (method is the
// full name, "/google.cloud.asset.v1.AssetService/BatchGetAssetsHistory"),
// or of the opening of a stream (StreamClientInterceptor; req is nil, a
// stream's requests being sent once it is open), or false to let the
// interceptor resolve it. The interceptor calls it from
// every goroutine that makes a call, so it must be safe for concurrent
// use. A nil ScopeFunc resolves nothing: the interceptor resolves every
// scope itself.
type ScopeFunc func(ctx context.Context, method string, req any) (resilience.Scope, bool)

// WithScopeFunc makes the interceptor resolve scopes with f first.
func WithScopeFunc(f ScopeFunc) Option {
	return optionFunc(func(c *config) { c.scopeOf = f })
}
