package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/state"
)

// A throttle whose script Redis did not run (it refused it, or did not
// answer: an outage) is written back to Redis when it answers again (the
// heartbeat, or Close, as here), as of the time it came: it halves the
// fleet's rate, as it would have had Redis run it then, once per
// congestion event, so that the local limits' cut is not lost with them
// and the fleet does not go on at the old rate after the outage. A
// throttle Redis ran and whose answer was lost is not counted twice, nor
// is one of an event another process's throttle, which Redis ran, already
// counted: each halves the rate once. (The cut stayed on the local
// limits, which the next fallback made again from the fleet's rate as last
// read: the fleet's rate stayed at 100 rps after each.)
func TestAThrottleRedisDidNotRunReachesTheFleet(t *testing.T) {
	const (
		refused = "Redis refuses the throttle"
		outage  = "Redis does not answer the throttle (an outage)"
		lost    = "Redis runs the throttle, its answer lost"
		oneEv   = "Redis refuses the throttle, another process's throttle of the event runs 0.1s after it, written back 1.2s after it"
	)
	for _, c := range []struct {
		name string
		want float64
	}{{refused, 50}, {outage, 50}, {lost, 50}, {oneEv, 50}} {
		t.Run(c.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, a, ab, ob := throttleScene(t, be)
				switch c.name {
				case refused, oneEv:
					px.RefuseNext([]byte("-ERR refused by the test\r\n"))
				case outage:
					px.Down()
				case lost:
					px.DropAnswer()
				}
				if _, dec := ab.Throttle(0, 0); !dec && c.name != lost {
					t.Fatalf("%s: the local limits did not slow", c.name)
				}
				if c.name == oneEv {
					time.Sleep(100 * time.Millisecond)
					if r, dec := ob.Throttle(0, 0); !dec || r != 50 {
						t.Fatalf("another process's throttle: rate %v (decreased %v), want 50", r, dec)
					}
					time.Sleep(1100 * time.Millisecond)
				}
				if c.name == outage {
					untilLocal(t, a) // the throttle went on local limits alone; a timeout of silence more switches the store
					if !a.Stats().Degraded {
						t.Fatal("a throttle Redis did not answer: not on local limits")
					}
					if err := px.Up(); err != nil {
						t.Fatal(err)
					}
				}
				a.Close() // writes back what the heartbeat has not yet
				if got := ob.Snapshot(0).Rate; got != c.want {
					t.Errorf("%s, then A closed: the fleet's rate %v rps, want %v", c.name, got, c.want)
				}
			})
		})
	}
}

// A throttle written back is counted once however long its write-back
// takes to reach Redis, within the operation timeout: Redis reads the
// throttle's time as the age the process sent, from when the script runs,
// so that a write-back slow on its way places the throttle later than it
// came, by as much. A decrease Redis made up to that much before, for the
// same event (this throttle's own, when its answer was lost; another
// process's), takes its place all the same. Here the write-back takes
// 1.2s to reach Redis (a timeout of 10s: a script Redis has not loaded yet takes two round trips, a new connection more), more than the decrease interval.
func TestASlowThrottleWriteBackCountsOnce(t *testing.T) {
	const (
		lost  = "Redis runs the throttle, its answer lost"
		oneEv = "Redis refuses the throttle, another process's throttle of the event runs 0.1s after it"
	)
	for _, name := range []string{lost, oneEv} {
		t.Run(name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, a, ab, ob := throttleScene(t, be, fleet.WithTimeout(10*time.Second))
				if name == lost {
					px.DropAnswer()
				} else {
					px.RefuseNext([]byte("-ERR refused by the test\r\n"))
				}
				ab.Throttle(0, 0)
				if name == oneEv {
					time.Sleep(100 * time.Millisecond)
					if r, dec := ob.Throttle(0, 0); !dec || r != 50 {
						t.Fatalf("another process's throttle: rate %v (decreased %v), want 50", r, dec)
					}
				}
				px.SetDelay(1200 * time.Millisecond)
				a.Close() // writes back the throttle, 1.2s on its way
				if got := ob.Snapshot(0).Rate; got != 50 {
					t.Errorf("%s, its write-back 1.2s on its way to Redis: the fleet's rate %v rps, want 50", name, got)
				}
			})
		})
	}
}

// throttleScene opens two stores of one fleet on be: A through a proxy,
// with opts, and O directly, each with a heartbeat that does not come
// during the test (A's Close writes back what it owes), closed as the test
// ends. A has read the fleet's bucket of vpcsKey at 100 rps (burst 10,
// adaptive), and Redis holds the throttle's script (O throttled another
// scope), so that an answer the proxy drops is the script's. It returns
// the proxy, A, and A's and O's buckets of vpcsKey.
func throttleScene(t *testing.T, be backend, opts ...fleet.Option) (*redisproxy.Proxy, *fleet.Store, state.Bucket, state.Bucket) {
	t.Helper()
	px, a, o := proxiedPair(t, be, opts...)
	fallsBack(a) // each test makes the proxy refuse, drop or cut A's throttle: Redis did not run it
	spec := state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}
	ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
	ab.Reserve(0)
	o.Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", spec, 0).Throttle(0, 0)
	return px, a, ab, ob
}

// proxiedPair opens two stores of one fleet (one prefix), whose heartbeat
// runs hourly: a, through a proxy of be, with opts, and o, on be itself,
// to read the fleet's state as Redis holds it.
func proxiedPair(t *testing.T, be backend, opts ...fleet.Option) (px *redisproxy.Proxy, a, o *fleet.Store) {
	t.Helper()
	px, url := proxied(t, be)
	prefix := uniquePrefix(t)
	a = openStore(t, url, append([]fleet.Option{fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour)}, opts...)...)
	o = openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
	return px, a, o
}
