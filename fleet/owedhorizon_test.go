package fleet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// countingRedis is a Redis client's hook that refuses every command (an
// error reply) and counts those that run script.
type countingRedis struct {
	passHooks // passes dials and pipelines on
	script    *script
	sent      atomic.Int64
}

func (h *countingRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && (a[1] == h.script.hash || a[1] == h.script.src) {
			h.sent.Add(1)
		}
		cmd.SetErr(refusedByTest{})
		return refusedByTest{}
	}
}

// A throttle owed to Redis for longer than the horizon (the keys' TTL and
// the longest pause: 20 minutes by default) is dropped, not written back:
// the fleet's bucket it would have cut has expired since, or recovered,
// and Redis would count it as of the horizon's start, halving the fleet's
// rate for an event long over. One owed for less is written back.
func TestAThrottleOwedPastTheHorizonIsDropped(t *testing.T) {
	for _, c := range []struct {
		name string
		age  time.Duration
		want int64
	}{
		{"owed 21 minutes (past the horizon of 20)", 21 * time.Minute, 0},
		{"owed 19 minutes", 19 * time.Minute, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &countingRedis{script: throttledScript}
			rdb := unreachable()
			rdb.AddHook(h)
			defer rdb.Close()
			s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour))
			defer s.Close()
			b := s.Bucket("aws/123456789012/us-east-1/ec2/DescribeVpcs", state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}, 0).(*sharedBucket)
			b.oweThrottle(mono() - c.age)
			s.writeBack()
			if got := h.sent.Load(); got != c.want {
				t.Errorf("a throttle %s, then the heartbeat's write-back: %d write-backs of it sent, want %d", c.name, got, c.want)
			}
		})
	}
}
