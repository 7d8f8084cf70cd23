package resilience

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Loss says why a governed call ended without a success, when the reason
// is not a fatal answer from the provider (an AccessDenied or a 404 is an
// answer, and the caller has it), or is one that an integration reads as
// the provider's refusal to serve the call for a limit the governor does
// not pace (LossDenied). Every such call is recorded once, with
// its Loss, in the governor's lifetime counters, the run's Stats and the
// task's Ledger. A call that ends with cloudg's own error from another
// governed call made inside its attempt (a credentials call an open
// breaker refused, say) is not: that call recorded its own loss. The zero
// Loss is LossGaveUp.
type Loss uint8

// The ways a call is lost.
const (
	// LossGaveUp: sent, retried, and still throttled when retrying stopped
	// (no attempts left, the deadline, the breaker, the SDK's own loop, or
	// the empty retry budget). A call, given up, failed or errored, that
	// the empty retry budget, its deadline or an open breaker stopped is
	// listed with what stopped it ("retry budget exhausted", "deadline
	// exceeded", "circuit open"), " after " and its last answer.
	LossGaveUp Loss = iota
	// LossSkipped: refused by an open circuit breaker, nothing sent.
	LossSkipped
	// LossFailed: sent, retried, and still failing with transient errors
	// when retrying stopped.
	LossFailed
	// LossRefused: not sent (or its retry not sent) because the wait it
	// needed, for a rate token, a pause, a slot or the breaker's verdict,
	// would have passed its deadline, its context's, or the most it may
	// wait (WithMaxWait). A refused retry is listed with the refusal,
	// " after " and the answer it would have retried.
	LossRefused
	// LossCancelled: ended by its context: while it waited, between its
	// retries, or with an answer the governor could no longer act on.
	LossCancelled
	// LossErrored: ended by a local error, one no provider answered (the
	// request could not be built, signed or sent), that was not retried,
	// or whose retry the empty retry budget, the deadline or an open
	// breaker stopped.
	LossErrored
	// LossPanicked: ended by a panic of the function Call, Do or a Bound's
	// Do ran for it, or of code an integration ran for it (a transport, a
	// middleware: see Guard.EndPanicked), or by such code otherwise not
	// returning; the panic goes on to the caller. Package pool records a
	// task that panicked outside its governed calls so.
	LossPanicked
	// LossDenied: sent, and denied by the provider's answer for a
	// limit the governor does not pace (another quota than the scope's,
	// spent: GitHub's copilot_usage_records answered to a REST call),
	// which an integration reads from the answer and ends the call with
	// (Guard.EndDenied). The caller has the answer, which may not look
	// like an error (cloudghttp hands back GitHub's 403 with no error);
	// the scope is neither slowed nor paused, and its breaker counts no
	// failure, since the limit is not the scope's.
	LossDenied
	numLosses
)

var lossNames = [numLosses]string{"gave_up", "skipped", "failed", "refused", "cancelled", "errored", "panicked", "denied"}

// String returns gave_up, skipped, failed, refused, cancelled, errored,
// panicked or denied.
func (k Loss) String() string {
	if k < numLosses {
		return lossNames[k]
	}
	return fmt.Sprintf("resilience.Loss(%d)", uint8(k))
}

// lossTally is the counter of each Loss.
var lossTally = [numLosses]tally{gaveUpTally, rejectedTally, failedTally, refusedTally, cancelledTally, erroredTally, panickedTally, deniedTally}

// lossPhrases are Describe's words for each Loss, in Describe's order.
var lossPhrases = [numLosses]string{
	"gave up after retries",
	"skipped (circuit open)",
	"failed after retries (transient errors)",
	"refused (would wait past their deadline or max wait)",
	"cancelled (context ended)",
	"errored (local errors, no provider answer)",
	"panicked",
	"denied (by the provider, for a quota not paced)",
}

// maxLedgerReasons is how many distinct reasons Describe lists.
const maxLedgerReasons = 5

// Ledger counts the calls one task lost (see Loss): calls that gave up
// after their retries, calls skipped because a circuit was open, calls
// that failed after their retries with transient errors, calls refused
// because their wait would have passed their deadline, calls their
// context ended, calls a local error ended, calls whose function
// panicked, and calls the provider denied for a quota the governor does
// not pace. A collector that catches per-item errors checks Degraded
// before it reports SUCCESS, so a task whose calls were lost reports
// PARTIAL instead of a clean result with fewer assets. It is safe for
// concurrent use; the zero value is an empty ledger with no task name.
type Ledger struct {
	Task string

	mu      sync.Mutex
	n       [numLosses]int
	reasons []string
}

// WithLedger returns a context carrying a fresh ledger for task, and the
// ledger. Governed calls made with the context record their losses in it
// (the run's stats binding, if any, is kept). A context carries one
// ledger: WithLedger on a context that has one replaces it for the calls
// made with the new context, whose losses the outer ledger does not see.
func WithLedger(ctx context.Context, task string) (context.Context, *Ledger) {
	l := &Ledger{Task: task}
	b := *bindingOf(ctx)
	b.ledger = l
	return context.WithValue(ctx, bindingKey{}, &b), l
}

