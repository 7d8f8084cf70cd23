package sim

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Outcome is what the provider did with one request. The zero Outcome is
// OK.
type Outcome uint8

// Outcomes of a request.
const (
	OK        Outcome = iota
	Throttled         // rejected by the provider's bucket (RequestLimitExceeded)
	Failed            // a transient 500 or an outage's 503
)

// Provider is a simulated cloud API: a token bucket per action, refilled at
// the (possibly changing) true rate, shared with an invisible tenant, with
// latency, transient errors and outages. Its answers have the shapes the AWS
// SDK produces, so the SDK's retryers and the governor classify them as
// they would a real EC2 answer. It is safe for concurrent use. A Run makes
// the Provider of its scenario; the zero Provider is not one (Request
// panics on it).
type Provider struct {
	spec  *ProviderSpec
	clock Clock
	start time.Time
	seed  uint64
	rec   *recorder

	mu      sync.Mutex
	buckets map[string]*pbucket
	tenant  *tenantDraw
	first   map[string]time.Duration // each action's first request
}

// pbucket is the provider's bucket of one action.
type pbucket struct {
	tokens, rate, burst float64
	overflowed          float64       // refill lost to a full bucket so far
	at                  time.Duration // the time tokens was computed at
	changes             []Change      // still to apply, in time order
}

func newProvider(spec *ProviderSpec, actions []string, clock Clock, start time.Time, seed uint64, rec *recorder) *Provider {
	p := &Provider{spec: spec, clock: clock, start: start, seed: seed, rec: rec, buckets: map[string]*pbucket{}, tenant: spec.tenantFor(seed), first: map[string]time.Duration{}}
	for _, a := range actions {
		if _, ok := p.buckets[a]; ok {
			continue
		}
		p.buckets[a] = spec.newBucket(a, 0)
	}
	return p
}

// newBucket returns action's bucket, full, at t, under the changes due by
// then: a change at the start of the run is its limit from its first
// request (a smaller burst holds fewer tokens, none lost to it), as
// Scenario.fluid counts it.
func (p *ProviderSpec) newBucket(action string, t time.Duration) *pbucket {
	l := p.limitOf(action)
	b := &pbucket{tokens: l.Burst, rate: l.Rate, burst: l.Burst, at: t, changes: p.changesFor(action)}
	for len(b.changes) > 0 && b.changes[0].At <= t {
		c := b.changes[0]
		b.rate = c.Rate
		if c.Burst > 0 {
			b.burst = c.Burst
			b.tokens = math.Min(b.tokens, b.burst)
		}
		b.changes = b.changes[1:]
	}
	return b
}

// advance brings b to time t: refill net of what tenant takes of action's
// limit, and the limit changes due by then.
func (b *pbucket) advance(tenant *tenantDraw, action string, t time.Duration) {
	for b.at < t {
		next := t
		if len(b.changes) > 0 && b.changes[0].At < next {
			next = max(b.changes[0].At, b.at)
		}
		// The tenant's window edges and its walk's steps also split the
		// span.
		next = tenant.next(b.at, next)
		// The tenant takes its rate out of the refill, not out of the
		// tokens held (netRate, Scenario.fluid).
		net := math.Max(0, b.rate-tenant.rate(action, b.rate, b.at))
		filled := b.tokens + net*(next-b.at).Seconds()
		if filled > b.burst {
			b.overflowed += filled - b.burst
		}
		b.tokens = math.Max(0, math.Min(b.burst, filled))
		b.at = next
		for len(b.changes) > 0 && b.changes[0].At <= b.at {
			c := b.changes[0]
			b.rate = c.Rate
			if c.Burst > 0 {
				b.burst = c.Burst
				// The tokens above a smaller burst are lost to the
				// full bucket, as its refill is.
				b.overflowed += math.Max(0, b.tokens-b.burst)
				b.tokens = math.Min(b.tokens, b.burst)
			}
			b.changes = b.changes[1:]
		}
	}
}

// untilToken returns how long b, brought to t, takes to hold a token at
// its refill then (a second when it refills nothing), at most maxUntil.
func (b *pbucket) untilToken(tenant *tenantDraw, action string, t time.Duration) time.Duration {
	if net := b.rate - tenant.rate(action, b.rate, t); net > 0 {
		return time.Duration(math.Min(math.Max(0, 1-b.tokens)/net*float64(time.Second), float64(maxUntil)))
	}
	return time.Second
}

// maxUntil bounds untilToken: some 146 years, half of what a Duration
// holds, so that a refill too slow for one (a tenant taking all of the
// limit but 1e-12 rps) gives a hint that far off rather than a Duration
// that wrapped negative, and a wait added to it does not wrap either.
const maxUntil = time.Duration(1 << 62)

// left returns what the provider's buckets did not serve by t, summed over
// them: the tokens they hold at t (Result.Unused) and the refill they lost
// to being full (Result.Overflowed).
func (p *Provider) left(t time.Duration) (unused, overflowed float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for action, b := range p.buckets {
		b.advance(p.tenant, action, t)
		unused += b.tokens
		overflowed += b.overflowed
	}
	return unused, overflowed
}

