//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// unsentAttempt begins a call of ec2Vpcs with ctx and enters its attempt,
// which fails before it is sent (a credential that could not be had): the
// Guard stays in its attempt, its answer not reported, and gives its slot
// back for the integration's backoff, as cloudghttp's resend does.
func unsentAttempt(t *testing.T, g *Governor, ctx context.Context) *Guard {
	t.Helper()
	gd, err := g.Begin(ctx, ec2Vpcs)
	if err != nil {
		t.Fatal(err)
	}
	if err := gd.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	gd.Release()
	return gd
}

// A resend that gets no slot within the call's max wait is refused as
// any call whose wait for a slot would pass it is, before it is sent: a
// *WouldWaitError matching ErrNoSlot, recorded as refused, and End records
// nothing more.
func TestAResendWithNoSlotWithinTheMaxWaitIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		r := newRun(context.Background())
		ctx := WithMaxWait(r.ctx, 500*time.Millisecond)
		gd := unsentAttempt(t, g, ctx)
		other, err := g.Begin(context.Background(), ec2Subnets)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		readied := time.Now()
		err = gd.readyResend(ctx)
		if !errors.Is(err, ErrNoSlot) || time.Since(readied) != 500*time.Millisecond {
			t.Errorf("a resend with the only slot held elsewhere and a max wait of 0.5s: %v after %v; want ErrNoSlot after 0.5s", err, time.Since(readied))
		}
		gd.End(err)
		other.After(nil)
		other.End(nil)
		r.lost(t, g, LossRefused, 1)
	})
}
