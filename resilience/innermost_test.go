package resilience

import (
	"context"
	"testing"
)

// A context carries one Stats and one Ledger: WithStats or WithLedger on
// a context that has one replaces it for the calls made with the new
// context, and the outer one sees none of them (the godoc of both says
// so). The governor's lifetime stats count every call.
func TestTheInnermostStatsAndLedgerTakeTheCalls(t *testing.T) {
	g := newGov(t, Config{})
	outer, outerStats := WithStats(context.Background())
	outer, outerLedger := WithLedger(outer, "outer")
	inner, innerStats := WithStats(outer)
	inner, innerLedger := WithLedger(inner, "inner")
	n := 0
	Do(inner, ec2Vpcs, always(&n, transientErr()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
	if in, out := g.Summary(innerStats).Totals, g.Summary(outerStats).Totals; in.Calls != 1 || in.Failed != 1 || out.Calls != 0 {
		t.Errorf("inner stats %d calls, %d failed; outer %d calls: want 1, 1 and 0", in.Calls, in.Failed, out.Calls)
	}
	if !innerLedger.Degraded() || outerLedger.Degraded() {
		t.Errorf("inner ledger degraded %v, outer %v: want the call's loss in the inner one alone", innerLedger.Degraded(), outerLedger.Degraded())
	}
	if life := g.Summary(nil).Totals; life.Calls != 1 {
		t.Errorf("the lifetime stats count %d calls, want 1", life.Calls)
	}
}
