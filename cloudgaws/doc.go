// Package cloudgaws puts aws-sdk-go-v2 clients under the process governor
// of github.com/cloudg/cloudg/resilience, the SDK's own retries included.
//
// One call instruments an aws.Config; every client made from it afterwards
// is governed, paginators and waiters included:
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	...
//	if err := cloudgaws.Install(&cfg, "123456789012"); err != nil {
//		return err // also logged at warn level; cfg's clients would be ungoverned
//	}
//	client := ec2.NewFromConfig(cfg)
//
// A program that does not know the account its credentials act in gets
// it with AccountID (from the credentials when they carry it, else from
// STS, once), rather than installing with "*", which merges every account
// the config reaches into one scope.
//
// Each call is attributed to the scope aws/<account>/<region>/<service>/
// <Operation>, with the botocore-style service name (ec2, secretsmanager,
// route53; see ServiceName) and the region as botocore names a client's:
// a global service's calls (iam, organizations, route53, cloudfront, ...)
// in whatever region share the scope of its partition's global endpoint
// (aws/<account>/aws-global/iam), as AWS limits them once per account;
// a FIPS pseudo-region (fips-us-east-1, us-east-1-fips) is its region
// (us-east-1), whose limits its FIPS endpoint shares, as the SDK reads it.
// Each is carried by one resilience.Guard. Install
// adds two middlewares to every call's stack and sets the config's
// Retryer:
//
//   - Initialize (once per call): Guard.Enter, that is the scope's circuit
//     breaker (open: a *ThrottlingError wrapping *resilience.CircuitOpenError,
//     and nothing is sent), one counted call, a rate token from every
//     bucket level and a slot of the account's bulkhead, held across the
//     SDK's retries; after the call, Guard.End releases the slot and
//     records the outcome the SDK's loop left open (a give-up after the
//     last retry) in the breaker, the stats and the ledger.
//   - Finalize, right after the SDK's Retry middleware (once per attempt):
//     Guard.After records each attempt's answer, classified once by the
//     core (a throttle halves the scope's rate and pauses it for
//     Retry-After or x-amz-retry-after; a transient error is counted), and
//     before a throttled retry Guard.Pace waits for a fresh rate token on
//     top of the SDK's backoff.
//   - The Retryer (the SDK's standard one by default, or its adaptive one, 10 retries by
//     default): at GetRetryToken, where the SDK has decided to retry,
//     Guard.Retry lets the retry go or ends the SDK's loop. After the
//     first two retries of the call each costs a token of the provider's
//     retry budget; an empty budget ends the loop with a *ThrottlingError
//     wrapping *resilience.RetryBudgetExhaustedError, and a Retry-After
//     that would pass the context's deadline ends it with the provider's
//     error; a Retry-After longer than the call's max wait
//     (resilience.WithMaxWait) ends it with a *ThrottlingError wrapping
//     *resilience.WouldWaitError. A refused retry ends the call at once:
//     the SDK's sleep before returning a refused retry of a long-polling
//     operation (SQS ReceiveMessage) is cut, so the account's bulkhead slot
//     is not held for it. A retry the caller's base retryer refuses keeps
//     that sleep, but ends the call at once (Guard.End: the slot goes
//     back, the outcome is recorded): nothing more is sent. The retry is counted when it is sent. While the SDK sleeps
//     its backoff (the retryer's RetryDelay, or the response's
//     x-amz-retry-after when longer, by at most 5 s), Guard.AfterOpen
//     watches the scope's breaker: should it open (a dead scope) with a
//     cooldown that outlasts the rest of the sleep, the sleep ends at
//     once, and the retry is refused as Guard.Pace refuses it after a
//     sleep (a *ThrottlingError wrapping *resilience.CircuitOpenError,
//     recorded as a give-up), rather than after the rest of the backoff
//     (up to 20 s in the SDK's standard mode). So is a retry whose
//     breaker opens as the sleep ends, in the SDK's check of the context
//     before the attempt or its adaptive mode's wait for an attempt token.
//     A breaker whose cooldown ends before the sleep does leaves it
//     whole: the retry goes when it ends, as the breaker's probe. Two
//     limits: the cut reaches the SDK's sleep through the call's context,
//     from its first retry on, so that a context a middleware derived
//     from it before that (a per-operation timeout in the Build step)
//     sleeps the whole backoff; and the sleep's length is known only when
//     the governed retryer gives it, so that the sleep of a retryer of
//     the caller's wrapped around it with a backoff of its own
//     (retry.AddWithMaxBackoffDelay's kind), or a sleep before retrying
//     an error value another call of the client retries at the same
//     moment (a sentinel error of a middleware of the caller's, by which
//     the retryer could not tell the calls apart), is cut whenever the
//     breaker opens during it, whatever its cooldown.
//
// For a provider that waits for its breakers' verdicts (breaker_wait),
// Guard.Pace also holds each SDK retry at an open breaker until its
// verdict, and a call whose SDK attempts all failed on a transient error
// is sent again once the verdict has come (Guard.Resend), its body
// rewound: no call is lost to an outage its context's deadline could wait
// out.
//
// A call whose context carries resilience.WithMaxWait refuses, at once and
// before sending, any wait longer than it allows (for its breaker, a rate
// token, a slot, or a retry's Retry-After): a *ThrottlingError wrapping the
// core's *resilience.WouldWaitError. Scope returns the scope a call of a
// config's clients is governed in, for Governor.Delay.
//
// A call made inside another's attempt (credentials fetched through an
// instrumented STS client while signing) finds the enclosing call's guard
// in its context and never waits for the slot that call holds. Its
// failure (the governor's stop, or its provider's answer: STS's throttle)
// is charged to its own scope only. More generally, an attempt that fails
// before its request reaches the HTTP client (credentials that could not
// be had, an endpoint that could not be resolved, a request that could
// not be signed) is a local error of its call, whatever its error says:
// nothing was sent to the scope, which is neither slowed, paused nor
// failed, and a call that ends with it is lost as errored. The SDK's
// retry of such an attempt adds no load to the provider: it is neither
// counted as a retry nor paid from the provider's retry budget.
//
// Importing the package also teaches the core classifier the status and
// headers of the SDK's HTTP response errors, so the guard and
// resilience.RetryAfter read Retry-After and x-amz-retry-after from any
// error a client returns, and its read timeout as a transient error (the
// SDK retries it), as it reads the errors the core's tables alone would
// read otherwise than the SDK does: STS's IDPCommunicationError, which the
// STS client retries, as transient; a request sent to a host that does
// not exist (NXDOMAIN), which the SDK does not retry, as a local error;
// the code S3's client makes up for an answer without a body (a HEAD's
// 503) by its status, a throttle. It also reads as throttles, in the
// scope of the call that got them, two answers that neither the SDK nor
// botocore's lists name, though the provider says a limit of its was
// passed: a service's KMS calls on the caller's behalf throttled by KMS
// (Kinesis's and SNS's KMSThrottlingException, Step Functions'
// KmsThrottlingException, SQS's KmsThrottled), and a DynamoDB
// TransactionCanceledException whose CancellationReasons hold
// ThrottlingError or ProvisionedThroughputExceeded. The SDK does not
// retry them: the call is a throttled give-up, its scope slowed. And it
// teaches the core's configuration check
// (resilience.Config's Validate, so ParseConfig, LoadConfig and
// Configure) the SDK's services and operations, so that an override key
// no call can match is an error with the name meant when it is near:
// "ratelimit.aws.services.secretmanager: unknown AWS service (did you
// mean secretsmanager?)". The names are those of a list generated from
// the SDK's modules (go generate), and those of the service modules the
// program links.
package cloudgaws
