package test

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A shared bucket gives its burst as the in-process bucket does: the
// tokens its stored balance holds are usable at once, whether they come
// one at a time from Redis or in a lease, and the tokens after them are
// paced at the fleet's rate.

// TestASharedBurstLeavesTogether: at 10 rps with a burst of 100, a fresh
// bucket's first 20 tokens are usable at once (an in-process bucket gives
// 20 waits of 0), one Redis request each (a lease of one token).
func TestASharedBurstLeavesTogether(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{})
		b := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 10, Burst: 100}, 0)
		var waits []time.Duration
		start := time.Now()
		for range 20 {
			waits = append(waits, b.Reserve(0))
		}
		for i, w := range waits {
			if w > 0 {
				t.Fatalf("token %d of a full bucket's burst waits %v (all waits: %v)", i, w, waits)
			}
		}
		n := b.Snapshot(0).Tokens
		refilled := time.Since(start).Seconds() * 10 // while the test talked to Redis
		if n < 80-0.01 || n > 80+refilled+0.5 {
			t.Fatalf("%.2f tokens left in Redis after 20 of 100 (%.2f refilled), want 80", n, refilled)
		}
	})
}

// TestALeasedBurstLeavesTogether: at 1,000 rps with a burst of 1,000, a
// lease holds 64 tokens of the full bucket's balance: the 200 tokens of
// three leases and more are all usable at once, not handed out a
// millisecond apart; a TryReserve's token does not delay the next one.
func TestALeasedBurstLeavesTogether(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{})
		b := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 1000, Burst: 1000}, 0)
		if !b.TryReserve(0) {
			t.Fatal("TryReserve found a full bucket empty")
		}
		late := 0
		var worst time.Duration
		for range 200 {
			if w := b.Reserve(0); w > 0 {
				late++
				worst = max(worst, w)
			}
		}
		if late > 0 {
			t.Fatalf("%d of 200 tokens of a full bucket's burst of 1000 wait, up to %v", late, worst)
		}
		if st := p.store.Stats(); st.LeaseHits < 150 {
			t.Fatalf("%d lease hits for 200 tokens: the leases were not used", st.LeaseHits)
		}
	})
}

// TestAfterTheBurstTheFleetKeepsTheRate: two processes share 20 rps with a
// burst of 20, 8 callers each, reserving as fast as they can. The fleet's
// first 20 tokens are usable at once (20 waits of 0, however long the
// round trips to Redis took: on miniredis under the race detector the
// 20th came back up to 134 ms after the start); after them the fleet's
// tokens are paced at 20 rps: the n-th after the burst no sooner than
// n / 20 s after the start (less a few ms of round trips), and no
// one-second window holds more than the rate, the burst and a token of
// phase.
func TestAfterTheBurstTheFleetKeepsTheRate(t *testing.T) {
	const (
		rate  = 20
		burst = 20
		total = 80
	)
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		spec := state.BucketSpec{Rate: rate, Burst: burst}
		a := newProcess(t, be, prefix, resilience.Config{}, fleet.WithHeartbeat(50*time.Millisecond))
		b := newProcess(t, be, prefix, resilience.Config{}, fleet.WithHeartbeat(50*time.Millisecond))
		time.Sleep(150 * time.Millisecond) // both count two live processes
		buckets := []state.Bucket{a.store.Bucket(vpcsKey, spec, 0), b.store.Bucket(vpcsKey, spec, 0)}
		var mu sync.Mutex
		var at []time.Time
		now := 0 // the Reserves that waited 0
		var wg sync.WaitGroup
		start := time.Now()
		for i := range 16 {
			bk := buckets[i%2]
			wg.Go(func() {
				for {
					mu.Lock()
					if len(at) >= total {
						mu.Unlock()
						return
					}
					mu.Unlock()
					w := bk.Reserve(0)
					u := time.Now().Add(w)
					mu.Lock()
					at = append(at, u)
					if w == 0 {
						now++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
		const slack = 30 * time.Millisecond // round trips on a loaded machine
		if now < burst {
			t.Errorf("%d of the fleet's tokens usable at once, want the burst's %d", now, burst)
		}
		for n := burst; n < len(at); n++ {
			want := time.Duration(n-burst+1) * time.Second / rate
			if d := at[n].Sub(start); d < want-slack {
				t.Errorf("token %d usable %v after the start, before the rate allows it (%v)", n+1, d, want)
				break
			}
		}
		if w := maxInWindow(at, at[0], at[len(at)-1]); w > rate+burst+1 {
			t.Errorf("%d tokens in one second, more than the rate, the burst and a token of phase (%d)", w, rate+burst+1)
		}
		t.Logf("%s: %d tokens, %d usable at once; the %d-th usable %v after the start, the last %v", be.name, len(at), now, burst,
			at[burst-1].Sub(start).Round(time.Millisecond), at[len(at)-1].Sub(start).Round(time.Millisecond))
	})
}
