package test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/state"
)

// The write-backs of several processes' throttles of one outage leave the
// fleet's rate at what the processes were sending together on their local
// limits, not at a product of every process's halvings. Three processes
// of a fleet of three (WithExpectedProcesses(3)) each run at a third of
// the fleet's 20 rps while Redis does not answer; they are throttled at
// different times (one once, the two others twice each, their events 1.2 s
// apart), which leaves their local limits at 3.33, 1.67 and 1.67 rps,
// 6.67 together. As Redis comes back, each writes back its events. The
// fleet's rate must end no lower than that sum (each process's loss on its
// own share counts once), and no higher than the larger of the sum and the
// local rate of the least throttled process scaled back to the fleet (its
// rate times three, 10): a write-back never lowers the fleet's rate below
// what the process's own local limits say of the fleet. (Each event
// halved the fleet's whole rate: 20 rps to 0.625, a tenth of the sum.)
// The processes come back in the order of their throttles, or the other
// way round: the result is the same.
func TestSeveralProcessesThrottlesOfAnOutageAddUpToTheirLocalRates(t *testing.T) {
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}} {
		t.Run(fmt.Sprint("back in the order ", order), func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) { addUp(t, be, order) })
		})
	}
}

// addUp runs TestSeveralProcessesThrottlesOfAnOutageAddUpToTheirLocalRates
// on be, the processes coming back in order.
func addUp(t *testing.T, be backend, order []int) {
	prefix := uniquePrefix(t)
	spec := state.BucketSpec{Rate: 20, Burst: 8, Adaptive: true}
	const n = 3
	var pxs []*redisproxy.Proxy
	var stores []*fleet.Store
	var buckets []state.Bucket
	for i := range n {
		px, url := proxied(t, be)
		// The write-backs of one outage make one round within three of the
		// first one's heartbeats. The processes come back one after the
		// other here, each once the one before is back, which takes one or
		// two heartbeats each (a probe on a connection the proxy dropped
		// fails first): the first back has a heartbeat three times longer,
		// so that the others are back within its round.
		heartbeat := 300 * time.Millisecond
		if i == order[0] {
			heartbeat *= 3
		}
		s, err := fleet.Open(url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(heartbeat),
			fleet.WithTimeout(100*time.Millisecond), fleet.WithExpectedProcesses(n))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		b := s.Bucket(vpcsKey, spec, 0)
		b.Reserve(0) // the fleet's bucket, at 20 rps
		pxs, stores, buckets = append(pxs, px), append(stores, s), append(buckets, b)
	}
	for i, px := range pxs {
		px.Down()
		waitFor(t, 5*time.Second, "on local limits", func() bool { return stores[i].Stats().Degraded })
	}
	// Process 0 throttled at 0 s, process 1 at 1.2 and 2.4 s, process
	// 2 at 3.6 and 4.8 s.
	start := time.Now()
	for k, who := range []int{0, 1, 1, 2, 2} {
		time.Sleep(time.Duration(k)*1200*time.Millisecond - time.Since(start))
		buckets[who].Throttle(time.Since(start), 0)
	}
	var sum, most float64
	for i, b := range buckets {
		r := b.Snapshot(time.Since(start)).Rate
		if want := []float64{20.0 / 3 / 2, 20.0 / 3 / 4, 20.0 / 3 / 4}[i]; math.Abs(r-want) > 1e-9 {
			t.Fatalf("process %d's local limits after its throttles: %v rps, want %v", i, r, want)
		}
		sum += r
		most = math.Max(most, n*r)
	}
	for _, i := range order { // back one after the other, each writing back its throttles first
		if err := pxs[i].Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !stores[i].Stats().Degraded })
	}
	got := buckets[0].Snapshot(0).Rate
	if stores[0].Stats().Degraded {
		t.Fatal("the fleet's rate was read on local limits")
	}
	t.Logf("local rates %.4g together (the least throttled one's times 3: %.4g); the fleet's rate, all written back: %.4g", sum, most, got)
	if got < sum*(1-1e-9) || got > math.Max(sum, most)*(1+1e-9) {
		t.Errorf("3 processes throttled during an outage to %.3g rps together on their local limits, all written back: the fleet's rate %.4g rps, want between their sum %.4g and %.4g (the least throttled one's local rate times 3)",
			sum, got, sum, math.Max(sum, most))
	}
}

// An outage's write-back tells the rate the local limits reached as Redis
// answers again, whatever they climbed back to after their throttles: a
// process counted alone (the fleet's 100 rps its share), throttled once
// (to 50), then given two increases of a step of 5 rps before Redis came
// back (to 60), leaves the fleet's rate at 60, not at the 50 its throttle
// alone leaves. (The events alone were written back: 50.)
func TestAnOutagesWriteBackTellsWhereTheLocalLimitsClimbedBack(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, ab, ob := throttleScene(t, be)
		px.RefuseNext(loading) // an outage
		ab.Throttle(0, 0)
		if !a.Stats().Degraded {
			t.Fatal("a throttle Redis did not run (LOADING): not on local limits")
		}
		ab.Success(5 * time.Second)
		ab.Success(10 * time.Second)
		if r := ab.Snapshot(10 * time.Second).Rate; math.Abs(r-60) > 1e-9 {
			t.Fatalf("a throttle, then two increases, during an outage: the local limits' rate %v, want 60", r)
		}
		a.Close() // writes back what the heartbeat has not yet
		if got := ob.Snapshot(0).Rate; math.Abs(got-60) > 1e-9 {
			t.Errorf("a process alone throttled from 100 rps to 50, then back to 60, during an outage, then closed: the fleet's rate %v rps, want 60 (where its local limits climbed back)", got)
		}
	})
}

// A round of write-backs that Redis holds is validated as the rest of the
// bucket's state is: one the local settings could not have written (here a
// mean far below the floor: a million write-backs that told nothing) counts
// as absent, and the write-back starts a round of its own. A process alone,
// throttled during an outage from 100 rps to 50, leaves the fleet's rate at
// 50, not at the floor such a round's mean would leave.
func TestAnInvalidRoundOfWriteBacksCountsAsAbsent(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		// throttleScene's, on a prefix of the test's own: the key is known.
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a, err := fleet.Open(url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		o, err := fleet.Open(be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		spec := state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}
		ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0)
		o.Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", spec, 0).Throttle(0, 0) // Redis holds the scripts
		rdb := be.client()
		defer rdb.Close()
		ctx := context.Background()
		key := prefix + ":{" + vpcsKey + "}:bucket"
		ldec, err := rdb.HGet(ctx, key, "ldec").Result()
		if err != nil {
			t.Fatal(err)
		}
		end := strconv.FormatInt(time.Now().Add(time.Minute).UnixMicro(), 10)
		if err := rdb.HSet(ctx, key, "wbase", "100", "wsum", "0", "wn", "1000000", "wend", end, "wdec", ldec).Err(); err != nil {
			t.Fatal(err)
		}
		px.RefuseNext(loading) // an outage
		ab.Throttle(0, 0)
		if !a.Stats().Degraded {
			t.Fatal("a throttle Redis did not run (LOADING): not on local limits")
		}
		a.Close() // writes back what the heartbeat has not yet
		if got := ob.Snapshot(0).Rate; got != 50 {
			t.Errorf("a round of a million write-backs that told nothing in Redis, then a process alone throttled from 100 rps to 50 during an outage: the fleet's rate %v rps, want 50", got)
		}
	})
}
