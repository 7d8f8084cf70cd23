//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// admissionRec is an Admission that keeps what the governor told it.
type admissionRec struct {
	decided  int
	deferred []error
	waits    []time.Duration
}

func (a *admissionRec) Decided() { a.decided++ }
func (a *admissionRec) Deferred(wait time.Duration, err error) {
	a.deferred = append(a.deferred, err)
	a.waits = append(a.waits, wait)
}

// A scheduler's first call that may not wait for an open breaker's
// verdict (breaker_wait) is deferred with a *WouldWaitError whose check
// is the breaker: errors.Is finds ErrCircuitOpen, and its message names
// the breaker and its wait, not a rate token.
func TestDeferredByTheBreakerSaysTheCircuitIsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true}})
		n := 0
		for range 5 { // five throttles open the breaker for 60 s
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		var a admissionRec
		ctx, ledger := WithLedger(context.Background(), "task")
		err := Do(WithAdmission(ctx, &a, time.Second), iamUsers, always(&n, nil), WithGovernor(g))
		var ww *WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, ErrCircuitOpen) || errors.Is(err, ErrNoToken) {
			t.Fatalf("the first call under an admission of 1 s, breaker open for 60 s: %T %v", err, err)
		}
		const want = "circuit open now for aws/123456789012/*/iam/ListUsers; retry in 60s"
		if msg := err.Error(); msg != want || strings.Contains(msg, "rate token") {
			t.Fatalf("message %q, want %q", msg, want)
		}
		if len(a.deferred) != 1 || a.deferred[0] != err || a.waits[0] != 60*time.Second || a.decided != 0 || ledger.Lost() != 0 {
			t.Fatalf("deferred %v after %v, decided %d, %d lost", a.deferred, a.waits, a.decided, ledger.Lost())
		}
	})
}
