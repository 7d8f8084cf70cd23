package test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A congestion event halves the fleet's rate once, whatever part of it
// went on local limits. The first throttle of the event halves the
// fleet's rate on Redis (100 to 50 rps); a second one of the same event
// (50 ms later) goes on local limits, because its answer comes late
// (Redis ran it, and counted no decrease: the same event), or because
// Redis stopped answering in between (an outage). Written back when Redis
// answers again (here at Close), it leaves the fleet's rate at 50. (The
// local limits, made from the rate the first throttle had just halved,
// halved it again, and the write-back told the fleet that rate: 25 rps
// after one event.)
func TestAThrottleOnLocalLimitsOfAnEventTheFleetCountedCountsOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		goodput bool
		outage  bool
	}{{"late answer/aimd", false, false}, {"late answer/goodput", true, false}, {"outage/aimd", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, a, o := proxiedPair(t, be)
				fallsBack(a) // the second throttle goes on local limits
				spec := state.BucketSpec{Rate: 100, Burst: 10, Adaptive: !c.goodput, Goodput: c.goodput}
				ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
				if r, dec := ab.Throttle(0, 0); !dec || r != 50 {
					t.Fatalf("the event's first throttle: rate %v (decreased %v), want 50", r, dec)
				}
				time.Sleep(50 * time.Millisecond)
				if c.outage {
					px.Down()
					untilLocal(t, a)
				} else {
					var once atomic.Bool
					px.SlowAnswers(func(answer []byte) bool {
						// The throttle's answer, {0, rate}: Redis ran it, no decrease.
						return bytes.HasPrefix(answer, []byte("*2\r\n:0\r\n")) && once.CompareAndSwap(false, true)
					}, 600*time.Millisecond)
				}
				ab.Throttle(0, 0)
				if st := a.Stats(); st.RedisErrors == 0 || st.Degraded != c.outage {
					t.Fatalf("the second throttle: %+v, want it on local limits (an outage: %v)", st, c.outage)
				}
				if c.outage {
					if err := px.Up(); err != nil {
						t.Fatal(err)
					}
				} else if got := ob.Snapshot(0).Rate; got != 50 {
					t.Fatalf("Redis ran the late throttle: the fleet's rate %v, want 50 (the same event)", got)
				}
				a.Close() // writes back what the local limits owe
				if got := ob.Snapshot(0).Rate; got != 50 {
					t.Errorf("one congestion event, its second throttle on local limits (%s): the fleet's rate %v after the write-back, want 50", c.name, got)
				}
			})
		})
	}
}

// With the goodput controller, a throttle whose answer comes late leaves
// the fleet's rate where Redis's measure of the fleet's goodput put it
// when it ran the throttle. The local limits the throttle went on were
// made for that one operation: they measured nothing (their first
// throttle halves), and tell the fleet nothing of its rate. (Their halving
// replaced Redis's measure at the write-back.)
func TestALateThrottleAnswerKeepsTheGoodputMeasure(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, o := proxiedPair(t, be)
		fallsBack(a) // the throttle goes on local limits
		spec := state.BucketSpec{Rate: 10, Burst: 10, Goodput: true}
		ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
		for i := range 30 { // 10 successes a second for 3 s
			ab.Success(time.Duration(i) * 100 * time.Millisecond)
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // the last counts reach Redis
		var once atomic.Bool
		px.SlowAnswers(func(answer []byte) bool {
			// The throttle's answer, {1, rate}: Redis ran it, a decrease.
			return bytes.HasPrefix(answer, []byte("*2\r\n:1\r\n")) && once.CompareAndSwap(false, true)
		}, 600*time.Millisecond)
		ab.Throttle(0, 0)
		if st := a.Stats(); st.RedisErrors == 0 || st.Degraded {
			t.Fatalf("the late throttle: %+v, want it alone on local limits", st)
		}
		measured := ob.Snapshot(0).Rate
		if measured <= 5 || measured >= 10 {
			t.Fatalf("Redis ran the throttle: the fleet's rate %v, want its goodput measure, between 5 and 10", measured)
		}
		a.Close() // writes back what the local limits owe
		if got := ob.Snapshot(0).Rate; got != measured {
			t.Errorf("one throttle, its answer late: the fleet's rate %v after the write-back, want %v (Redis's measure)", got, measured)
		}
	})
}
