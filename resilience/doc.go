// Package resilience is a process-wide governor for cloud API calls.
//
// Every call a program makes to AWS, Azure or GCP (through Call and Do, or
// through an SDK integration module) is paced by adaptive token buckets per
// provider, account, region, service and operation; held to a concurrency
// cap per provider x account; cut off by a circuit breaker when its scope
// keeps failing; retried with decorrelated jitter inside a retry budget
// shared by the whole provider; classified as Throttled, Transient or Fatal
// from whatever error shape the SDK produced; and counted, so that a run
// can say which scopes were slowed and which calls were lost.
//
// # Where a call goes
//
// One logical call is one Guard, a state machine with the verbs every SDK
// hook has: Enter before an attempt, After once it answered, Retry when it
// failed, End when the call is over. Call and Do run their retry loop on a
// Guard kept on the stack; the SDK integrations drive one from their SDK's
// hooks. In order:
//
//  1. Call resolves the governor (Default, or WithGovernor) and the
//     scope's provider, whose settings come from a Config merged with the
//     built-in defaults. Begin looks the scope's leaf up in the provider's
//     scope table (one entry per account x region x service, or operation
//     where the service is per operation) and the context's Stats and
//     Ledger.
//  2. Enter: the breaker (open: *CircuitOpenError, or with breaker_wait a
//     wait for its verdict within the deadline); the deadline, the
//     RetryPolicy's or the context's; a token from the provider, account
//     and leaf buckets, waiting for the slowest, the leaf's wait following
//     its queue when the leaf's rate or pause changes; a slot of the
//     account's bulkhead; one call counted. TryEnter takes the same steps
//     without waiting, tokens and slot before the breaker, and gives back
//     what it took when a check refuses.
//  3. fn, or the SDK, sends the attempt.
//  4. After classifies the answer once (Classify, with the provider's hint
//     of RetryAfter): a throttle halves the leaf's rate and pauses it for
//     the provider's Retry-After; a success resets the breaker, refunds the
//     budget and lets the rate recover.
//  5. Retry decides whether to go again: attempts left, a delay
//     (decorrelated jitter, never shorter than the hint) within the
//     deadline, and a token of the provider's retry budget past the first
//     two retries. When retrying stops the breaker counts a failure,
//     throttling is a give-up, and the caller gets the original error. With
//     breaker_wait, a call whose attempts or budget ran out on a transient
//     error waits for the breaker's verdict instead and goes again with its
//     attempts renewed, as does the retry of a transient error that the
//     breaker held until its verdict. The backoff ends early when the
//     scope's breaker opens meanwhile and would still refuse the retry
//     when it ended (a dead scope): the retry is refused then, not after
//     the backoff (Backoff, which an integration that sleeps its SDK's
//     pause itself calls too). An SDK that retries on its own sends its
//     retries through Pace rather than Enter (or Admit, when its retries
//     take no token: it asks the breaker, and waits out a pause of the
//     scope, which holds every retry), ends its own backoff sleep
//     with AfterOpen, and asks Resend when its own attempts ran out.
//
// A Guard's state is one phase (idle, sent, failed, retryable, awaiting a
// verdict, final, succeeded while holding its slot, done) and the lease
// the breaker granted (none, a pass, the probe's, or the probe's lent to
// a call nested in its attempt, which is the probe meanwhile); each verb
// starts from the phase, and one function moves it, along a table of
// legal transitions that the project's tests check (build tag
// cloudgdebug).
//
// Every event (a call counted, a wait, a throttle and the rate it leaves,
// a pause, a retry, a breaker change, a give-up, a rejection, an empty
// budget, a call lost otherwise) is recorded by one recording function, in
// the governor's lifetime counters and the run's Stats; every call lost
// (see Loss: given up, skipped, failed, refused, cancelled, ended by a
// local error or by a panic of its function or of code an integration
// ran for it, or denied by the provider for a quota the governor does not
// pace) also goes to the task's
// Ledger. The recording functions never change a Guard's phase. The
// same functions send each as an observe.Event to the governor's observer
// (WithObserver), outside every lock, and log the ones a person reads
// (throttles at Debug; long pauses, breaker changes, an empty budget and
// give-ups at Info and Warn) with each scope part an attribute.
// Governor.Summary reports a run; Governor.Inspect shows where one scope
// stands, Governor.Scopes lists every live scope with the same
// snapshot, and Governor.Providers the providers whose state (a retry
// budget that outlives their scopes) the governor holds.
//
// The learned state (buckets, breakers, budgets) sits behind the
// interfaces of package state, made by a state.Store: MemoryStore by
// default, fleet mode's Redis store with WithStateStore. Error shapes the
// core cannot read by method sets (ErrorCode() string, HTTPStatusCode()
// int, Header() http.Header) are taught to it by the SDK integration
// modules, which register readers when imported. An error whose methods
// panic as the classifier reads them (a typed nil pointer of an SDK's
// error type, say) does not crash the process: it reads as FATAL and no
// provider's answer, unless an error wrapping it carries a code or status
// that decides (see Classify), and its description says so.
//
// # Time
//
// Every wait (token, slot, backoff, pause) is a select on a timer or
// channel and the context, and no goroutine outlives a call, so a governor
// created inside a testing/synctest bubble runs in virtual time. WithClock
// substitutes another Clock, such as a simulator's faster one.
//
// # Memory
//
// A scope's state (its entry, bucket, breaker, and for an account's first
// scope the account and its bulkhead) is one allocation of a few hundred
// bytes, found through an index that a call reads without a lock. Scopes whose state holds nothing learned (rate at
// its ceiling, bucket full, breaker closed), that went unused for the
// reclaim interval (a minute by default) and have no call in flight are
// dropped by the reclaimer:
// no goroutine of its own, but a step of at most a quarter
// of a millisecond taken by the calls that find a pass due, so a sweep
// over millions of scopes keeps only the ones in use or slowed. A Bound is a scope resolved once, for a program that calls one scope
// many times.
package resilience
