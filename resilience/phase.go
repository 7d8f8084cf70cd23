package resilience

import "fmt"

// phase is where a Guard's current call stands. It is the Guard's only
// state that says what the next verb may do; lease says what the breaker
// granted. Every change goes through Guard.to, which checks it against
// legal, and gives the probe a call borrowed back as the call ends with
// no verdict (see Guard.giveProbeBack).
type phase uint8

const (
	phaseIdle      phase = iota // no attempt of the current call yet (Begin, End)
	phaseSent                   // an attempt is out and its answer not reported
	phaseFailed                 // the last attempt was throttled or transient; the outcome is open
	phaseRetryable              // Retry allowed a retry, not yet sent: counted, and its backoff, when it is
	phaseAwaiting               // as phaseRetryable, for a call whose failure counted towards the breaker: the retry first waits for the breaker's verdict (breaker_wait)
	phaseFinal                  // the last answer ends the call by the governor's reading (fatal, local, another call's stop); an SDK may still retry it
	phaseSucceeded              // the last request succeeded while the call holds its slot; the success is recorded at End
	phaseDone                   // the outcome is recorded (a success, a stop) or there is none to record; Enter starts the next request
	numPhases
)

var phaseNames = [numPhases]string{"idle", "sent", "failed", "retryable", "awaiting", "final", "succeeded", "done"}

func (p phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// lease is what the breaker granted the current call. Every write of a
// call's lease is its own but two: a call nested in its attempt on the
// same breaker, refused while this call holds the probe, borrows it
// (Guard.borrowProbe) and leaves this call's lease lent, and gives it
// back if it ends with no verdict (Guard.giveProbeBack), each with one
// compare-and-swap (hence 32 bits), while this call waits for its attempt.
type lease uint32

const (
	leaseNone  lease = iota // not asked yet, or asked again at the next Enter (after End or a stop)
	leaseLent               // the probe's, lent to a call nested in this call's attempt, whose outcome is the verdict; the next attempt asks AllowProbe, as a probe's retries do, and is the probe again unless the breaker opened
	leasePass               // let through a closed breaker; later requests are not checked again
	leaseProbe              // let through as a half-open breaker's probe; its retries ask AllowProbe
)

// holds reports whether the call's later requests go on the lease without
// asking the breaker again: a pass or the probe's, not one lent or none.
func (l lease) holds() bool { return l >= leasePass }

// ofProbe reports whether the lease is the probe's, held or lent: the
// call's next attempt asks AllowProbe.
func (l lease) ofProbe() bool { return l == leaseProbe || l == leaseLent }

func (l lease) String() string {
	switch l {
	case leaseLent:
		return "lent"
	case leasePass:
		return "pass"
	case leaseProbe:
		return "probe"
	}
	return "none"
}

// phases is a set of phases.
type phases uint16

func setOf(ps ...phase) phases {
	var s phases
	for _, p := range ps {
		s |= 1 << p
	}
	return s
}

func (s phases) has(p phase) bool { return s&(1<<p) != 0 }

// answered is where After may leave any phase: an answer is reported
// whatever came before it (an SDK that sent an attempt without Enter).
// End's phaseIdle is legal from every phase, and staying put always is.
var answered = setOf(phaseFailed, phaseFinal, phaseSucceeded, phaseDone, phaseIdle)

// legal lists, for each phase, the phases a Guard may move to from it.
var legal = [numPhases]phases{
	phaseIdle:      answered | setOf(phaseSent),
	phaseSent:      answered | setOf(phaseSent),
	phaseFailed:    answered | setOf(phaseRetryable, phaseAwaiting),
	phaseRetryable: answered | setOf(phaseSent),
	phaseAwaiting:  answered | setOf(phaseRetryable),
	phaseFinal:     answered | setOf(phaseRetryable),
	phaseSucceeded: answered | setOf(phaseSent),
	phaseDone:      answered | setOf(phaseSent),
}

// to moves the Guard to phase p. It is the only writer of the phase. A
// build with the cloudgdebug tag (the project's tests) panics on a move
// the table does not allow.
func (gd *Guard) to(p phase) {
	if checkPhases && p != gd.phase && !legal[gd.phase].has(p) {
		panic(fmt.Sprintf("resilience: illegal Guard transition %v -> %v", gd.phase, p))
	}
	gd.phase = p
	gd.again = false // a resend's (resendChallenged) ends at the Guard's next move
	if p != phaseIdle {
		gd.closed = false // a step of a new call, if the last was ended
	}
	if p == phaseDone && gd.probeLoan {
		// The call ended with the probe it borrowed and no verdict.
		gd.giveProbeBack()
	}
}

// retrying reports whether the next attempt is a retry of the current
// call, which was sent and failed.
func (gd *Guard) retrying() bool { return gd.phase == phaseRetryable || gd.phase == phaseAwaiting }

// retryNext reports whether the next attempt, if one is sent, is a retry
// of the current call, which asks the breaker: one Retry allowed, or one
// of an answer After recorded (failed, or final), which Enter, Pace and
// Admit ask Retry for as it is sent.
func (gd *Guard) retryNext() bool {
	return gd.retrying() || gd.phase == phaseFailed || gd.phase == phaseFinal
}
