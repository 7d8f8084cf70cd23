package resilience

import "time"

// RetryPolicy bounds the retries of one call. Each zero field takes the
// provider's setting (max_retries, base_delay_seconds, max_backoff_seconds,
// deadline_seconds), so the zero RetryPolicy is the provider's policy.
// Governor.Policy returns a provider's policy with every field filled in.
// A RetryPolicy is a value: WithPolicy keeps a copy, and several
// goroutines may share one.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts of the call, the first included: 1
	// tries once, without retries. 0 means the provider's max_retries + 1.
	// A provider that waits for its breakers' verdicts (breaker_wait)
	// renews them: a call whose attempts ran out on transient answers
	// waits for the verdict and tries again, within its deadline.
	MaxAttempts int
	// BaseDelay is the shortest backoff, and the start of the jitter.
	BaseDelay time.Duration
	// MaxBackoff caps each backoff (a provider's Retry-After may still
	// make a backoff longer).
	MaxBackoff time.Duration
	// Deadline bounds the whole call, waits and retries included. The
	// context's deadline, when sooner, bounds it too.
	Deadline time.Duration
	// SkipBudget makes the call's retries free of the provider's retry
	// budget. By default every retry after the first two of a call costs a
	// token of it.
	SkipBudget bool
	// ThrottlingOnly retries throttling answers only. By default transient
	// errors are retried too.
	ThrottlingOnly bool
}

// freeRetries is how many retries of each call cost no budget.
const freeRetries = 2

// retryLimits are the bounds of one call: a RetryPolicy resolved against
// its provider's settings, times as durations. A provider's own settings
// are retryLimits too.
type retryLimits struct {
	attempts   int // the first attempt included; at least 1
	base       time.Duration
	maxBackoff time.Duration
	deadline   time.Duration
	useBudget  bool
	transient  bool // transient errors are retried
}

// resolve fills p's zero fields from the provider's limits d.
func (p *RetryPolicy) resolve(d retryLimits) retryLimits {
	if p == nil {
		return d
	}
	out := d
	if p.MaxAttempts > 0 {
		out.attempts = p.MaxAttempts
	}
	if p.BaseDelay > 0 {
		out.base = min(p.BaseDelay, maxDuration)
	}
	if p.MaxBackoff > 0 {
		out.maxBackoff = min(p.MaxBackoff, maxDuration)
	}
	if p.Deadline > 0 {
		out.deadline = min(p.Deadline, maxDuration)
	}
	out.useBudget = !p.SkipBudget
	out.transient = !p.ThrottlingOnly
	return out
}

// policy returns the limits as a RetryPolicy with every field set.
func (l retryLimits) policy() RetryPolicy {
	return RetryPolicy{
		MaxAttempts:    l.attempts,
		BaseDelay:      l.base,
		MaxBackoff:     l.maxBackoff,
		Deadline:       l.deadline,
		SkipBudget:     !l.useBudget,
		ThrottlingOnly: !l.transient,
	}
}

// maxDuration bounds every configured time (about 36 years), so that
// adding one to a clock reading cannot overflow: "a very long time" stays
// very long instead of wrapping negative.
const maxDuration = time.Duration(1 << 60)

// backoff returns the next decorrelated-jitter sleep after prev: uniform
// in [base, 3*prev), capped at maxBackoff.
func (g *Governor) backoff(prev time.Duration, l *retryLimits) time.Duration {
	if prev == 0 {
		prev = l.base
	}
	hi := max(3*prev, l.base)
	d := l.base + time.Duration(g.random()*float64(hi-l.base))
	return min(d, l.maxBackoff)
}
