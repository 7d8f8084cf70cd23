// Package challengeresend is the core's verb for a request that an
// integration sends again, not as a retry, as the answer to its
// provider's fatal answer to its last attempt: an authentication
// challenge (a 401 that a policy of the SDK's answers by sending the
// request again with a token, Key Vault's or azcore's bearer token
// policy's). The resend is a call of its own, counted as sent, but not a
// new request: it keeps the request's retries (the free ones it spent),
// its deadline and its retry budget, so that a request met with
// challenges between its retries pays for them as one met with none.
// Package resilience sets Resend, so that it exports nothing for it; the
// integrations reach it through package attemptctx.
package challengeresend

// Resend readies guard, a *resilience.Guard whose last attempt was
// answered with its provider's fatal answer, for the request's resend
// (see attemptctx.ResendChallenged).
var Resend func(guard any)
