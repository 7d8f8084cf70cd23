package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// TestQueuedCountsCallersNotLeasedTokens: Inspect's Queued is the callers
// waiting for a token, as in one process; the tokens the process's lease
// borrowed from Redis and no caller took yet are not callers, though the
// bucket's balance in Redis went below zero for them. Callers that do
// wait for their tokens are counted.
func TestQueuedCountsCallersNotLeasedTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 1,000 rps with a burst of 10: a lease of 64 tokens, 54 of them
		// after the burst.
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 10}}}}
		p := newProcess(t, be, prefix, cfg)
		if err := p.do(t, vpcs, ok); err != nil { // borrows a lease
			t.Fatal(err)
		}
		if s := p.gov.Inspect(vpcs); s.Queued != 0 || s.Leaf.Queued() != 0 {
			t.Fatalf("one call done, none waiting: Queued %d, the leaf's %d (tokens %.1f); want 0", s.Queued, s.Leaf.Queued(), s.Leaf.Tokens)
		}

		// 2 rps with a burst of 1: a lease of one token; of 4 callers at
		// once, 3 wait for their tokens (0.5, 1 and 1.5 s).
		slow := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 2, Burst: 1}}}}
		q := newProcess(t, be, uniquePrefix(t), slow)
		done := make(chan struct{}, 4)
		for range 4 {
			go func() {
				q.do(t, vpcs, ok)
				done <- struct{}{}
			}()
		}
		<-done // the one at once
		time.Sleep(100 * time.Millisecond)
		if s := q.gov.Inspect(vpcs); s.Queued != 3 {
			t.Fatalf("3 callers waiting for their tokens: Queued %d (tokens %.2f); want 3", s.Queued, s.Leaf.Tokens)
		}
		for range 3 {
			<-done
		}
	})
}
