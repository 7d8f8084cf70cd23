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
//     ResourceExhausted, Unavailable, DeadlineExceeded and Internal retried
//     after 1 s, doubling up to the provider's max backoff, never sooner
//     than RetryInfo; each attempt's answer reported; the retry budget after
//     each page's first two retries; at most max_retries in a row (past
//     either limit the call ends with a *resilience.RetryBudgetExhaustedError
//     chained to the provider's error); the deadline respected.
//   - Do governs one unary call the way a listing governs its first page.
//   - UnaryClientInterceptor (ClientOption) governs every attempt of any
//     gRPC-based Google client.
//   - RESTClientOption governs every request of a REST-based Google client
//     (compute's NewInstancesRESTClient) with a cloudghttp.Transport, in
//     scopes read from the URL (RESTScope:
//     gcp/projects/<id>/*/compute/instances_get).
//
// Each of them drives one resilience.Guard per call (per listing, for a
// listing): Enter before an attempt, After with its answer, Retry before
// gax retries, End when the call is over. The guard classifies and records.
//
// Importing the package registers an error reader with the core, so that
// *apierror.APIError, gRPC status errors and *googleapi.Error classify as
// google-api-core classifies them (ResourceExhausted and Unavailable are
// throttling, DeadlineExceeded and Internal transient, other codes fatal
// provider answers; a REST answer by its HTTP status, and, when the status
// is on no list, by its message), with RetryInfo's delay as the
// Retry-After.
package cloudggcp
