package cloudgotel

import (
	"context"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// Observer records a governor's events as metrics, and as events of the
// calls' spans; one from Instrument also reads the governor's live scopes
// as gauges. Give it to the governor with resilience.WithObserver. It is
// safe for concurrent use; the zero Observer is not usable, make one with
// Instrument. A nil *Observer (Instrument's when it fails) records
// nothing: a governor made with it runs, unobserved.
type Observer struct {
	attrs                                                    attrCache
	calls, throttles, retries, gaveUp, rejected, trips, lost metric.Int64Counter
	wait                                                     metric.Float64Histogram
	gauges                                                   *gauges // Instrument's; nil for NewObserver's
}

// waitBounds are the wait histogram's buckets, in seconds: from the
// milliseconds of a busy scope's pacing to a provider's longest pause.
var waitBounds = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// NewObserver makes an Observer of the governor's events only, on the
// meter provider of WithMeterProvider or the global one; its gauges are
// RegisterGauges's. It fails when the meter provider refuses an
// instrument.
//
// Deprecated: Instrument makes the Observer and its gauges in one call,
// on one meter provider, and reads the governor it is given to.
func NewObserver(opts ...Option) (*Observer, error) {
	c := newConfig(opts)
	return newObserver(&c)
}

// newObserver makes the event instruments of an Observer configured by c.
func newObserver(c *config) (*Observer, error) {
	o := &Observer{attrs: attrCache{c: c}}
	m := c.meter()
	for _, in := range []struct {
		p          *metric.Int64Counter
		name, unit string
		desc       string
	}{
		{&o.calls, "cloudg.calls", "{call}", "Calls sent to a provider: an attempt, an HTTP attempt or a listing's page; an AWS SDK operation once, its retries counted in cloudg.retries."},
		{&o.throttles, "cloudg.throttles", "{throttle}", "Attempts the provider answered with throttling."},
		{&o.retries, "cloudg.retries", "{retry}", "Retries sent."},
		{&o.gaveUp, "cloudg.gave_up", "{call}", "Calls that failed after their retries with the last attempt throttled."},
		{&o.rejected, "cloudg.rejected", "{call}", "Calls an open circuit breaker refused before sending."},
		{&o.trips, "cloudg.breaker.trips", "{trip}", "Circuit breakers opened, by why: throttling, errors, throttled for good, down."},
		{&o.lost, "cloudg.lost", "{call}", "Calls lost, by how: gave_up, skipped, failed, refused, cancelled, errored, panicked, denied."},
	} {
		var err error
		if *in.p, err = m.Int64Counter(in.name, metric.WithUnit(in.unit), metric.WithDescription(in.desc)); err != nil {
			return nil, err
		}
	}
	var err error
	o.wait, err = m.Float64Histogram("cloudg.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Waits for a rate token, by the bucket level that imposed them."),
		metric.WithExplicitBucketBoundaries(waitBounds...))
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Observe records ev: it counts calls, throttles, retries, give-ups,
// rejections, calls lost and breaker trips, records waits, and adds
// waits, throttles and retries to the call's span when it is recording.
func (o *Observer) Observe(ev observe.Event) {
	if o == nil {
		return
	}
	ctx := ev.Context
	if ctx == nil {
		ctx = context.Background()
	}
	switch ev.Kind {
	case observe.Call:
		o.calls.Add(ctx, 1, o.attrs.of(ev.Scope, "", "").add...)
	case observe.Throttle:
		a := o.attrs.of(ev.Scope, "", "")
		o.throttles.Add(ctx, 1, a.add...)
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			kv := a.set.ToSlice()
			if ev.HasHint {
				kv = append(kv, retryAfterKey.Float64(ev.Hint.Seconds()))
			}
			if ev.Err != nil {
				kv = append(kv, errorKey.String(errorText(ev.Err))) // an answer may hold any bytes
			}
			span.AddEvent("cloudg.throttle", trace.WithAttributes(kv...))
		}
	case observe.Retry:
		a := o.attrs.of(ev.Scope, "", "")
		o.retries.Add(ctx, 1, a.add...)
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("cloudg.retry", trace.WithAttributes(append(a.set.ToSlice(),
				retryKey.Int(ev.Retry), delayKey.Float64(ev.Wait.Seconds()))...))
		}
	case observe.Wait:
		a := o.attrs.of(ev.Scope, levelKey, ev.Level)
		o.wait.Record(ctx, ev.Wait.Seconds(), a.record...)
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("cloudg.wait", trace.WithAttributes(append(a.set.ToSlice(),
				waitKey.Float64(ev.Wait.Seconds()))...))
		}
	case observe.GaveUp:
		o.gaveUp.Add(ctx, 1, o.attrs.of(ev.Scope, reasonKey, ev.Reason).add...)
		o.lost.Add(ctx, 1, o.attrs.of(ev.Scope, lossKey, "gave_up").add...)
	case observe.Rejected:
		o.rejected.Add(ctx, 1, o.attrs.of(ev.Scope, "", "").add...)
		o.lost.Add(ctx, 1, o.attrs.of(ev.Scope, lossKey, "skipped").add...)
	case observe.Lost:
		o.lost.Add(ctx, 1, o.attrs.of(ev.Scope, lossKey, ev.Loss).add...)
	case observe.BreakerChange:
		if ev.To == state.Open {
			key := reasonKey
			if ev.Reason == "" {
				key = "" // a store's breaker that opened on its own
			}
			o.trips.Add(ctx, 1, o.attrs.of(ev.Scope, key, ev.Reason).add...)
		}
	}
}
