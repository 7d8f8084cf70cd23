// Package cloudggcp governs Google Cloud Asset Inventory calls and other
// Google clients, gRPC-based and REST-based, with the process-wide
// governor of package resilience.
//
//   - ListAssets, SearchAllResources and SearchAllIamPolicies return a paced
//     Listing: one breaker check, token and counted call before the first
//     page, one bulkhead slot for the whole listing, one token and counted
//     call before each further page fetch, and the GCP retry for every page.
//     Collect returns everything that came back with the error, Coverage the
//     record (PARTIAL "listing truncated: throttled: ...", or FAILED), and
//     ListInventory falls back from ListAssets to SearchAllResources.
//   - Retry is the gax.CallOption of the GCP retry for one scope:
//     ResourceExhausted (not grpc's for a message size limit), Unavailable,
//     DeadlineExceeded and Internal retried
//     after 1 s, doubling up to the provider's max backoff, never sooner
//     than RetryInfo; each attempt's answer reported; the retry budget after
//     each page's first two retries; at most max_retries in a row (past
//     either limit the call ends with a *resilience.RetryBudgetExhaustedError
//     chained to the provider's error); the deadline respected.
//   - Do governs one unary call the way a listing governs its first page.
//   - UnaryClientInterceptor (ClientOption) governs every attempt of the
//     unary calls of any gRPC-based Google client; its streaming RPCs are
//     not governed unless StreamClientInterceptor (StreamClientOption) is
//     installed too, which paces a stream's opening as a call, gives its
//     slot back once the stream is open, and records the stream's end as
//     the call's outcome.
//   - RESTClientOption governs every request of a REST-based Google client
//     (compute's NewInstancesRESTClient) with a cloudghttp.Transport, in
//     scopes read from the URL (RESTScope:
//     gcp/projects/<id>/*/compute/instances_get).
//
// With the gcp provider disabled (ratelimit.enabled or
// ratelimit.gcp.enabled false) each of them makes the call once, directly,
// as the core's Do calls its function: no pacing, no GCP retry, nothing
// recorded; the call keeps the client's own retry and timeout settings,
// which are the SDK's.
//
// Each of them drives one resilience.Guard per call (per listing, for a
// listing): Enter before an attempt, After with its answer, Retry before
// gax retries, End when the call is over. The guard classifies and records.
//
// A dead scope's calls end when its breaker opens: the pause before a
// retry ends early when the scope's breaker opens meanwhile (or is open)
// and would still refuse the retry when the pause ended, and the retry is
// refused then, a *resilience.CircuitOpenError wrapping the provider's
// error, the call lost as failed after its retries (a give-up when
// throttled), rather than after up to the max backoff (60 s) or RetryInfo's
// delay. For that the Retryer sleeps the pause itself, on the governor's
// clock and the call's context, watching the breaker
// (resilience.Guard.Backoff), and lets gax go on at once: for Do, the
// listings, and the Retry option on a client with the interceptor. On a
// gRPC client without the interceptor the Retry option's per-RPC
// credentials sleep it, as grpc asks them for the retry's metadata, on
// the retry's context, which ends with the call's own.
//
// Every retry asks the breaker before it is sent, after a cut pause or a
// whole one: the interceptor's Enter asks it for the Retry option on a
// client with the interceptor; Do and the listings, whose retries are
// sent without Enter and take no token (unless a pause of the scope holds
// them), ask Guard.Admit; the Retry option
// on a client without the interceptor asks Guard.Admit through per-RPC
// credentials of its own, which grpc asks before it sends an attempt (on
// a REST client, whose retries gax sends with nothing of the option's in
// the way, its retries ask nothing: see Retry). So
// a breaker that opened during a pause it did not cut (it tells no
// verdicts, as a fleet's shared breakers do, or the provider waits for
// its breakers' verdicts, breaker_wait, or gax slept the pause) still
// refuses the retry when the pause ends, or, with breaker_wait, holds it
// until its verdict within the deadline; a half-open one lets it through
// as its probe.
//
// Three pauses are not cut short, since gax sleeps them on a context the
// Retryer does not know: the Retry option's on a REST client, or on a
// gRPC client without the interceptor whose call's own per-RPC
// credentials, given after the option, replace the option's (its call
// ends when the pause does, its retry refused, or, for a REST call, sent),
// and a retry that a client's own retry settings make through the
// interceptor alone (the next attempt's Enter refuses it after gax's
// sleep). Pass the Retry option, or use Do, for a dead scope's calls to
// end when its breaker opens. The
// REST clients' Transport (package cloudghttp) ends its wait as the
// Retryer does.
//
// Importing the package registers an error reader with the core, so that
// *apierror.APIError, gRPC status errors and *googleapi.Error classify by
// their code (ResourceExhausted and Unavailable are
// throttling, DeadlineExceeded and Internal transient, other codes fatal
// provider answers; grpc's own Unavailable for a GOAWAY of too_many_pings,
// a client's keepalive settings, is a lost connection, transient; grpc's
// own ResourceExhausted for a message over a size limit ("grpc: received
// message larger than max"), which every retry meets again, is fatal and
// not retried; a REST
// answer by its reason when it is rateLimitExceeded or
// userRateLimitExceeded, which is throttling, else by its HTTP status,
// and, when the status is on no list, by its message), with RetryInfo's
// delay (a REST answer's, from its JSON body) as the Retry-After.
package cloudggcp
