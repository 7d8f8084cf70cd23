package main

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// apiError is an SDK-shaped error: the governor reads its code, status and
// Retry-After header through the ErrorCode, HTTPStatusCode and Header
// methods, as it reads the cloud SDKs' errors.
type apiError struct {
	code   string
	status int
	header http.Header
}

func (e *apiError) Error() string       { return e.code + " (HTTP " + strconv.Itoa(e.status) + ")" }
func (e *apiError) ErrorCode() string   { return e.code }
func (e *apiError) HTTPStatusCode() int { return e.status }
func (e *apiError) Header() http.Header { return e.header }

// limit is how the fake provider treats one scope's calls: its true rate
// (the governor's ceiling may be above it), the Retry-After it answers a
// throttle with, and a time until which the service is down.
type limit struct {
	rps        float64
	retryAfter time.Duration // 0: no hint
	latency    time.Duration // 0: 15 ms
	downFor    time.Duration // from the provider's start; 0: never down
}

// fakeCloud answers calls in process, as a provider's API would: within
// each scope's true rate a call succeeds after a short latency; beyond it
// the call is throttled in the provider's own words; a service that is
// down answers 503. It is safe for concurrent use.
type fakeCloud struct {
	clock  resilience.Clock // the governor's: the fake's time is its time
	start  time.Time
	limits map[resilience.Scope]limit

	mu      sync.Mutex
	buckets map[resilience.Scope]*fakeBucket
}

// fakeBucket is the provider's own token bucket for a scope, a burst of
// one second.
type fakeBucket struct {
	tokens float64
	last   time.Time
}

func newFakeCloud(limits map[resilience.Scope]limit, clock resilience.Clock) *fakeCloud {
	return &fakeCloud{clock: clock, start: clock.Now(), limits: limits, buckets: map[resilience.Scope]*fakeBucket{}}
}

// call is one API call to sc.
func (f *fakeCloud) call(ctx context.Context, sc resilience.Scope) error {
	l := f.limits[sc]
	now := f.clock.Now()
	if l.downFor > 0 && now.Sub(f.start) < l.downFor {
		return &apiError{code: "ServiceUnavailable", status: 503}
	}
	if !f.take(sc, l, now) {
		return throttled(sc.Provider, l.retryAfter)
	}
	// The provider's latency, so that calls are seen in flight.
	return f.clock.Sleep(ctx, cmp.Or(l.latency, 15*time.Millisecond))
}

// take takes one of the scope's tokens, if the provider has one.
func (f *fakeCloud) take(sc resilience.Scope, l limit, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.buckets[sc]
	if b == nil {
		b = &fakeBucket{tokens: l.rps, last: now}
		f.buckets[sc] = b
	}
	b.tokens = min(l.rps, b.tokens+now.Sub(b.last).Seconds()*l.rps)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// throttled is the provider's throttling answer, with a Retry-After header
// when hint is set.
func throttled(provider string, hint time.Duration) error {
	e := &apiError{code: "Throttling", status: 400}
	switch provider {
	case "gcp":
		e.code, e.status = "RESOURCE_EXHAUSTED", 429
	case "azure":
		e.code, e.status = "TooManyRequests", 429
	}
	if hint > 0 {
		e.header = http.Header{"Retry-After": {strconv.Itoa(int(hint.Seconds()))}}
	}
	return e
}
