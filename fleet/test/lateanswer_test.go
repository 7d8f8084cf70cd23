package test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// One answer of a healthy Redis that comes later than WithTimeout (the
// default 250 ms; a proxy holds it 600 ms, as a busy host's scheduling
// may), with the answers before and after it in time, costs the call it
// answers a trip to the local limits, counted as a Redis error, and
// nothing else: the process stays on the shared state, and no call fails
// or waits past the timeout. (It switched the whole process to local
// limits until the heartbeat's next answer; here, with the heartbeat an
// hour apart, for good.)
func TestALateAnswerLeavesTheSharedState(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		s, err := fleet.Open(url, fleet.WithPrefix(uniquePrefix(t)), fleet.WithLogger(quiet),
			fleet.WithHeartbeat(time.Hour), fleet.WithMaxLease(1))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 1000}}}}
		gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(s))
		if err != nil {
			t.Fatal(err)
		}
		calls := func(n int) (slowest time.Duration) {
			for range n {
				start := time.Now()
				if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov)); err != nil {
					t.Fatal(err)
				}
				slowest = max(slowest, time.Since(start))
			}
			return slowest
		}
		calls(5)
		before := s.Stats()
		var answers atomic.Int64
		px.SlowAnswers(func([]byte) bool { return answers.Add(1) == 1 }, 600*time.Millisecond)
		t.Cleanup(func() { px.SlowAnswers(nil, 0) })
		slowest := calls(10)
		st := s.Stats()
		if st.Degraded || st.Fallbacks != 0 || st.RedisErrors == before.RedisErrors {
			t.Errorf("one answer 600 ms late, the others in time: the store %+v (before it %+v); want the shared state, and the late one counted as a Redis error",
				st, before)
		}
		// The timeout, and room for a loaded machine's scheduling.
		if slowest > 250*time.Millisecond+150*time.Millisecond {
			t.Errorf("the slowest call took %v, with the default WithTimeout of 250 ms", slowest)
		}
		t.Logf("%s: %+v; the slowest call %v", be.name, st, slowest)
	})
}
