//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A call whose retry the max wait refused was sent and throttled before
// it was refused: its line in the ledger says so, " after " and the answer
// it would have retried, as the lines of a call a deadline, an open
// breaker, the empty budget or its context stopped between retries do. It
// used to read as a call refused before it was sent ("no rate token now
// for <scope>; retry in 30s"), the answer nowhere in it. A first call the
// max wait refused was sent nothing, and its line names no answer.
func TestARefusedRetrysLedgerLineNamesTheAnswer(t *testing.T) {
	const answer = " after throttled: Throttling: Rate exceeded"
	for _, tc := range []struct {
		name string
		fn   func(context.Context) error
		want string // in the reason; "" for none of the answer
	}{
		// The provider's Retry-After (30 s) is past the max wait.
		{"hint past the max wait", func(context.Context) error { return throttleAfter(30 * time.Second) }, answer},
		// The retry's fresh token, at the halved rate, is past the max wait.
		{"token past the max wait", func(context.Context) error { return throttle() }, answer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, oneRPS)
				ctx, ledger := WithLedger(context.Background(), "secrets")
				err := Do(WithMaxWait(ctx, 100*time.Millisecond), secrets, tc.fn, WithGovernor(g))
				var ww *WouldWaitError
				if !errors.As(err, &ww) || ww.Last == nil {
					t.Fatalf("err %v, want a refused retry (a *WouldWaitError with its last answer)", err)
				}
				r := ledger.Reasons()
				if ledger.Count(LossRefused) != 1 || len(r) != 1 {
					t.Fatalf("ledger %q (%d refused), want one refused call", r, ledger.Count(LossRefused))
				}
				if !strings.HasSuffix(r[0], tc.want) {
					t.Errorf("the ledger's line %q does not end with %q: it does not say the call was sent and throttled", r[0], tc.want)
				}
			})
		})
	}
	t.Run("first call", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, oneRPS)
			ok := func(context.Context) error { return nil }
			Do(context.Background(), secrets, ok, WithGovernor(g)) // the burst
			ctx, ledger := WithLedger(context.Background(), "secrets")
			err := Do(WithMaxWait(ctx, 100*time.Millisecond), secrets, ok, WithGovernor(g))
			var ww *WouldWaitError
			if !errors.As(err, &ww) || ww.Last != nil {
				t.Fatalf("err %v, want a first call refused before it was sent", err)
			}
			r := ledger.Reasons()
			if len(r) != 1 || strings.Contains(r[0], " after ") {
				t.Errorf("ledger %q, want one line naming no answer", r)
			}
		})
	})
}
