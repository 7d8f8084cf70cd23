package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
)

// The goodput controller's success counts made while Redis does not
// answer (on the local limits) reach Redis when it answers again, each
// at its own time, so that the first congestion event after an outage
// measures what the fleet was served during it. Before, they were left
// out: none of the 30 successes counted during an outage reached Redis.
func TestSuccessesCountedDuringAnOutageAreWrittenBack(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		prefix := uniquePrefix(t)
		p := newProcess(t, at(px.Addr()), prefix, goodputCfg)
		fallsBack(p.store) // the outage: the proxy goes down under it
		bk := p.store.Bucket(vpcsKey, goodputSpec, 0)
		bk.TryReserve(0) // the bucket's hash: counting starts
		px.Down()
		waitFor(t, 2*time.Second, "local limits", func() bool { return p.store.Stats().Degraded })
		for range 30 {
			bk.Success(0)
		}
		bk.Throttle(0, 0)                  // on the local limits
		time.Sleep(3 * bucket.GoodputSlot) // their counts would have gone by now
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Second, "back on the shared state", func() bool { return !p.store.Stats().Degraded })
		time.Sleep(3 * bucket.GoodputSlot)
		g := &sharedGoodput{rdb: newProcess(t, be, prefix, goodputCfg), key: prefix + ":{" + vpcsKey + "}:bucket"}
		if n := g.field(t, "gcur") + g.field(t, "gprev"); n != 30 {
			t.Fatalf("the bucket's success count after 30 successes while Redis did not answer, Redis answering again: %v, want 30", n)
		}
	})
}
