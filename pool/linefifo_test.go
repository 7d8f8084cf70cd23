//go:build go1.25

package pool

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A queue told no slot, waiting for one before queues of its account were
// held back for a first call to come (holdBack), takes the slot a task's
// end frees before them: the line the held-back queues wait in does not
// let one asked later start ahead of it. Here an account with two slots:
// x's call holds one, a call outside the pool the other, and a is told no
// slot; the outside call ends unseen, and d's task (working 5 ms before
// its call) is started for its slot, so that b and c, asked while d's
// call is to come, are held back for it. Then x's call ends: a, in line
// for a slot since before b, is the one whose call begins. Before, b led
// the line (unholdBack) and a waited behind it without asking; b, told of
// one slot more than d's call would take, took it.
func TestAQueueToldNoSlotGoesBeforeTheQueuesHeldBackAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 2)
		outside := takeSlot(t, g)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		var mu sync.Mutex
		var began []string
		release := map[string]chan struct{}{}
		submit := func(op string, work time.Duration) {
			sc := scope(op)
			rel := make(chan struct{})
			release[op] = rel // written here, read by the task through rel only
			p.Go(ctx, sc, func(ctx context.Context) error {
				time.Sleep(work)
				return resilience.Do(ctx, sc, func(context.Context) error {
					mu.Lock()
					began = append(began, op)
					mu.Unlock()
					<-rel
					return nil
				}, resilience.WithGovernor(g))
			})
			synctest.Wait()
		}
		submit("x", 0)
		submit("a", 0) // told no slot
		outside.Release()
		outside.End(nil)
		submit("d", 5*time.Millisecond) // started for the slot the outside call freed, its call to come
		submit("b", 0)                  // held back for d's call
		submit("c", 0)                  // and behind b
		close(release["x"])
		synctest.Wait()
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		got := slices.Clone(began)
		mu.Unlock()
		for _, op := range []string{"a", "b", "c", "d"} {
			close(release[op])
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		ia, ib := slices.Index(got, "a"), slices.Index(got, "b")
		if ia < 0 || ib >= 0 && ib < ia {
			t.Fatalf("the account's calls began in the order %v (20 ms after x's ended); want a's, in line for a slot since before b was held back, before b's", got)
		}
	})
}