// Record records a call the task lost outside a governed call, or for a
// reason the governor cannot see (a listing that failed, a page the
// collector skipped): kind is why, reason is what Describe lists for it
// (up to five distinct reasons are kept). Describe words each kind by its
// cause, so kind should be the one whose words are true: LossErrored for
// a page the collector could not read, LossCancelled for work it stopped,
// not LossSkipped, which Describe reads as a circuit open. A governed call
// records its own loss; recording it again counts it twice.
func (l *Ledger) Record(kind Loss, reason string) {
	if l == nil || kind >= numLosses {
		return
	}
	l.mu.Lock()
	l.n[kind]++
	if reason != "" {
		l.addReason(reason)
	}
	l.mu.Unlock()
}

// addReason keeps r, unless the ledger holds maxLedgerReasons already or
// one that says the same: the same text, or the same but for the wait a
// refusal ends with ("; retry in 42s") or the wait a deadline refusal
// names ("a wait of 42.0s would overrun it"), so that the calls an open
// breaker skipped, or a paused scope refused for their deadline, over a
// minute, each told a second less, take one place rather than crowd out
// every other reason.
func (l *Ledger) addReason(r string) {
	if len(l.reasons) >= maxLedgerReasons {
		return
	}
	k := reasonKey(r)
	for _, x := range l.reasons {
		if reasonKey(x) == k {
			return
		}
	}
	l.reasons = append(l.reasons, r)
}

// reasonKey is r without the "; retry in <n>s" a refusal's message ends
// with, and without the <n> of the ": a wait of <n>s would overrun it" a
// deadline refusal's (DeadlineExceededError) says.
func reasonKey(r string) string {
	r = withoutDeadlineWait(r)
	const retryIn = "; retry in "
	i := strings.LastIndex(r, retryIn)
	if i < 0 || !strings.HasSuffix(r, "s") {
		return r
	}
	n := r[i+len(retryIn) : len(r)-1]
	if n == "" || strings.TrimLeft(n, "0123456789") != "" {
		return r
	}
	return r[:i]
}

// withoutDeadlineWait is r with the wait of its first ": a wait of <n>s
// would overrun it" (DeadlineExceededError's words) left out.
func withoutDeadlineWait(r string) string {
	const before, after = ": a wait of ", "s would overrun it"
	i := strings.Index(r, before)
	if i < 0 {
		return r
	}
	rest := r[i+len(before):]
	j := strings.Index(rest, after)
	if j <= 0 || strings.TrimLeft(rest[:j], "0123456789.") != "" {
		return r
	}
	return r[:i+len(before)] + rest[j:]
}

// Counts returns the calls that gave up and the calls skipped.
func (l *Ledger) Counts() (gaveUp, skipped int) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[LossGaveUp], l.n[LossSkipped]
}

// Count returns the calls lost for kind.
func (l *Ledger) Count(kind Loss) int {
	if l == nil || kind >= numLosses {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[kind]
}

// Lost returns the calls lost, whatever the kind.
func (l *Ledger) Lost() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	total := 0
	for _, n := range l.n {
		total += n
	}
	return total
}

// Reasons returns up to five distinct reasons, in the order first seen;
// reasons that differ only by the wait a refusal ends with ("; retry in
// 42s"), or by the wait a deadline refusal names ("a wait of 42.0s would
// overrun it"), are one, the first kept.
func (l *Ledger) Reasons() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reasons...)
}

// Degraded reports whether any call was lost: the task's coverage record
// should be PARTIAL.
func (l *Ledger) Degraded() bool { return l.Lost() > 0 }

// Describe returns the coverage message, or "" when nothing was lost:
//
//	throttled: 1 call(s) gave up after retries, 2 call(s) skipped (circuit open) (<up to five reasons>)
//
// with the other kinds after these two, each only when it applies: "3
// call(s) failed after retries (transient errors)", "2 call(s) refused
// (would wait past their deadline or max wait)", "1 call(s) cancelled
// (context ended)", "1 call(s) errored (local errors, no provider
// answer)", "1 call(s) panicked", "1 call(s) denied (by the provider,
// for a quota not paced)". The message starts with "throttled: "
// when a call gave up, was skipped, was refused or was denied, and with
// "degraded: " otherwise.
// The reasons in parentheses are left out when none were recorded (every
// loss came from Record with an empty reason).
func (l *Ledger) Describe() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for k := range numLosses {
		if n := l.n[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d call(s) %s", n, lossPhrases[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	prefix := "degraded: "
	if l.n[LossGaveUp]+l.n[LossSkipped]+l.n[LossRefused]+l.n[LossDenied] > 0 {
		prefix = "throttled: "
	}
	msg := prefix + strings.Join(parts, ", ")
	if len(l.reasons) > 0 {
		msg += " (" + strings.Join(l.reasons, "; ") + ")"
	}
	return msg
}
