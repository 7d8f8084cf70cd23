// Package cloudgaws puts aws-sdk-go-v2 clients under the process governor
// of github.com/cloudg/cloudg/resilience, the SDK's own retries included.
//
// One call instruments an aws.Config; every client made from it afterwards
// is governed, paginators and waiters included:
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	...
//	cloudgaws.Install(&cfg, "123456789012") // "*" before an AssumeRole
//	client := ec2.NewFromConfig(cfg)
//
// Each call is attributed to the scope aws/<account>/<region>/<service>/
// <Operation>, with the botocore-style service name (ec2, secretsmanager,
// route53; see ServiceName). Install adds two middlewares to every call's
// stack and sets the config's Retryer:
//
//   - Initialize (once per call): the scope's circuit breaker (open: a
//     *ThrottlingError wrapping *resilience.CircuitOpenError, and nothing
//     is sent), one counted call, a rate token from every bucket level, a
//     slot of the account's bulkhead held across the SDK's retries and
//     released exactly once; after the call, success or the final error
//     goes to the breaker, the stats and the ledger (resilience.Guard).
//   - Finalize, right after the SDK's Retry middleware (once per attempt):
//     a throttled attempt halves the scope's rate and pauses it for
//     Retry-After or x-amz-retry-after; a transient one is counted; a
//     throttled retry waits for a fresh rate token on top of the SDK's
//     backoff.
//   - The Retryer (the SDK's standard or adaptive one, 10 retries by
//     default): at GetRetryToken, where the SDK has decided to retry, the
//     retry is counted and, after the first two of the call, costs a token
//     of the provider's retry budget; an empty budget ends the SDK's loop
//     with a *ThrottlingError wrapping *resilience.RetryBudgetExhaustedError.
//
// Importing the package also teaches the core classifier the headers of
// the SDK's HTTP response errors, so resilience.RetryAfter reads
// Retry-After and x-amz-retry-after from any error a client returns.
package cloudgaws
