// Package cloudgazure governs every HTTP attempt of the Azure SDK for Go's
// Resource Manager clients with the process-wide governor of package
// resilience, and paces Azure Resource Graph queries in a scope of their
// own.
//
// ClientOptions returns *arm.ClientOptions that carry two pipeline
// policies and retry options from the governor's configuration, so any
// armxxx.NewXxxClient(sub, cred, opts) is governed without wrapping the
// client:
//
//	opts := cloudgazure.ClientOptions(nil)
//	vnets, err := armnetwork.NewVirtualNetworksClient(sub, cred, opts)
//
// While the azure provider is disabled (ratelimit.enabled or
// ratelimit.azure.enabled false) the policies step aside, as the core's Do
// calls its function once, directly: nothing is paced, counted or
// recorded, and azcore retries a request of a client built with
// ClientOptions with the retry options the client was given (base's
// Retry, azcore's defaults when unset, or the call's own
// policy.WithRetryOptions), which are the SDK's, not the governor's.
//
// Build, NewSubscriptionClient and NewTenantClient build a client the same
// way, and fall back to a plain build (logged at debug level) when the
// client rejects the options. NewGraphClient and QueryResources cover
// Resource Graph: its own scope, azure/*/*/resourcegraph, or
// azure/tenants/<tenant id>/*/resourcegraph for a query whose bearer token
// names its tenant (its quota is a user's of that tenant), its quota
// headers, and a query that follows skip tokens paced per page.
//
// # Per request and per attempt
//
// azcore's pipeline runs the per-call policies once per request, then its
// retry policy, which clones the request for every attempt and runs the
// per-retry policies on each clone. The per-call policy
// resolves the scope from the URL (ScopeOfURL; a request azcosmos made,
// known by the header x-ms-cosmos-sdk-supportedcapabilities, on a host
// ScopeOfURL does not read as a Cosmos DB account's, the emulator's or
// a host of one's own, goes in its endpoint's scope,
// azure/<host name>/*/cosmosdb, with its port when the URL names one
// other than its scheme's default: azure/localhost:8081/*/cosmosdb; a
// request a data plane's SDK made, known by the token azcore writes in
// its User-Agent (azsdk-go-azblob, -azqueue, -aztables, -azfile,
// -azdatalake, -azsecrets, -azkeys, -azcertificates, -azappconfig,
// -azsbadmin or -azcontainerregistry), on a host of no data plane's,
// Azurite's, a Key Vault or App Configuration emulator's or a custom
// domain's, goes in its endpoint's scope with the SDK's service:
// azure/127.0.0.1:10000/*/blob, azure/localhost:8443/*/keyvault),
// begins a
// resilience.Guard (a tenant-level request, whose path names no
// subscription, a Resource Graph query among them, is governed in its
// tenant's account, tenants/<tenant id>, when its bearer token names the
// tenant: its first attempt, once azcore's
// bearer token policy has set the token, begins its Guard) and stores the
// request's state with SetOperationValue;
// azcore's clones share the operation values, so the per-retry policy
// finds the same state on every attempt. Per attempt the
// Guard's Enter checks the breaker and the deadline, counts the call,
// takes a token (subscription bucket, then the resource provider's leaf)
// and a slot of the subscription's bulkhead; the attempt is sent, and the
// answer's status and headers go to the Guard's After, the slot given back
// (a success's before After, once its quota headers' pauses below are
// set; a failure's once After recorded it), so that a request waiting for
// the slot sees the pause a throttle or a spent quota set:
//
//   - 429 or 503, whatever the error code: the scope's rate halves and the
//     scope pauses for the server's hint (Retry-After-Ms,
//     x-ms-retry-after-ms, Retry-After, or x-ms-user-quota-resets-after
//     when that is the only one), capped at resilience.MaxPause; but App
//     Configuration's 429 for its Storage quota, which no wait
//     replenishes, is fatal, azcore does not retry it, and the request
//     is lost as denied (resilience.LossDenied), a refusal for a limit
//     the governor does not pace;
//   - 408, 500, 502, 504: a transient answer, counted;
//   - success: additive recovery and breaker reset; Resource Graph's
//     x-ms-user-quota-remaining: 0 pauses its scope until the quota
//     resets; x-ms-ratelimit-remaining-subscription-reads under 25 pauses
//     the whole subscription for a second, and so does the subscription's
//     global reads header under 375, and the tenant's reads under 25 the
//     tenant's tenant-level requests (read only on those); the headers of
//     Resource Manager's writes and deletes buckets under a second's
//     refill (subscription writes and deletes under 10, global writes
//     and deletes under 150, the tenant's writes under 10) pause only the
//     request's scope, its resource provider, for a second, so that the
//     subscription's other resource providers go on reading;
//   - other error statuses: classified as resilience.Classify classifies
//     the *azcore.ResponseError, by its error code or, without one, by its
//     message; usually a fatal answer, which proves the service reachable
//     and resets the breaker, but a 400 without a code whose message reads
//     "Rate exceeded" is throttling, and Cosmos DB's 449 Retry With is
//     transient, whatever its code, as is its 410 Gone for a partition
//     that split or moved (sub-status 1002, 1007, 1008), which azcosmos
//     retries.
//
// Until the request ends, its context answers Value(gov) with the
// request's Guard, so that a governed call made inside an attempt with
// it (by the transport, or a policy after the package's) is nested in
// the attempt, as in a resilience.Do made WithNestedCalls: it borrows the
// attempt's slot rather than wait for it, and goes as the probe the
// attempt holds (see resilience.Guard.Enter).
//
// Before azcore retries an answer the Guard's Retry decides: the first two
// retries of a request are free, each further one costs a token of the
// provider's retry budget, and an empty budget ends azcore's loop with a
// *resilience.RetryBudgetExhaustedError. A retry is counted and paid for
// only when azcore sends it: nothing for an answer to azcore's last
// attempt, or one the caller's ShouldRetry declines (with a ShouldRetry,
// or with Policies, the Guard is asked when azcore sends the retry, after
// its backoff). The retry of a 503, 408, 500, 502, 504, 403 or 404, or of
// a failed name resolution, of a request azcosmos made (known by the header
// x-ms-cosmos-sdk-supportedcapabilities, which azcosmos sets on every
// request, whatever its client's endpoint: the emulator's or a host of
// one's own too) is asked for when it is sent, too: azcosmos runs a
// retry policy of its own ahead of the package's per attempt, which sends
// such an answer again at once, to another region, or gives it up so that
// azcore does not retry it; its resends are the retries counted. azcore's
// backoff before such a retry is watched all the same (see below), but
// with Policies, which do not see how long azcore sleeps. Any other answer, a 429
// among them, and any other failed attempt (a reset connection, a
// timeout), azcosmos hands to azcore as it came, and its retry is asked
// for at once, as is any answer to a request azcosmos did not make (one
// on a Cosmos DB host too: aztables's). A request sent again after a 401,
// an authentication challenge a policy ahead of the package's answers
// with a token inside the same try of azcore's loop (azcore's bearer
// token policy, for a continuous access evaluation challenge or, with Key
// Vault's challenge policy, for the challenge a Key Vault client's first
// request elicits), is no retry: the Guard ends the request the 401
// answered and counts the resend as a call of its own, with no Retry
// event and no free retry or retry budget spent. Nor is it a new
// request: it keeps the request's retries, so that its first two retries
// are free and every later one costs a token of the retry budget however
// many challenges come between them, and the request's deadline. A
// resend that never comes, its token never had (the credential failed,
// the context ended while the token was fetched), is lost with that
// error, as errored or cancelled, as a request whose token fails before
// its first send is; in neither case is
// the credential's error, even a token endpoint's *azcore.ResponseError,
// read as the answer of the request's scope. When the request ends, the
// per-call policy ends the Guard with azcore's final answer: a throttled or
// transient final answer counts toward the breaker, and throttling is
// recorded as given up in the stats and the ledger bound to the request's
// context.
//
// # Waiting, and where it is better than azcore
//
// azcore gives up a retry outright when the server's delay exceeds
// MaxRetryDelay, and otherwise sleeps exactly that delay. The per-retry
// policy hides the delay headers of a response azcore is about to retry
// (and puts them back when the request ends, so the caller sees the
// response unchanged): azcore then sleeps its own exponential backoff, at
// most MaxRetryDelay, and never gives up for a long hint. The next
// attempt's Enter waits out the rest: a throttled scope is paused for the
// hint, so the attempt's rate token waits for the pause to end and for the
// halved rate; a transient answer's hint holds that request only. A retry
// thus goes after the longer of azcore's backoff and the server's hint
// (capped at 300 s), and never before the governor's buckets allow. A
// hint, or a token wait, that would overrun the request's deadline
// (deadline_seconds, 900 s, or the context's deadline if sooner) ends the
// request with the last answer instead. While azcore sleeps its backoff
// before a retry, allowed already or to be asked for as it is sent (with
// a ShouldRetry, for a request azcosmos made), resilience.Guard.AfterOpen
// watches the scope's breaker (but with Policies, which do not see how
// long azcore sleeps):
// should it open (a dead scope) with a cooldown that outlasts the longest
// the sleep may last (azcore draws its jitter itself: (2^try − 1) ×
// RetryDelay × 1.3, at most MaxRetryDelay), the sleep ends at once and
// the retry is refused as the next attempt's Enter would refuse it,
// rather than after the rest of the backoff (up to MaxRetryDelay, 60 s by
// default). A breaker whose cooldown may end first leaves the sleep
// whole: the next attempt's Enter refuses the retry, or lets it go as the
// breaker's probe. azcore sleeps on the request's context, which is, until
// the request ends, a context of the request's that the breaker's opening
// can cancel (a request a policy of the caller's after the package's gives
// a context derived from it with context.WithValue sees the cut too); a
// cut ends azcore's loop, whether it comes during the sleep or as it
// ends, and the per-call policy asks for the retry itself, on a new such
// context, and sends it, if the breaker lets it go, in a loop of azcore's
// own, with the request's body whole: azcore closes the body it is given
// when its loop ends, so the per-call policy gives it one whose Close does
// nothing, and closes the caller's once, when the request ends. Two
// limit: a cancellable context such a policy derives
// (context.WithTimeout, a per-call timeout) is bound, when it is made,
// to the caller's context's cancellation, not to the cut, which is made
// at the first retry: azcore then sleeps the whole backoff, and the retry
// is refused when it ends, if the breaker is open then.
//
// A call's own retry options (policy.WithRetryOptions), which azcore's
// retry policy runs the request with instead of the client's, are the
// ones the policies of a request with both of them installed govern its
// retries by: the per-call policy's context notes them as azcore reads
// them, so that a retry they do not make (MaxRetries -1, StatusCodes
// without the answer's status, the last of their MaxRetries) is neither
// asked of the Guard nor counted, nor refused for a wait
// (resilience.WithMaxWait) it would never make, and azcore's sleep is
// weighed by their delays. Their ShouldRetry, which azcore asks instead of
// the statuses, is asked about an answer without the delay headers the
// per-retry policy hides from azcore (ClientOptions wraps only its
// base's).
//
// Importing the package also teaches the core's classifier the shape of
// *azcore.ResponseError, so resilience.Classify, RetryAfter
// and DescribeError read the errors of Azure clients.
package cloudgazure
