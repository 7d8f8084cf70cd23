package test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/state"
)

// loading is Redis's answer while it loads its data set: it does not run
// the command, and fleet mode counts it as an outage.
var loading = []byte("-LOADING Redis is loading the dataset in memory\r\n")

// Each congestion event of an outage reaches the fleet: two throttles
// more than bucket.DecreaseInterval apart while Redis does not answer
// halve the local limits twice, and their write-back halves the fleet's
// rate twice too (100 rps to 25), as Redis would have had it run them;
// a throttle within the interval of the event's first is of that event.
// (Only the latest was owed: the fleet's rate went to 50.)
func TestAnOutagesThrottlesReachTheFleetEach(t *testing.T) {
	for _, c := range []struct {
		name string
		gaps []time.Duration // before each throttle after the first
	}{
		{"two throttles 1.1s apart", []time.Duration{1100 * time.Millisecond}},
		{"three throttles, the first two 0.3s apart", []time.Duration{300 * time.Millisecond, 1100 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, a, ab, ob := throttleScene(t, be)
				px.RefuseNext(loading) // an outage
				start := time.Now()
				ab.Throttle(0, 0)
				if !a.Stats().Degraded {
					t.Fatal("a throttle Redis did not run (LOADING): not on local limits")
				}
				var now time.Duration
				for _, g := range c.gaps {
					now += g
					time.Sleep(now - time.Since(start))
					ab.Throttle(now, 0)
				}
				if r := ab.Snapshot(now).Rate; r != 25 {
					t.Fatalf("%s during an outage: the local limits' rate %v, want 25", c.name, r)
				}
				a.Close() // writes back what the heartbeat has not yet
				if got := ob.Snapshot(0).Rate; got != 25 {
					t.Errorf("%s during an outage, then A closed: the fleet's rate %v rps, want 25 (halved for each event)", c.name, got)
				}
			})
		})
	}
}

// The success counts of an outage go with the throttle written back,
// whose event the goodput controller measures by them, when Redis runs
// it, however many write-backs it takes: a write-back Redis did not run
// (it answered LOADING) keeps them for the next. (They were taken for the
// first and lost: the next measured nothing, and halved the rate, 100 rps
// to 50, where 400 successes within a second or so measure more.)
func TestTheCountsOfAThrottleWriteBackRedisDidNotRunAreKept(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(300*time.Millisecond))
		fallsBack(a) // the proxy refuses its throttle and write-back (LOADING): an outage
		o := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		spec := state.BucketSpec{Rate: 100, Burst: 10, Goodput: true}
		ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0) // the fleet's bucket starts counting
		px.RefuseNext(loading)
		a.Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", spec, 0).Reserve(0) // an outage
		if !a.Stats().Degraded {
			t.Fatal("an operation Redis did not run (LOADING): not on local limits")
		}
		for range 400 {
			ab.Success(0)
		}
		ab.Throttle(0, 0)
		px.RefuseNextMatching(func(cmd []byte) bool {
			return bytes.Contains(cmd, []byte(":bucket")) // the write-back, not the heartbeat
		}, loading)
		deadline := time.Now().Add(5 * time.Second)
		for a.Stats().Degraded && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if a.Stats().Degraded {
			t.Fatal("A still on local limits 5s after Redis answers again")
		}
		if got := ob.Snapshot(0).Rate; got <= 50 {
			t.Errorf("400 successes and a throttle during an outage, the throttle's first write-back not run (LOADING), the next run: the fleet's rate %v rps, want more than 50 (the goodput controller measuring the successes)", got)
		}
	})
}

// An outage's throttles written back count once per event, however many
// write-backs of them reach Redis: one Redis ran whose answer was lost is
// sent again at the next heartbeat, the same, and Redis, which records
// the number of the last write-back of the bucket it applied, does not
// apply it again; one Redis did not run (its command lost on its way) is
// applied when sent again; two
// processes that owe the same two events (their throttles 0.1 s apart)
// halve the fleet's rate twice, as one process's local limits, not four
// times.
func TestAnOutagesThrottlesWrittenBackTwiceCountOnce(t *testing.T) {
	const (
		lost   = "two events written back, the answer lost, sent again"
		notRun = "two events written back, the command lost, sent again"
		two    = "the same two events owed by two processes"
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		for _, name := range []string{lost, notRun, two} {
			t.Run(name, func(t *testing.T) {
				prefix := uniquePrefix(t)
				spec := state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}
				n := 1
				if name == two {
					n = 2
				}
				var pxs []*redisproxy.Proxy
				var stores []*fleet.Store
				var buckets []state.Bucket
				for range n {
					px, url := proxied(t, be)
					s := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(300*time.Millisecond))
					fallsBack(s) // the outage: each process's proxy goes down
					b := s.Bucket(vpcsKey, spec, 0)
					b.Reserve(0)
					pxs, stores, buckets = append(pxs, px), append(stores, s), append(buckets, b)
				}
				// A first write-back, of another scope's throttle, so that
				// Redis holds its script: the answer lost is the script's.
				pxs[0].RefuseNext(loading)
				stores[0].Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", spec, 0).Throttle(0, 0)
				waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !stores[0].Stats().Degraded })
				for i, px := range pxs {
					px.Down()
					waitFor(t, 5*time.Second, "on local limits", func() bool { return stores[i].Stats().Degraded })
				}
				start := time.Now()
				for _, now := range []time.Duration{0, 1100 * time.Millisecond} {
					time.Sleep(now - time.Since(start))
					for _, b := range buckets {
						b.Throttle(now, 0)
						time.Sleep(100 * time.Millisecond)
					}
				}
				for _, b := range buckets {
					if r := b.Snapshot(0).Rate; r != 25/float64(n) { // each process's share
						t.Fatalf("%s: the local limits' rate %v, want %v", name, r, 25/float64(n))
					}
				}
				errs := stores[0].Stats().RedisErrors
				switch name {
				case lost:
					pxs[0].DropAnswerTo(func(cmd []byte) bool { return bytes.Contains(cmd, []byte(vpcsKey)) })
				case notRun:
					pxs[0].DropCommandTo(func(cmd []byte) bool { return bytes.Contains(cmd, []byte(vpcsKey)) })
				}
				for i, px := range pxs {
					if err := px.Up(); err != nil {
						t.Fatal(err)
					}
					waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !stores[i].Stats().Degraded })
				}
				if name != two && stores[0].Stats().RedisErrors == errs {
					t.Fatal("the write-back's answer was not lost")
				}
				// The fleet's rate, read by a process opened now: one live
				// through the outage would be counted in the processes'
				// shares of the local limits above.
				o := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
				if got := o.Bucket(vpcsKey, spec, 0).Snapshot(0).Rate; got != 25 {
					t.Errorf("%s: the fleet's rate %v rps, want 25 (halved once per event)", name, got)
				}
			})
		}
	})
}
