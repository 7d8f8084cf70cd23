//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// The Guard's transition table, driven: every verb from every phase, with
// the phase it leaves the Guard in and what it records. Each phase is
// reached through the verbs themselves, as an integration reaches it. The
// tests build with the cloudgdebug tag, under which a move the table of
// legal transitions does not list panics.

// guardAt returns a Guard of ec2Vpcs in phase p, with the governor and the
// run's stats it records in. With wait set the provider waits for its
// breakers' verdicts (breaker_wait) and a call has one attempt, so that a
// failed transient attempt awaits a verdict.
func guardAt(t *testing.T, p phase, wait bool) (*Guard, *Governor, *Stats) {
	t.Helper()
	cfg := Config{}
	var opts []Option
	if wait {
		cfg.AWS.BreakerWait = true
		opts = append(opts, WithPolicy(RetryPolicy{MaxAttempts: 1}))
	}
	g := newGov(t, cfg)
	ctx, stats := WithStats(context.Background())
	gd, err := g.Begin(ctx, ec2Vpcs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("reaching %v: %v", p, err)
		}
	}
	enter := func() { must(gd.Enter(ctx)) }
	switch p {
	case phaseIdle:
	case phaseSent:
		enter()
	case phaseFailed:
		enter()
		gd.Release()
		gd.After(transientErr())
	case phaseRetryable:
		enter()
		gd.Release()
		gd.After(transientErr())
		_, err := gd.Retry(0)
		must(err)
	case phaseAwaiting:
		if !wait {
			t.Fatal("phaseAwaiting needs breaker_wait")
		}
		enter()
		gd.Release()
		gd.After(transientErr())
		_, err := gd.Retry(0)
		must(err)
	case phaseFinal:
		enter()
		gd.Release()
		gd.After(accessDenied())
	case phaseSucceeded:
		enter()
		gd.After(nil)
	case phaseDone:
		enter()
		gd.Release()
		gd.After(nil)
	}
	if gd.phase != p {
		t.Fatalf("setup reached %v, want %v", gd.phase, p)
	}
	return gd, g, stats
}

// effects is what a verb recorded and left: counter increments in the
// run's totals, and the state after.
type effects struct {
	calls, retries, throttled, transient, gaveUp, rejected int64
	panicked, denied                                       int64
	failures                                               int                // the breaker's consecutive failures after
	breaker                                                state.BreakerState // the breaker's state after (closed, the zero value, in every row of table)
	slot                                                   bool
	lease                                                  lease
	err                                                    string // "" for nil, else the error's type
}

func (e effects) String() string {
	return fmt.Sprintf("calls+%d retries+%d throttled+%d transient+%d gaveUp+%d rejected+%d panicked+%d denied+%d failures=%d breaker=%v slot=%v lease=%v err=%q",
		e.calls, e.retries, e.throttled, e.transient, e.gaveUp, e.rejected, e.panicked, e.denied, e.failures, e.breaker, e.slot, e.lease, e.err)
}

// effectsOf is what verb did to gd, between the run's totals before and
// after it.
func effectsOf(gd *Guard, g *Governor, stats *Stats, before Counters, err error) effects {
	after := g.Summary(stats).Totals
	b := g.Inspect(ec2Vpcs).Breaker
	return effects{
		calls:     after.Calls - before.Calls,
		retries:   after.Retries - before.Retries,
		throttled: after.Throttled - before.Throttled,
		transient: after.TransientErrors - before.TransientErrors,
		gaveUp:    after.GaveUp - before.GaveUp,
		rejected:  after.Rejected - before.Rejected,
		panicked:  after.Panicked - before.Panicked,
		denied:    after.Denied - before.Denied,
		failures:  b.Failures,
		breaker:   b.State,
		slot:      gd.slot != nil,
		lease:     gd.lease,
		err:       errType(err),
	}
}

func errType(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf("%T", err)
}

