//go:build go1.25

package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/observe"
)

// A call the provider's answer denies for a limit the governor does not
// pace (another quota than the scope's, spent), which the integration
// ends with EndDenied, is lost as denied: the run's Stats count it in its
// scope (Denied, Lost), the scope's line says so, the totals' JSON
// carries it, the task's Ledger is degraded with the answer as its
// reason, and an observer hears a Lost event. Nothing slows the scope:
// its rate stays at its ceiling, no pause is set, no throttle is counted,
// and its breaker counts no failure. End with the same answer records
// none of it: the call reads as a success (calls 1, nothing lost).
func TestEndDeniedCountsTheCallLostAndSlowsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var lost []observe.Event
		g := newGov(t, Config{}, WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.Lost {
				mu.Lock()
				lost = append(lost, e)
				mu.Unlock()
			}
		})))
		ctx, stats := WithStats(context.Background())
		ctx, ledger := WithLedger(ctx, "vpcs")
		gd, _ := g.Begin(ctx, ec2Vpcs)
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		answer := accessDenied()
		gd.Release()
		if kind := gd.After(answer); kind != Fatal {
			t.Fatalf("After(%v) = %v, want FATAL", answer, kind)
		}
		gd.EndDenied(answer)

		sum := g.Summary(stats)
		c := sum.Scopes[serviceScope(ec2Vpcs)]
		if c.Calls != 1 || c.Denied != 1 || c.Lost() != 1 || c.Throttled != 0 || c.GaveUp != 0 || c.BreakerTrips != 0 {
			t.Errorf("the scope's stats %+v, want 1 call, lost as denied, nothing throttled or given up", c)
		}
		if want := serviceScope(ec2Vpcs).String() + ": 1 call denied"; len(sum.Messages) != 1 || sum.Messages[0] != want {
			t.Errorf("messages %q, want [%q]", sum.Messages, want)
		}
		if b, err := json.Marshal(sum); err != nil || !strings.Contains(string(b), `"denied":1`) {
			t.Errorf("the summary's JSON %s (%v) does not carry denied: 1", b, err)
		}
		want := "throttled: 1 call(s) denied (by the provider, for a quota not paced) (" + ec2Vpcs.String() + ": " + answer.Error() + ")"
		if n := ledger.Count(LossDenied); n != 1 || ledger.Describe() != want {
			t.Errorf("the ledger counts %d denied: %q, want 1: %q", n, ledger.Describe(), want)
		}
		mu.Lock()
		if len(lost) != 1 || lost[0].Loss != "denied" || lost[0].Reason != "quota" || lost[0].Err != answer {
			t.Errorf("Lost events %+v, want one, denied for quota, with the answer", lost)
		}
		mu.Unlock()
		s := g.Inspect(ec2Vpcs)
		if s.Leaf.Rate != s.Leaf.Ceiling || s.Leaf.Paused != 0 || s.Breaker.Failures != 0 {
			t.Errorf("the scope at %.1f of %.1f rps, paused %v, %d breaker failures: want it untouched", s.Leaf.Rate, s.Leaf.Ceiling, s.Leaf.Paused, s.Breaker.Failures)
		}

		// End with the same answer: a fatal answer, no loss.
		ctx2, stats2 := WithStats(context.Background())
		gd, _ = g.Begin(ctx2, ec2Vpcs)
		_ = gd.Enter(ctx2)
		gd.Release()
		gd.After(answer)
		gd.End(answer)
		if c := g.Summary(stats2).Scopes[serviceScope(ec2Vpcs)]; c.Calls != 1 || c.Lost() != 0 {
			t.Errorf("End(answer): stats %+v, want 1 call and nothing lost", c)
		}
	})
}

// EndDenied with what is no provider's answer (nil, a local error,
// cloudg's own refusal) ends the call as End does, denying nothing: a nil
// is a success, a local error is lost as errored.
func TestEndDeniedOfNoAnswerIsEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		errored int64
	}{
		{"nil", nil, 0},
		{"a local error", errors.New("connection closed"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ctx, stats := WithStats(context.Background())
				gd, _ := g.Begin(ctx, ec2Vpcs)
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.Release()
				gd.After(tc.err)
				gd.EndDenied(tc.err)
				if c := g.Summary(stats).Totals; c.Denied != 0 || c.Errored != tc.errored || c.Lost() != tc.errored {
					t.Errorf("totals %+v, want nothing denied, %d errored", c, tc.errored)
				}
			})
		})
	}
}

// The Ledger's words for a call the provider denied tell it from one the
// governor refused (LossRefused: not sent, its wait too long): a reader
// of "2 call(s) refused (...), 1 call(s) denied (...)" must not find the
// denial called a refusal too.
func TestLedgerTellsDeniedFromRefused(t *testing.T) {
	var l Ledger
	l.Record(LossDenied, "")
	if d := l.Describe(); strings.Contains(d, "refus") {
		t.Errorf("Describe of a denied call: %q, which speaks of a refusal, as refused calls are described", d)
	}
}
