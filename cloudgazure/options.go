package cloudgazure

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudg/cloudg/resilience"
)

// An Option configures the integration: the governor, the logger, and the
// Resource Graph helper's limits. Options are values that the package only
// reads: one may be passed to any number of calls, from any goroutines. A
// nil Option is ignored.
type Option interface{ apply(*config) }

type config struct {
	gov    *resilience.Governor // nil: resilience.Default() at each call
	logger *slog.Logger         // nil: slog.Default()
	limits QueryLimits

	// graph is GraphScope bound on graphGov, for the pages of one
	// QueryResources call (its config is the call's own).
	graph    *resilience.Bound
	graphGov *resilience.Governor
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithGovernor governs with g instead of the process governor
// (resilience.Default, looked up at each call).
func WithGovernor(g *resilience.Governor) Option {
	return optionFunc(func(c *config) { c.gov = g })
}

// WithLogger logs to l (at debug level: a client built without the
// governed options) instead of slog.Default().
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithQueryLimits sets how QueryResources retries a throttled page of a
// client that is not governed by this package's policies, while the azure
// provider is enabled.
func WithQueryLimits(l QueryLimits) Option {
	return optionFunc(func(c *config) { c.limits = l })
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

func (c *config) governor() *resilience.Governor {
	if c.gov != nil {
		return c.gov
	}
	return resilience.Default()
}

func (c *config) log() *slog.Logger {
	if c.logger != nil {
		return c.logger
	}
	return slog.Default()
}

// ClientOptions returns ARM client options that govern every HTTP attempt
// of a client built with them: a copy of base (nil: the zero options; base
// itself is never modified) with
//
//   - a per-call policy that resolves the request's scope, keeps the
//     request's state across azcore's retries and records its outcome;
//   - a per-retry policy around every attempt: breaker, deadline, count,
//     rate token (subscription, then resource provider), subscription
//     bulkhead slot, and on the answer AIMD, pauses, the retry budget and
//     the deadline;
//   - Retry set from the governor's Azure retry policy (max_retries,
//     base_delay_seconds, max_backoff_seconds); base's TryTimeout,
//     StatusCodes and ShouldRetry are kept. With a ShouldRetry, which
//     decides azcore's retries instead of the statuses, a retry is asked
//     of the Guard when azcore sends it, as with Policies; the
//     ShouldRetry is asked about each answer as the server sent it, with
//     the delay headers the per-retry policy hides from azcore.
//
// While the azure provider is disabled (ratelimit.enabled or
// ratelimit.azure.enabled false) the policies step aside: a request is
// sent as the client would send it without them, azcore retrying it with
// base's Retry (azcore's defaults when unset), or with the call's own
// policy.WithRetryOptions, not with the governor's retry policy.
//
// Any armxxx.NewXxxClient(sub, cred, ClientOptions(base)) is then governed.
// Options that already carry this package's policies are not governed twice,
// and a pipeline that carries them twice (Policies installed twice, or
// ClientOptions of a base whose per-retry policies hold Policies' per-retry
// policy) governs each request and attempt once: a policy of the package's
// after another lets the request or attempt through.
func ClientOptions(base *arm.ClientOptions, opts ...Option) *arm.ClientOptions {
	return clientOptions(base, newConfig(opts))
}

func clientOptions(base *arm.ClientOptions, cfg config) *arm.ClientOptions {
	var o arm.ClientOptions
	if base != nil {
		o = *base
	}
	if hasPolicies(o.PerCallPolicies) {
		return &o
	}
	own := o.Retry
	o.Retry = retryOptions(o.Retry, cfg.governor().Policy(Provider))
	g := newShared(cfg, &o.Retry)
	g.own = &own
	if f := o.Retry.ShouldRetry; f != nil {
		// The caller's ShouldRetry sees an answer as the server sent it.
		o.Retry.ShouldRetry = g.shouldRetry(f)
	}
	o.PerCallPolicies = appendPolicy(o.PerCallPolicies, perCallPolicy{g})
	o.PerRetryPolicies = appendPolicy(o.PerRetryPolicies, perRetryPolicy{g})
	return &o
}

// appendPolicy returns a new slice: the caller's backing array is never
// written to.
func appendPolicy(ps []policy.Policy, p policy.Policy) []policy.Policy {
	out := make([]policy.Policy, 0, len(ps)+1)
	return append(append(out, ps...), p)
}

func hasPolicies(ps []policy.Policy) bool {
	for _, p := range ps {
		if _, ok := p.(perCallPolicy); ok {
			return true
		}
	}
	return false
}

// RetryOptions returns azcore retry options from the governor's Azure
// retry policy: MaxRetries is max_retries (8; 0 becomes azcore's -1, no
// retries, since azcore reads 0 as its default of 3), RetryDelay is
// base_delay_seconds (0.5 s) and MaxRetryDelay is max_backoff_seconds
// (60 s). The request's deadline (deadline_seconds, 900 s) has no azcore
// field: the per-retry policy's Guard enforces it.
func RetryOptions(opts ...Option) policy.RetryOptions {
	c := newConfig(opts)
	return retryOptions(policy.RetryOptions{}, c.governor().Policy(Provider))
}

// retryOptions sets base's limits from p, a provider's resolved policy:
// one attempt fewer as retries.
func retryOptions(base policy.RetryOptions, p resilience.RetryPolicy) policy.RetryOptions {
	r := base
	retries := p.MaxAttempts - 1
	r.MaxRetries = int32(min(retries, 1<<30))
	if retries <= 0 {
		r.MaxRetries = -1
	}
	r.RetryDelay = p.BaseDelay
	if r.RetryDelay <= 0 {
		// The shortest delay: azcore reads 0 as its default (800 ms),
		// and sleeps a negative one as MaxRetryDelay (see longestSleep).
		r.RetryDelay = time.Nanosecond
	}
	r.MaxRetryDelay = p.MaxBackoff
	if r.MaxRetryDelay <= 0 {
		r.MaxRetryDelay = time.Second
	}
	return r
}

// Policies returns the per-call and the per-retry policy, for a pipeline
// this package does not build (an azcore data-plane client's
// policy.ClientOptions). Install both: PerCallPolicies gets perCall,
// PerRetryPolicies gets perRetry. Alone, the per-retry policy governs each
// attempt but cannot record a request's final outcome, and it sees the
// attempts' contexts, not the request's: under azcore's TryTimeout, which
// gives each attempt a context of its own and ends it after the attempt,
// it governs each attempt as a call of its own, bounded by that attempt's
// context (a retry is counted as a call, not as a retry, and charges no
// retry budget). With a TryTimeout, install both. The policies do not
// see the pipeline's retry options, so they cannot tell which answer
// azcore will retry: a retry is asked of the Guard when azcore sends it,
// and a refusal (an empty retry budget, the deadline, a wait past
// resilience.WithMaxWait) comes after azcore's backoff rather than before.
// Nor can they give the pipeline's ShouldRetry, which they do not see, the
// delay headers they hide from azcore on an answer azcore retries: it is
// asked about that answer without them (ClientOptions wraps its base's).
func Policies(opts ...Option) (perCall, perRetry policy.Policy) {
	g := newShared(newConfig(opts), nil)
	return perCallPolicy{g}, perRetryPolicy{g}
}

// Build builds a client with ClientOptions(base, opts...). When newClient
// rejects those options (returns an error), it logs the error at debug
// level and builds the client plainly with base, as it was given: an old or
// unusual client still works, ungoverned.
//
//	c, err := cloudgazure.Build(func(o *arm.ClientOptions) (*armnetwork.VirtualNetworksClient, error) {
//		return armnetwork.NewVirtualNetworksClient(sub, cred, o)
//	}, nil)
func Build[C any](newClient func(*arm.ClientOptions) (C, error), base *arm.ClientOptions, opts ...Option) (C, error) {
	c, _, err := build(newClient, base, newConfig(opts))
	return c, err
}

// NewSubscriptionClient builds a subscription-scoped ARM client, such as
// armnetwork.NewVirtualNetworksClient, governed as Build does.
func NewSubscriptionClient[C any](ctor func(string, azcore.TokenCredential, *arm.ClientOptions) (C, error),
	subscriptionID string, cred azcore.TokenCredential, base *arm.ClientOptions, opts ...Option) (C, error) {
	return Build(func(o *arm.ClientOptions) (C, error) { return ctor(subscriptionID, cred, o) }, base, opts...)
}

// NewTenantClient builds a client without a subscription, such as
// armsubscriptions.NewClient, governed as Build does.
func NewTenantClient[C any](ctor func(azcore.TokenCredential, *arm.ClientOptions) (C, error),
	cred azcore.TokenCredential, base *arm.ClientOptions, opts ...Option) (C, error) {
	return Build(func(o *arm.ClientOptions) (C, error) { return ctor(cred, o) }, base, opts...)
}

func build[C any](newClient func(*arm.ClientOptions) (C, error), base *arm.ClientOptions, cfg config) (C, bool, error) {
	c, err := newClient(clientOptions(base, cfg))
	if err == nil {
		return c, true, nil
	}
	cfg.log().LogAttrs(context.Background(), slog.LevelDebug,
		"cloudgazure: client rejected the governed options; building it without them",
		slog.String("error", err.Error()))
	c, err = newClient(base)
	return c, false, err
}

// defaultStatusCodes are the statuses azcore retries by default.
var defaultStatusCodes = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}