// verbs are the Guard's verbs, as the table calls them.
var verbs = map[string]func(gd *Guard) error{
	"Enter":        func(gd *Guard) error { return gd.Enter(gd.ctx) },
	"TryEnter":     func(gd *Guard) error { return gd.TryEnter() },
	"Pace":         func(gd *Guard) error { return gd.Pace(gd.ctx) },
	"Admit":        func(gd *Guard) error { return gd.Admit(gd.ctx) },
	"After(nil)":   func(gd *Guard) error { gd.After(nil); return nil },
	"After(thr)":   func(gd *Guard) error { gd.After(throttle()); return nil },
	"After(tra)":   func(gd *Guard) error { gd.After(transientErr()); return nil },
	"After(fatal)": func(gd *Guard) error { gd.After(accessDenied()); return nil },
	"Retry":        func(gd *Guard) error { _, err := gd.Retry(0); return err },
	"Resend": func(gd *Guard) error {
		if !gd.Resend() {
			return errors.New("no resend")
		}
		return nil
	},
	"Release":      func(gd *Guard) error { gd.Release(); return nil },
	"End(nil)":     func(gd *Guard) error { gd.End(nil); return nil },
	"End(thr)":     func(gd *Guard) error { gd.End(throttle()); return nil },
	"EndPanicked":  func(gd *Guard) error { gd.EndPanicked(); return nil },
	"EndDenied":    func(gd *Guard) error { gd.EndDenied(accessDenied()); return nil },
	"Pause":        func(gd *Guard) error { gd.Pause(time.Second); return nil },
	"PauseAccount": func(gd *Guard) error { gd.PauseAccount(time.Second); return nil },
}

type row struct {
	from phase
	wait bool // breaker_wait, one attempt per call
	verb string
	to   phase
	fx   effects
}

const (
	noResend  = "*errors.errorString"        // Resend reported false
	callEnded = "*resilience.CallEndedError" // Pace or Admit refused the retry of a request that ended
)

