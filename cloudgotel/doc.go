// Package cloudgotel records a cloudg governor's events and state as
// OpenTelemetry metrics, and its waits, throttles and retries as events
// of the calls' spans.
//
// An Observer (NewObserver) is given to the governor with
// resilience.WithObserver; RegisterGauges adds observable gauges read from
// the governor's live scopes at each collection:
//
//	obs, err := cloudgotel.NewObserver()
//	gov, err := resilience.NewGovernor(cfg, resilience.WithObserver(obs))
//	reg, err := cloudgotel.RegisterGauges(gov)
//	defer reg.Unregister()
//
// # Instruments
//
// These names are a contract: dashboards and alerts are built on them, and
// they do not change.
//
//	cloudg.calls            counter    {call}       attempts sent (a listing's pages each count)
//	cloudg.throttles        counter    {throttle}   attempts the provider throttled
//	cloudg.retries          counter    {retry}      retries sent
//	cloudg.gave_up          counter    {call}       calls lost to throttling after their retries (cloudg.reason)
//	cloudg.rejected         counter    {call}       calls an open breaker refused before sending
//	cloudg.breaker.trips    counter    {trip}       breakers opened
//	cloudg.wait.duration    histogram  s            waits for a rate token (cloudg.level: the slowest bucket)
//	cloudg.rate             gauge      {request}/s  a scope's adaptive rate
//	cloudg.rate.ceiling     gauge      {request}/s  its configured ceiling
//	cloudg.breaker.state    gauge                   0 closed, 1 half-open, 2 open
//	cloudg.inflight         gauge      {call}       calls holding a slot of an account's bulkhead
//	cloudg.retry_budget     gauge      {token}      tokens left in a provider's retry budget
//
// Through the OpenTelemetry Prometheus exporter they read cloudg_calls_total,
// cloudg_wait_duration_seconds, cloudg_rate_per_second and so on.
//
// # Attributes
//
// A scope's parts are the attributes of the semantic conventions (v1.38.0,
// the last to name the RPC service on its own): cloud.provider,
// cloud.account.id, cloud.region, rpc.service and rpc.method, each only
// when the part is set. cloudg.inflight has the provider and account only,
// and cloudg.retry_budget the provider only, since those are what they
// belong to. WithoutAccount and WithoutOperation drop cloud.account.id or
// rpc.method to bound the number of series of an estate of thousands of
// accounts; the gauges of the scopes that then share their attributes are
// added up (rates, ceilings, calls in flight) or give their worst
// (breaker state).
//
// # Spans
//
// When the call's context carries a recording span, its waits
// (cloudg.wait), throttles (cloudg.throttle) and retries (cloudg.retry,
// with their delay) are added to it as events.
package cloudgotel
