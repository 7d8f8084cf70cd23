// Package resendslot is the readying of a governed attempt that an
// integration sends again because it failed before its request left the
// process (a credential that could not be had: a token endpoint that
// refused the connection), on the admission the attempt had: no new call,
// token or retry of the scope's, but the checks a request to the scope
// makes that the wait before the resend may have changed (the breaker, a
// pause of the scope, which holds it with a token, and a slot not lent
// to a call nested in the attempt that goes on).
// Package resilience sets Ready, so that it exports nothing for it; the
// integrations reach it through package attemptctx.
package resendslot

import "context"

// Ready readies the resend of guard's attempt in progress, guard being a
// *resilience.Guard (see attemptctx.ReadyResend).
var Ready func(ctx context.Context, guard any) error
