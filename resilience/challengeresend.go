package resilience

import "github.com/cloudg/cloudg/internal/challengeresend"

func init() {
	// The integrations' resends of a request answering its provider's
	// authentication challenge (package attemptctx) are readied as
	// resendChallenged has it.
	challengeresend.Resend = func(guard any) { guard.(*Guard).resendChallenged() }
}

// resendChallenged readies the call to send its request again, not as a
// retry, after its last attempt was answered with the provider's fatal
// answer, which After recorded (phaseFinal): an authentication challenge
// that a policy of the SDK's answers by sending the request again with a
// token. The answer's request is over (its fatal answer, a proof of
// reachability, records nothing more), and the resend is the call's next
// request, which Enter counts as a call and not as a retry (no Retry
// event, no free retry or retry budget token spent), asking the breaker
// again as a request after a stop does (it is one: stop). Unlike
// a next page's, its request is the same: it keeps the retries the call
// made (the first freeRetries of them free, every later one paid for,
// however many challenges come between them), and the call's start and
// deadline. Its last answer is forgotten, as End forgets it: a refusal
// of the resend's Enter is recorded as a first attempt's is. A call in
// any other state (no fatal answer of the provider's last, a local
// error's, an answer After saw once Begin's context was done, a provider
// disabled from the start) is ended as End(last answer) ends it, and the
// resend is the Guard's next call, as it was.
func (gd *Guard) resendChallenged() {
	if gd.e == nil || gd.phase != phaseFinal || gd.last.local {
		gd.End(gd.last.err)
		return
	}
	gd.Release()
	gd.stop() // the breaker's lease given back, the outcome After recorded kept
	gd.again = true
}
