// Package resilience is a process-wide governor for cloud API calls.
//
// Every call a program makes to AWS, Azure or GCP, through Call and Do or
// through an SDK integration module, is paced by adaptive token buckets per
// provider, account, region, service and operation; held to a concurrency
// cap per provider x account; cut off by a circuit breaker when its scope
// keeps failing; retried with decorrelated jitter inside a retry budget
// shared by the whole provider; classified as Throttled, Transient or Fatal
// from whatever error shape the SDK produced; and counted, so that a run
// can say which scopes were slowed and which calls were lost.
//
// # Where a call goes
//
// Call (call.go) resolves the governor (Default, or WithGovernor) and the
// provider's settings (settings.go, from a Config of config.go), then the
// scope's leaf entry (governor.go: one per account x region x service, or
// operation where the service is per operation), and for each attempt:
//
//  1. the breaker (internal/breaker): open, and *CircuitOpenError;
//  2. the deadline (call.go): spent, and *DeadlineExceededError;
//  3. a token from the provider, account and leaf buckets
//     (internal/bucket), waiting for the slowest (tracker.go);
//  4. a slot of the provider x account bulkhead (internal/bulkhead);
//  5. fn;
//  6. on error, Classify (classify.go) and RetryAfter (retryafter.go):
//     Fatal returns; Throttled halves the leaf's rate and pauses it;
//     Throttled and Transient back off with decorrelated jitter and retry
//     while max retries, the deadline and the provider's retry budget
//     (internal/budget) allow; when retrying stops the breaker counts a
//     failure and the caller gets the original error.
//
// Every step is counted (stats.go) in the governor's lifetime stats and in
// the Stats bound to the context by WithStats; give-ups and skips go to the
// Ledger bound by WithLedger (ledger.go). Governor.Summary (summary.go)
// reports a run.
//
// The SDK integrations let the SDK retry; they drive the same steps one by
// one through a Guard (guard.go). Error shapes the core cannot read by
// method sets (ErrorCode() string, HTTPStatusCode() int, Header()
// http.Header) are taught to it with RegisterErrorReader.
//
// # Time
//
// Every wait (token, slot, backoff, pause) is a select on a timer or
// channel and the context, and no goroutine outlives a call, so a governor
// created inside a testing/synctest bubble runs in virtual time. WithClock
// substitutes another Clock, such as a ScaledClock for a simulator.
//
// # Memory
//
// Scopes whose state holds nothing learned (rate at its ceiling, bucket
// full, breaker closed) and that went unused for a minute are dropped when
// the table grows, so a sweep over millions of scopes keeps only the ones
// in use or slowed.
package resilience