// Request sends one request for action: call and attempt identify it, so
// that its latency and transient failure are the same draw whatever the
// strategy. It waits for the answer's latency on the clock and returns nil
// or the provider's error.
func (p *Provider) Request(ctx context.Context, action string, call, attempt int) error {
	t := p.clock.Now().Sub(p.start)
	r := newDraw(p.seed, uint64(call), uint64(attempt))
	latency := p.latency(r.float(), r.float())
	transient := r.float() < p.spec.TransientRate

	var err error
	outcome := OK
	p.mu.Lock()
	first, ok := p.first[action]
	if !ok {
		first = t
		p.first[action] = t
	}
	p.mu.Unlock()
	pauseEnd, paused := p.spec.paused(action, t, first)
	switch {
	case p.spec.inOutage(t):
		outcome = Failed
		err = newAPIError(503, "ServiceUnavailable", "Service Unavailable", nil)
	case p.spec.dead(action):
		outcome = Throttled
		err = throttle(time.Second, p.spec.RetryAfter)
	case paused:
		outcome = Throttled
		err = throttle(pauseEnd-t, true)
	default:
		p.mu.Lock()
		b := p.buckets[action]
		if b == nil {
			b = p.spec.newBucket(action, t)
			p.buckets[action] = b
		}
		b.advance(p.tenant, action, t)
		ok := b.tokens >= 1
		var hint time.Duration
		if ok {
			b.tokens--
		} else {
			hint = b.untilToken(p.tenant, action, t)
		}
		p.mu.Unlock()
		switch {
		case !ok:
			outcome = Throttled
			err = throttle(hint, p.spec.RetryAfter)
		case transient:
			outcome = Failed
			err = newAPIError(500, "InternalError", "An internal error has occurred", nil)
		}
	}
	p.rec.attempt(t, outcome)
	if serr := p.clock.Sleep(ctx, latency); serr != nil {
		return serr
	}
	return err
}

// throttle is the provider's throttling answer, with hint in its
// X-Amz-Retry-After (milliseconds) and Retry-After (seconds, rounded up)
// headers when withHint is set.
func throttle(hint time.Duration, withHint bool) *APIError {
	var h http.Header
	if withHint {
		ms := max(1, int64(math.Ceil(float64(hint)/float64(time.Millisecond))))
		h = http.Header{}
		h.Set("X-Amz-Retry-After", strconv.FormatInt(ms, 10))
		h.Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
	}
	return newAPIError(503, "RequestLimitExceeded", "Request limit exceeded.", h)
}

// latency draws a log-normal latency from two uniforms (Box-Muller).
func (p *Provider) latency(u1, u2 float64) time.Duration {
	med := float64(p.spec.LatencyMedian)
	if p.spec.LatencyP99 <= p.spec.LatencyMedian {
		return p.spec.LatencyMedian
	}
	sigma := math.Log(float64(p.spec.LatencyP99)/med) / 2.3263478740408408
	z := math.Sqrt(-2*math.Log(math.Max(u1, 1e-300))) * math.Cos(2*math.Pi*u2)
	d := med * math.Exp(sigma*z)
	return time.Duration(math.Min(d, 10*float64(p.spec.LatencyP99)))
}

// APIError is the provider's error answer, shaped as the AWS SDK returns
// one: a *smithyhttp.ResponseError (status, headers) around a
// *smithy.GenericAPIError (code, message). It also has Header(), the method
// the governor reads hints from, which the SDK's shapes lack (the AWS
// integration teaches the governor those shapes with an error reader).
// Each answer is an APIError of its own, which its methods only read:
// several goroutines may read one at once, as long as none changes its
// Header. Only the provider makes them: the zero APIError's methods but
// Unwrap panic.
type APIError struct {
	resp *smithyhttp.ResponseError
	api  *smithy.GenericAPIError
}

func newAPIError(status int, code, msg string, h http.Header) *APIError {
	if h == nil {
		h = http.Header{}
	}
	api := &smithy.GenericAPIError{Code: code, Message: msg, Fault: smithy.FaultServer}
	return &APIError{
		api: api,
		resp: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: h}},
			Err:      api,
		},
	}
}

func (e *APIError) Error() string {
	return "operation error: https response error StatusCode: " + strconv.Itoa(e.resp.HTTPStatusCode()) + ", " + e.api.Error()
}

// ErrorCode returns the provider's error code (RequestLimitExceeded).
func (e *APIError) ErrorCode() string { return e.api.Code }

// ErrorMessage returns the provider's message.
func (e *APIError) ErrorMessage() string { return e.api.Message }

// ErrorFault returns smithy.FaultServer.
func (e *APIError) ErrorFault() smithy.ErrorFault { return e.api.Fault }

// HTTPStatusCode returns the answer's status.
func (e *APIError) HTTPStatusCode() int { return e.resp.HTTPStatusCode() }

// Header returns the answer's headers.
func (e *APIError) Header() http.Header { return e.resp.Response.Header }

// Unwrap returns the *smithyhttp.ResponseError, which wraps the
// *smithy.GenericAPIError.
func (e *APIError) Unwrap() error { return e.resp }

// IsThrottle reports whether err is the provider's throttling answer.
func IsThrottle(err error) bool {
	e, ok := err.(*APIError)
	return ok && e.api.Code == "RequestLimitExceeded"
}

// randDraw is a small deterministic random stream (splitmix64) keyed by a seed,
// a call and an attempt.
type randDraw struct{ s uint64 }

func newDraw(seed, call, attempt uint64) *randDraw {
	d := &randDraw{s: seed*0x9E3779B97F4A7C15 ^ call*0xBF58476D1CE4E5B9 ^ attempt*0x94D049BB133111EB}
	d.next()
	return d
}

func (d *randDraw) next() uint64 {
	d.s += 0x9E3779B97F4A7C15
	z := d.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// float returns a uniform value in [0, 1).
func (d *randDraw) float() float64 { return float64(d.next()>>11) / (1 << 53) }
