package test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A process borrows tokens a lease at a time: fewer round trips, the same
// pacing, and a bounded number of tokens spent after another process's
// throttle.

func TestLeasesSaveRoundTripsAndKeepPacing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 500, Burst: 1}}}}
		p := newProcess(t, be, prefix, cfg)
		start := time.Now()
		for range 500 {
			if err := p.do(t, vpcs, ok); err != nil {
				t.Fatal(err)
			}
		}
		el := time.Since(start)
		st := p.store.Stats()
		if st.LeaseMisses > 100 || st.LeaseHits < 400 {
			t.Fatalf("%d lease misses, %d hits for 500 calls: the leases do not save round trips", st.LeaseMisses, st.LeaseHits)
		}
		// 500 calls at 500 rps with a burst of one: about a second, never
		// much less (leases are sized from the rate, they do not add any).
		if el < 850*time.Millisecond {
			t.Fatalf("500 calls at 500 rps took %v: pacing lost", el)
		}
		t.Logf("%s: 500 calls in %v, %d Redis calls (%d lease misses, %d hits)", be.name, el, st.RedisCalls, st.LeaseMisses, st.LeaseHits)
	})
}

// TestWhatALeaseTrades measures what leases trade away: after another
// process's throttle halves the fleet's rate, a process may still spend
// the tokens it borrowed (at most its lease), at their old times.
func TestWhatALeaseTrades(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, maxLease := range []int{64, 8, 1} {
			prefix := uniquePrefix(t)
			spec := state.BucketSpec{Rate: 1000, Burst: 1000, Floor: 1, Adaptive: true}
			// A counted the live processes before B started, and does not
			// count them again: its lease is the whole of maxLease.
			a := newProcess(t, be, prefix, resilience.Config{}, fleet.WithMaxLease(maxLease), fleet.WithHeartbeat(time.Hour))
			b := newProcess(t, be, prefix, resilience.Config{}, fleet.WithMaxLease(maxLease))
			ba := a.store.Bucket(vpcsKey, spec, 0)
			bb := b.store.Bucket(vpcsKey, spec, 0)
			ba.Reserve(0) // A borrows a lease
			bb.Throttle(0, 0)
			before := a.store.Stats().LeaseHits
			for range maxLease {
				ba.Reserve(0)
			}
			spent := a.store.Stats().LeaseHits - before
			if spent > int64(maxLease-1) {
				t.Fatalf("lease %d: %d tokens spent after the throttle, more than the lease", maxLease, spent)
			}
			if maxLease > 1 && spent == 0 {
				t.Fatalf("lease %d: no token spent from the lease after the throttle (the trade the test measures)", maxLease)
			}
			t.Logf("%s: lease of %d: %d tokens spent after another process's throttle", be.name, maxLease, spent)
		}
	})
}

// fleet.WithProcessID names the process in the heartbeat set; fleet.WithLeaseWindow
// sizes the lease: 500 rps over a 20 ms window is 10 tokens a lease.
func TestProcessIDAndLeaseWindow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{}, fleet.WithProcessID("collector-7"), fleet.WithLeaseWindow(20*time.Millisecond))
		members, err := p.rdb.ZRange(context.Background(), prefix+":procs", 0, -1).Result()
		if err != nil || len(members) != 1 || members[0] != "collector-7" {
			t.Fatalf("heartbeat set %v, %v", members, err)
		}
		b := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 500, Burst: 500, Floor: 1, Adaptive: true}, 0)
		before := p.store.Stats()
		for range 30 {
			b.Reserve(0)
		}
		st := p.store.Stats()
		if misses, hits := st.LeaseMisses-before.LeaseMisses, st.LeaseHits-before.LeaseHits; misses != 3 || hits != 27 {
			t.Fatalf("%d lease requests, %d hits for 30 tokens; want 3 and 27 (leases of 10)", misses, hits)
		}
	})
}
