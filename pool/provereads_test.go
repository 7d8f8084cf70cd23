//go:build go1.25

package pool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A queue whose scope has no token free, looked at to prove its scope
// dead or alive (see Pool.proves), reads the scope's buckets once per
// ask, as Governor.Survey's Look reads Delay's answer and the snapshot
// together, not once for Delay and again for Inspect: with a fleet's
// store each read is a round trip, and every queue told no token twice
// in a row is looked at once a second, a slow scope whose calls never
// fail too. Here 20 tasks of a scope of 0.2 rps, burst 1, whose calls
// succeed, on two workers, on a store that counts its reads: the scope's
// leaf bucket (which the calls take from without reading it) is read at
// most once per ask of the pool.
func TestALookForAProofReadsTheBucketsOncePerAsk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newReadStore()
		g := newGov(t, 0.2, resilience.Config{}, resilience.WithStateStore(store))
		slow := scope("slow")
		p, pctx := New(context.Background(), Workers(2), WithGovernor(g))
		store.counts()
		for range 20 {
			p.Go(pctx, slow, call(g, slow, 10*time.Millisecond))
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		buckets, _ := store.counts()
		p.mu.Lock()
		asks := int(p.turns)
		p.mu.Unlock()
		leaf := buckets["aws/123456789012/eu-west-1/svc/slow"]
		if leaf == 0 || leaf > asks {
			t.Fatalf("the scope's leaf bucket was read %d times in %d asks of the pool (%v); want once per ask at most", leaf, asks, buckets)
		}
		t.Logf("%d leaf reads in %d asks (%v)", leaf, asks, buckets)
	})
}