// table states, for each phase and verb, the phase after and the effects.
// A phase's setup holds the slot only in phaseSent and phaseSucceeded.
var table = []row{
	// Enter starts the next request, or sends the retry (asking Retry
	// first where the integration did not), counting a call.
	{phaseIdle, false, "Enter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},
	{phaseSent, false, "Enter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},
	{phaseFailed, false, "Enter", phaseSent, effects{calls: 1, retries: 1, slot: true, lease: leasePass}},
	{phaseRetryable, false, "Enter", phaseSent, effects{calls: 1, retries: 1, slot: true, lease: leasePass}},
	{phaseAwaiting, true, "Enter", phaseSent, effects{calls: 1, retries: 1, failures: 1, slot: true, lease: leasePass}},
	{phaseFinal, false, "Enter", phaseSent, effects{calls: 1, retries: 1, slot: true, lease: leasePass}},
	{phaseSucceeded, false, "Enter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},
	{phaseDone, false, "Enter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},

	// TryEnter is Enter without waiting: a call awaiting a verdict is
	// refused, and nothing changes.
	{phaseIdle, false, "TryEnter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},
	{phaseSent, false, "TryEnter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},
	{phaseFailed, false, "TryEnter", phaseSent, effects{calls: 1, retries: 1, slot: true, lease: leasePass}},
	{phaseRetryable, false, "TryEnter", phaseSent, effects{calls: 1, retries: 1, slot: true, lease: leasePass}},
	{phaseAwaiting, true, "TryEnter", phaseAwaiting, effects{failures: 1, lease: leasePass, err: "*resilience.CircuitOpenError"}},
	{phaseFinal, false, "TryEnter", phaseSent, effects{calls: 1, retries: 1, slot: true, lease: leasePass}},
	{phaseSucceeded, false, "TryEnter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},
	{phaseDone, false, "TryEnter", phaseSent, effects{calls: 1, slot: true, lease: leasePass}},

	// Pace sends an allowed retry (asking Retry first where needed); with
	// breaker_wait it waits for the verdict. A request that ended (its
	// success held for End, or the call's outcome recorded) has no retry
	// to ready: Pace refuses it, sending and recording nothing, so that
	// an SDK that retries anyway sends nothing unpaced. Before an attempt
	// and while one is out it does nothing.
	{phaseIdle, false, "Pace", phaseIdle, effects{}},
	{phaseSent, false, "Pace", phaseSent, effects{slot: true, lease: leasePass}},
	{phaseFailed, false, "Pace", phaseSent, effects{retries: 1, lease: leasePass}},
	{phaseRetryable, false, "Pace", phaseSent, effects{retries: 1, lease: leasePass}},
	{phaseAwaiting, true, "Pace", phaseSent, effects{retries: 1, failures: 1, lease: leasePass}},
	{phaseFinal, false, "Pace", phaseSent, effects{retries: 1, lease: leasePass}},
	{phaseSucceeded, false, "Pace", phaseSucceeded, effects{slot: true, lease: leasePass, err: callEnded}},
	{phaseDone, false, "Pace", phaseDone, effects{lease: leasePass, err: callEnded}},

	// After(nil): a success, held while the slot is.
	{phaseIdle, false, "After(nil)", phaseDone, effects{}},
	{phaseSent, false, "After(nil)", phaseSucceeded, effects{slot: true, lease: leasePass}},
	{phaseFailed, false, "After(nil)", phaseDone, effects{lease: leasePass}},
	{phaseRetryable, false, "After(nil)", phaseDone, effects{retries: 1, lease: leasePass}},
	{phaseAwaiting, true, "After(nil)", phaseDone, effects{retries: 1, lease: leasePass}}, // the success resets the failure
	{phaseFinal, false, "After(nil)", phaseDone, effects{lease: leasePass}},
	{phaseSucceeded, false, "After(nil)", phaseSucceeded, effects{slot: true, lease: leasePass}},
	{phaseDone, false, "After(nil)", phaseDone, effects{lease: leasePass}},

	// After a throttle or a transient error the outcome is open.
	{phaseIdle, false, "After(thr)", phaseFailed, effects{throttled: 1}},
	{phaseSent, false, "After(thr)", phaseFailed, effects{throttled: 1, slot: true, lease: leasePass}},
	{phaseFailed, false, "After(thr)", phaseFailed, effects{throttled: 1, lease: leasePass}},
	{phaseRetryable, false, "After(thr)", phaseFailed, effects{throttled: 1, retries: 1, lease: leasePass}},
	{phaseAwaiting, true, "After(thr)", phaseFailed, effects{throttled: 1, retries: 1, failures: 1, lease: leasePass}},
	{phaseFinal, false, "After(thr)", phaseFailed, effects{throttled: 1, lease: leasePass}},
	{phaseSucceeded, false, "After(thr)", phaseFailed, effects{throttled: 1, slot: true, lease: leasePass}},
	{phaseDone, false, "After(thr)", phaseFailed, effects{throttled: 1, lease: leasePass}},
	{phaseSent, false, "After(tra)", phaseFailed, effects{transient: 1, slot: true, lease: leasePass}},
	{phaseRetryable, false, "After(tra)", phaseFailed, effects{transient: 1, retries: 1, lease: leasePass}},

	// A fatal answer from the provider ends the call and proves the scope
	// reachable: the breaker's failures reset.
	{phaseSent, false, "After(fatal)", phaseFinal, effects{slot: true, lease: leasePass}},
	{phaseAwaiting, true, "After(fatal)", phaseFinal, effects{retries: 1, lease: leasePass}},
	{phaseSucceeded, false, "After(fatal)", phaseFinal, effects{slot: true, lease: leasePass}},

	// Retry allows the retry of an open outcome (a final answer's too,
	// which an SDK may retry), and is a no-op elsewhere.
	{phaseIdle, false, "Retry", phaseIdle, effects{}},
	{phaseSent, false, "Retry", phaseSent, effects{slot: true, lease: leasePass}},
	{phaseFailed, false, "Retry", phaseRetryable, effects{lease: leasePass}},
	{phaseRetryable, false, "Retry", phaseRetryable, effects{lease: leasePass}},
	{phaseAwaiting, true, "Retry", phaseAwaiting, effects{failures: 1, lease: leasePass}},
	{phaseFinal, false, "Retry", phaseRetryable, effects{lease: leasePass}},
	{phaseSucceeded, false, "Retry", phaseSucceeded, effects{slot: true, lease: leasePass}},
	{phaseDone, false, "Retry", phaseDone, effects{lease: leasePass}},
	// One attempt per call: the transient failure counts towards the
	// breaker, and with breaker_wait the call awaits its verdict.
	{phaseFailed, true, "Retry", phaseAwaiting, effects{failures: 1, lease: leasePass}},

	// Resend renews the attempts of a transient failure under
	// breaker_wait only.
	{phaseFailed, false, "Resend", phaseFailed, effects{lease: leasePass, err: noResend}},
	{phaseFailed, true, "Resend", phaseAwaiting, effects{failures: 1, lease: leasePass}},
	{phaseRetryable, false, "Resend", phaseRetryable, effects{lease: leasePass, err: noResend}},
	{phaseAwaiting, true, "Resend", phaseAwaiting, effects{failures: 1, lease: leasePass, err: noResend}},
	{phaseSent, false, "Resend", phaseSent, effects{slot: true, lease: leasePass, err: noResend}},
	{phaseDone, false, "Resend", phaseDone, effects{lease: leasePass, err: noResend}},

	// Release gives the slot back and changes nothing else.
	{phaseSent, false, "Release", phaseSent, effects{lease: leasePass}},
	{phaseSucceeded, false, "Release", phaseSucceeded, effects{lease: leasePass}},
	{phaseDone, false, "Release", phaseDone, effects{lease: leasePass}},
	// After a failure's After, as Do gives the slot back (a caller waiting
	// for it sees the pause the answer set), and after a final answer's.
	{phaseFailed, false, "Release", phaseFailed, effects{lease: leasePass}},
	{phaseFinal, false, "Release", phaseFinal, effects{lease: leasePass}},

	// End closes what is open: a success, or a failure the SDK gave up on.
	{phaseIdle, false, "End(nil)", phaseIdle, effects{}},
	{phaseSent, false, "End(nil)", phaseIdle, effects{}},
	{phaseFailed, false, "End(nil)", phaseIdle, effects{}},
	{phaseRetryable, false, "End(nil)", phaseIdle, effects{retries: 1}},
	{phaseAwaiting, true, "End(nil)", phaseIdle, effects{retries: 1}},
	{phaseFinal, false, "End(nil)", phaseIdle, effects{}},
	{phaseSucceeded, false, "End(nil)", phaseIdle, effects{}},
	{phaseDone, false, "End(nil)", phaseIdle, effects{}},
	{phaseIdle, false, "End(thr)", phaseIdle, effects{throttled: 1, gaveUp: 1, failures: 1}}, // recorded as After would, then stopped
	{phaseSent, false, "End(thr)", phaseIdle, effects{throttled: 1, gaveUp: 1, failures: 1}},
	{phaseFailed, false, "End(thr)", phaseIdle, effects{failures: 1}}, // the open outcome is the transient one
	{phaseRetryable, false, "End(thr)", phaseIdle, effects{retries: 1, failures: 1}},
	{phaseAwaiting, true, "End(thr)", phaseIdle, effects{retries: 1, failures: 2}},
	{phaseFinal, false, "End(thr)", phaseIdle, effects{}},
	{phaseSucceeded, false, "End(thr)", phaseIdle, effects{}}, // the request succeeded; End's error is the caller's
	{phaseDone, false, "End(thr)", phaseIdle, effects{}},

	// EndPanicked closes a call whose code panicked: what is open is lost
	// to the panic, the slot given back, the breaker told nothing (the
	// awaiting call's failure is Retry's, in its setup); a call with no
	// attempt entered, or whose outcome is recorded, records nothing.
	{phaseIdle, false, "EndPanicked", phaseIdle, effects{}},
	{phaseSent, false, "EndPanicked", phaseIdle, effects{panicked: 1}},
	{phaseFailed, false, "EndPanicked", phaseIdle, effects{panicked: 1}},
	{phaseRetryable, false, "EndPanicked", phaseIdle, effects{panicked: 1}},
	{phaseAwaiting, true, "EndPanicked", phaseIdle, effects{panicked: 1, failures: 1}},
	{phaseFinal, false, "EndPanicked", phaseIdle, effects{panicked: 1}},
	{phaseSucceeded, false, "EndPanicked", phaseIdle, effects{panicked: 1}},
	{phaseDone, false, "EndPanicked", phaseIdle, effects{}},

	// EndDenied closes a call the provider's answer denied, for a limit
	// the governor does not pace: what is open is lost as denied, and the
	// answer, which proves the service reachable, resets the breaker's
	// failures (the awaiting call's, Retry's in its setup, too) and counts
	// none; a retry sent without telling After is counted. A call with no
	// outcome open ends as End ends it: a success held for End is
	// recorded, a recorded outcome records nothing more.
	{phaseIdle, false, "EndDenied", phaseIdle, effects{denied: 1}},
	{phaseSent, false, "EndDenied", phaseIdle, effects{denied: 1}},
	{phaseFailed, false, "EndDenied", phaseIdle, effects{denied: 1}},
	{phaseRetryable, false, "EndDenied", phaseIdle, effects{retries: 1, denied: 1}},
	{phaseAwaiting, true, "EndDenied", phaseIdle, effects{retries: 1, denied: 1}},
	{phaseFinal, false, "EndDenied", phaseIdle, effects{denied: 1}},
	{phaseSucceeded, false, "EndDenied", phaseIdle, effects{}},
	{phaseDone, false, "EndDenied", phaseIdle, effects{}},

	// Pauses hold the scope and leave the call as it was.
	{phaseSent, false, "Pause", phaseSent, effects{slot: true, lease: leasePass}},
	{phaseFailed, false, "Pause", phaseFailed, effects{lease: leasePass}},
	{phaseRetryable, false, "PauseAccount", phaseRetryable, effects{lease: leasePass}},
	{phaseDone, false, "PauseAccount", phaseDone, effects{lease: leasePass}},
}

// withAdmit is table with a row for Admit after each of Pace's: Admit
// moves as Pace does (it only takes no token after a throttle).
func withAdmit(table []row) []row {
	out := slices.Clone(table)
	for _, r := range table {
		if r.verb == "Pace" {
			r.verb = "Admit"
			out = append(out, r)
		}
	}
	return out
}

func TestGuardTransitionTable(t *testing.T) {
	covered := map[string]bool{}
	for _, r := range withAdmit(table) {
		name := fmt.Sprintf("%v/%s", r.from, r.verb)
		if r.wait {
			name += "/breaker_wait"
		}
		covered[fmt.Sprintf("%v/%s", r.from, r.verb)] = true
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gd, g, stats := guardAt(t, r.from, r.wait)
				before := g.Summary(stats).Totals
				err := verbs[r.verb](gd)
				got := effectsOf(gd, g, stats, before, err)
				if gd.phase != r.to || got != r.fx {
					t.Errorf("%v --%s--> %v, %v\nwant           %v, %v", r.from, r.verb, gd.phase, got, r.to, r.fx)
				}
				gd.Release()
			})
		})
	}
	// Every phase meets the verbs that matter to it: each of these verbs
	// is driven from every phase.
	for _, v := range []string{"Enter", "TryEnter", "Pace", "Admit", "After(nil)", "After(thr)", "Retry", "End(nil)", "End(thr)", "EndPanicked", "EndDenied"} {
		for p := range numPhases {
			if !covered[fmt.Sprintf("%v/%s", p, v)] {
				t.Errorf("the table does not drive %s from %v", v, p)
			}
		}
	}
}

// TestGuardIllegalTransitionPanics: the one writer of the phase refuses a
// move its table does not list; under the cloudgdebug build the tests use,
// it panics.
func TestGuardIllegalTransitionPanics(t *testing.T) {
	for _, m := range [][2]phase{{phaseIdle, phaseRetryable}, {phaseFailed, phaseSent}, {phaseAwaiting, phaseSent}, {phaseDone, phaseAwaiting}} {
		if legal[m[0]].has(m[1]) {
			t.Errorf("%v -> %v is listed as legal", m[0], m[1])
		}
	}
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		gd := &Guard{}
		gd.to(phaseRetryable)
		return false
	}()
	if panicked != checkPhases {
		t.Fatalf("idle -> retryable panicked: %v; the check is on: %v", panicked, checkPhases)
	}
}

// The lease lent to a nested call, driven. guardLent returns a Guard of
// ec2Vpcs in phaseSent that holds its slot and was let through as the
// half-open breaker's probe, whose probe a call nested in its attempt
// (Begin's context, with the Guard under the governor's key) borrowed and
// answered with answer, recorded as an integration ends it: nil closes the
// breaker, a transient error reopens it, a local error gives no verdict
// (the breaker stays half-open, its lease running), and the nested call
// gives the probe back as it ends: the Guard holds it again, as it did
// before it lent it. The scope is never found dead (which holds its
// tokens back), so that no verb waits for a token.
func guardLent(t *testing.T, answer error) (*Guard, *Governor, *Stats) {
	t.Helper()
	off := 0.0
	g := newGov(t, Config{AWS: ProviderConfig{BreakerDeadSeconds: &off}})
	for range 5 {
		sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return throttle() })
	}
	time.Sleep(time.Minute)
	ctx, stats := WithStats(context.Background())
	gd, _ := g.Begin(ctx, ec2Vpcs)
	if err := gd.Enter(ctx); err != nil || gd.lease != leaseProbe {
		t.Fatalf("the probe: %v, lease %v", err, gd.lease)
	}
	attempt := context.WithValue(ctx, g, gd)
	inner, _ := g.Begin(attempt, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
	if err := inner.Enter(attempt); err != nil {
		t.Fatalf("the nested call: %v", err)
	}
	inner.After(answer)
	inner.End(answer)
	want := leaseLent
	if answer != nil && Classify(answer) == Fatal {
		want = leaseProbe // no verdict: given back
	}
	if gd.phase != phaseSent || gd.lease != want {
		t.Fatalf("setup reached %v with lease %v, want sent, %v", gd.phase, gd.lease, want)
	}
	return gd, g, stats
}

// lentRow is a row of lentTable: the nested call's answer, a verb of the
// enclosing call, and the phase and effects after it.
type lentRow struct {
	nested string // "ok", "failed" or "local"
	verb   string
	to     phase
	fx     effects
}

var nestedAnswers = map[string]func() error{
	"ok":     func() error { return nil },
	"failed": transientErr,
	"local":  func() error { return errors.New("connection reset") },
}

// lentTable states what the enclosing call's verbs do once its probe was
// lent. Its next attempt asks AllowProbe: it is the probe again while the
// breaker is closed or still half-open, refused once the nested call's
// verdict opened it. A nested call that gave no verdict ("local") gave
// the probe back as it ended: the Guard holds it already. What it then records changes the breaker only where
// the nested call gave no verdict, but is recorded all the same (End(nil)
// after "ok" counts a second success): an integration whose nested call
// recorded the attempt leaves it without End, as cloudgazure's
// QueryResources does.
var lentTable = []lentRow{
	{"ok", "Enter", phaseSent, effects{calls: 1, slot: true, lease: leaseProbe}},
	{"ok", "TryEnter", phaseSent, effects{calls: 1, slot: true, lease: leaseProbe}},
	{"ok", "After(nil)", phaseSucceeded, effects{slot: true, lease: leaseLent}},
	{"ok", "Release", phaseSent, effects{lease: leaseLent}},
	{"ok", "End(nil)", phaseIdle, effects{}},

	{"failed", "Enter", phaseDone, effects{rejected: 1, breaker: state.Open, slot: true, err: "*resilience.CircuitOpenError"}},
	{"failed", "TryEnter", phaseSent, effects{breaker: state.Open, slot: true, err: "*resilience.CircuitOpenError"}},
	{"failed", "After(thr)", phaseFailed, effects{throttled: 1, breaker: state.Open, slot: true, lease: leaseLent}},
	{"failed", "Release", phaseSent, effects{breaker: state.Open, lease: leaseLent}},

	{"local", "Enter", phaseSent, effects{calls: 1, breaker: state.HalfOpen, slot: true, lease: leaseProbe}},
	{"local", "TryEnter", phaseSent, effects{calls: 1, breaker: state.HalfOpen, slot: true, lease: leaseProbe}},
	{"local", "End(nil)", phaseIdle, effects{}},                                                                         // its success is the verdict: closed
	{"local", "End(thr)", phaseIdle, effects{throttled: 1, gaveUp: 1, breaker: state.Open}},                             // its failure is the verdict: open
	{"local", "After(thr)", phaseFailed, effects{throttled: 1, breaker: state.HalfOpen, slot: true, lease: leaseProbe}}, // the failure is counted when retrying stops
}

func TestGuardLentLeaseTable(t *testing.T) {
	for _, r := range lentTable {
		t.Run(r.nested+"/"+r.verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gd, g, stats := guardLent(t, nestedAnswers[r.nested]())
				before := g.Summary(stats).Totals
				err := verbs[r.verb](gd)
				got := effectsOf(gd, g, stats, before, err)
				if gd.phase != r.to || got != r.fx {
					t.Errorf("lent after %s: sent --%s--> %v, %v\nwant                  %v, %v", r.nested, r.verb, gd.phase, got, r.to, r.fx)
				}
				gd.Release()
			})
		})
	}
}
