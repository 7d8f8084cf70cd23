//go:build go1.26

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A provider that waits for its breakers' verdicts (breaker_wait) loses
// no call to a breaker that opens while the call waits for its token:
// the call, woken by the breaker's change, waits for the verdict within
// its deadline, and goes. (The wake that ends a dead scope's waiting
// calls refuses it instead, ignoring breaker_wait: the simulator's
// outage scenario, TestNoCallLostToTheOutage in package sim, loses calls
// since.)
func TestBreakerWaitCallWokenByTheBreakerWaitsForTheVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 0.1, Burst: 1}}}})
		n := 0
		if err := Do(context.Background(), ec2Vpcs, always(&n, nil), WithGovernor(g)); err != nil {
			t.Fatal(err) // takes the burst: the next token is 10 s away
		}
		r := newRun(context.Background())
		done := make(chan error, 1)
		go func() { done <- Do(r.ctx, ec2Vpcs, always(&n, nil), WithGovernor(g)) }()
		synctest.Wait() // waiting for its token

		// Another call of the scope fails, sent by an SDK without Enter:
		// the breaker (threshold 1) opens.
		time.Sleep(time.Second)
		other, _ := g.Begin(context.Background(), ec2Vpcs)
		other.After(transientErr())
		other.End(transientErr())
		if s := g.Inspect(ec2Vpcs).Breaker.State.String(); s != "open" {
			t.Fatalf("breaker %s, want open", s)
		}

		if err := <-done; err != nil || n != 2 {
			t.Fatalf("the waiting call: %v after %d sends; want it to wait for the verdict and succeed", err, n)
		}
		r.lost(t, g, LossSkipped, 0)
	})
}
