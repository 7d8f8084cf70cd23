package cloudghttp

import "github.com/cloudg/cloudg/resilience"

// An Option configures a Transport: NewTransport takes them. An Option is
// a value that changes nothing once made: any number of goroutines may
// give the same one to NewTransport at once. A nil Option is ignored.
type Option interface{ apply(*config) }

type config struct {
	gov       *resilience.Governor // nil: resilience.Default() at each request
	policy    resilience.RetryPolicy
	begin     []resilience.CallOption // WithPolicy(policy), when set
	unsafeToo bool                    // retry transient answers of non-idempotent requests
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
// (resilience.Default, looked up at each request).
func WithGovernor(g *resilience.Governor) Option {
	return optionFunc(func(c *config) { c.gov = g })
}

// WithPolicy bounds the Transport's retries of each request with p: its
// attempts, the backoff's base and cap, the deadline, the retry budget,
// and whether transient answers are retried. Zero fields take the
// provider's settings (max_retries + 1 attempts, base_delay_seconds,
// max_backoff_seconds, deadline_seconds); MaxAttempts 1 turns the
// Transport's retries off, but for a provider that waits for its
// breakers' verdicts (breaker_wait): there a request that failed on a
// transient answer waits for the verdict and is sent again with its
// attempts renewed, within its deadline, as every call of that provider
// is (see resilience.ProviderConfig's BreakerWait).
func WithPolicy(p resilience.RetryPolicy) Option {
	return optionFunc(func(c *config) {
		c.policy = p
		c.begin = []resilience.CallOption{resilience.WithPolicy(p)}
	})
}

// WithRetryNonIdempotent lets the Transport retry a transient answer (a
// 5xx, a reset connection) or a 503 to a request whose method is not
// idempotent (POST, PATCH) and that carries no Idempotency-Key header. By
// default such a request is retried only after an answer that says the
// server did not act on it (a 429, or a 408, the request not received
// whole; not a 503, which a gateway also answers for an upstream that
// failed after it took the request). A request whose body cannot be
// rewound (no GetBody) is never sent twice.
func WithRetryNonIdempotent() Option {
	return optionFunc(func(c *config) { c.unsafeToo = true })
}
