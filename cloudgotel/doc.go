// Package cloudgotel records a cloudg governor's events and state as
// OpenTelemetry metrics, and its waits, throttles and retries as events
// of the calls' spans.
//
// Instrument makes it all in one call, on one meter provider: the
// Observer of the governor's events, and the observable gauges (some of
// them up-down counters, below) read from the live scopes of the
// governor made with it (resilience.WithObserver attaches the governor
// to the Observer when it is made):
//
//	obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(mp))
//	gov, err := resilience.NewGovernor(cfg, resilience.WithObserver(obs))
//	defer obs.Unregister()
//
// The gauges read, and keep, every governor made with the Observer until
// Observer.Detach or Unregister: detach a governor the program is done
// with (one made for a job, one another replaced), whose scopes would
// otherwise be added up with those of the next. The Observers of
// Instrument on one meter provider share one callback, which reads the
// governors of them all, so that their series alike are added up (and a
// governor attached to two alike read once) rather than observed twice,
// of which a collection would keep one: those whose meter providers give
// the same meter, as a value wrapping a provider gives its meters, and
// the global provider of before otel.SetMeterProvider the meters of the
// provider set. Unregister each Observer when done with its meter
// provider: until the last one is, or the program lets go of the
// provider and the Observers, the provider keeps the callback, which
// reads their governors.
//
// NewObserver and RegisterGauges, the same in two phases (the observer
// before the governor, the gauges after it), are deprecated.
//
// # Instruments
//
// These names are a contract: dashboards and alerts are built on them, and
// they do not change.
//
//	cloudg.calls                 counter    {call}       calls sent: an attempt, an HTTP attempt, a page; an AWS SDK operation once, its retries in cloudg.retries
//	cloudg.throttles             counter    {throttle}   attempts the provider throttled
//	cloudg.retries               counter    {retry}      retries sent
//	cloudg.gave_up               counter    {call}       calls lost to throttling after their retries (cloudg.reason)
//	cloudg.rejected              counter    {call}       calls an open breaker refused before sending
//	cloudg.lost                  counter    {call}       calls lost, by cloudg.loss: gave_up, skipped, failed, refused, cancelled, errored, panicked, denied
//	cloudg.breaker.trips         counter    {trip}       breakers opened, by cloudg.reason: throttling, errors, throttled for good, down
//	cloudg.wait.duration         histogram  s            waits for a rate token (cloudg.level: the slowest bucket)
//	cloudg.rate                  up-down    {request}/s  a scope's adaptive rate
//	cloudg.rate.ceiling          up-down    {request}/s  its configured ceiling
//	cloudg.breaker.state         gauge                   0 closed, 1 half-open, 2 open
//	cloudg.queued                gauge      {call}       calls waiting for a rate token of a scope (or its account, or its provider), a pause holding them
//	cloudg.pause.remaining       gauge      s            the time left of the pause holding a scope, 0 when none
//	cloudg.inflight              up-down    {call}       calls holding a slot of an account's bulkhead
//	cloudg.waiting               up-down    {call}       calls waiting for a slot of an account's bulkhead
//	cloudg.retry_budget          up-down    {token}      tokens left in a provider's retry budget
//	cloudg.provider.rate         up-down    {request}/s  the rate of a provider's provider-wide bucket (global_max_rps)
//	cloudg.provider.rate.ceiling up-down    {request}/s  its configured rate
//	cloudg.provider.queued       up-down    {call}       calls waiting for a rate token of the provider's bucket
//
// Through the OpenTelemetry Prometheus exporter they read cloudg_calls_total,
// cloudg_wait_duration_seconds, cloudg_rate_per_second and so on.
// The up-down counters are the governor's values that add up across
// series, observed at each collection as the gauges are (Prometheus's
// exporter writes them as gauges, OTLP as sums that are not monotonic):
// an OpenTelemetry view that
// drops an attribute adds up the series it merges, as WithoutAccount
// does, where it would keep one of a gauge's. The gauges give a series'
// worst (the breaker's state, the pause left), or count a queue in each
// scope it holds (callers queued), which no sum says.
// cloudg.breaker.state's numbers are state.BreakerState's: a state that
// is none of the three (a Store's, decoded from a corrupt record) reads
// as its number, not as closed.
//
// # Attributes
//
// A scope's parts are the attributes of the semantic conventions (v1.38.0,
// the last to name the RPC service on its own): cloud.provider,
// cloud.account.id, cloud.region, rpc.service and rpc.method, each only
// when the part is set (a GCP project's cloud.account.id is its bare id,
// p1 for projects/p1, as OpenTelemetry's GCP resource detectors write
// it, so that the two join; a project a call names by its number,
// projects/123456789012, is 123456789012, which joins no resource, the
// detectors writing the id; an organization's or a folder's keeps its
// kind, organizations/123), as valid UTF-8 (a part that is not, caller data,
// has U+FFFD for each run of bytes that is not, as has a throttle's
// answer on a span: an exporter refuses such a value, Prometheus's
// registry the whole scrape), of at most 256 bytes (a longer part, caller
// data too, is cut short at a character and ended with …, so that a
// 10 KB part makes no 10 KB label on each of its series; scopes
// whose parts differ only past there share their series, added up as
// WithoutAccount's are; a throttle's answer on a span is cut at 1 KB).
// cloudg.inflight and cloudg.waiting have the
// provider and account only, and cloudg.retry_budget and the
// cloudg.provider gauges the provider only, since those are what they
// belong to. WithoutAccount and
// WithoutOperation drop cloud.account.id or rpc.method to bound the
// number of series of an estate of thousands of accounts, or of
// operations (WithoutOperation makes each service's operations one
// series); the gauges of the scopes that then share their attributes are
// added up (rates, ceilings, callers queued, calls in flight and waiting)
// or give their worst (breaker state, the longest pause). Callers queued
// are counted once per bucket: a scope's own reading counts the callers
// its account's bucket holds, whichever scope of the account they called,
// and those its provider's bucket holds, so the series shows its scopes'
// own callers added up, their accounts' added up (each account once) or
// their provider's, whichever is more.
//
// # Series
//
// Each live scope (a leaf of the governor: an operation where the service
// is paced per operation, a service otherwise) has five gauge series,
// each account two more, and each provider one, its retry budget, and
// three more when it has a provider-wide bucket (its rate, ceiling and
// callers queued). A provider's retry budget, which only successes
// refund, is read after its scopes are dropped while the governor holds
// it spent (resilience.Governor.Providers, its tokens below its size,
// both read at once by resilience.Governor.BudgetAndSize). A provider a
// Configure disabled has none: its calls go through ungoverned, and what
// its scopes learned, which the governor keeps for when it is enabled
// again, is not where they stand.
// The counters have a series
// per call scope (the scope with its operation) and event: cloudg.calls
// one per operation called, the others one per operation that had the
// event (per reason or kind where they have one); the wait histogram has
// nineteen (16 buckets, +Inf, sum and count) per operation and bucket
// level that waited. WithoutOperation counts operations as their service.
//
// # Spans
//
// When the call's context carries a recording span, its waits
// (cloudg.wait), throttles (cloudg.throttle) and retries (cloudg.retry,
// with their delay) are added to it as events, with the attributes of the
// measurements (WithoutAccount and WithoutOperation leave the same ones
// off).
package cloudgotel
