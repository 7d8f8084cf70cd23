// Package cloudggcp governs Google Cloud Asset Inventory calls (section 3.4
// of the spec) and other gRPC-based Google clients with the process-wide
// governor of package resilience.
//
//   - ListAssets, SearchAllResources and SearchAllIamPolicies return a paced
//     Listing: one breaker check, token and counted call before the first
//     page, one bulkhead slot for the whole listing, one token and counted
//     call before each further page fetch, and the GCP retry for every page.
//     Collect returns everything that came back with the error, Coverage the
//     record (PARTIAL "listing truncated: throttled: ...", or FAILED), and
//     ListInventory falls back from ListAssets to SearchAllResources.
//   - Retry is the gax.CallOption of the GCP retry for one scope: the spec's
//     codes, 1 s doubling up to max backoff, never sooner than RetryInfo,
//     each retried error reported, the retry budget after each page's first
//     two retries, at most max_retries in a row, the deadline respected.
//   - Do governs one unary call the way a listing governs its first page.
//   - UnaryClientInterceptor (ClientOption) governs every attempt of any
//     gRPC-based Google client.
//
// Importing the package registers an error reader with the core, so that
// *apierror.APIError, gRPC status errors and *googleapi.Error classify as
// the spec's table says, with RetryInfo's delay as the Retry-After.
package cloudggcp
