package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// recordingRedis is a Redis client's hook that refuses every command (an
// error reply) and records the arguments of the last that ran script.
type recordingRedis struct {
	passHooks // passes dials and pipelines on
	script    *script
	mu        sync.Mutex
	args      []any
}

func (h *recordingRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && (a[1] == h.script.hash || a[1] == h.script.src) {
			h.mu.Lock()
			h.args = a
			h.mu.Unlock()
		}
		cmd.SetErr(refusedByTest{})
		return refusedByTest{}
	}
}

// An outage's throttles are owed as at most 16 congestion events, the
// latest: a 17th, more than a second after the 16th, drops the oldest, so
// that the write-back halves the fleet's rate 16 times where the local
// limits halved it 17 (the README's known limit).
func TestTheOwedEventsAreTheLatest16(t *testing.T) {
	h := &recordingRedis{script: throttledScript}
	rdb := unreachable()
	rdb.AddHook(h)
	defer rdb.Close()
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour))
	defer s.Close()
	b := s.Bucket("aws/123456789012/us-east-1/ec2/DescribeVpcs", state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}, 0).(*sharedBucket)
	t0 := mono()
	for i := range 17 { // 17 events, 1.5 s apart, the latest 1 s old
		b.oweThrottle(t0 - time.Second - time.Duration(16-i)*1500*time.Millisecond)
		b.oweThrottle(t0 - time.Second - time.Duration(16-i)*1500*time.Millisecond + 500*time.Millisecond) // of the same event
	}
	s.writeBack()
	h.mu.Lock()
	args := h.args
	h.mu.Unlock()
	at := 4 + len(b.args) // the command, the script, its key count, its key, the bucket's arguments
	if len(args) < at+3 {
		t.Fatalf("17 events owed, then the heartbeat's write-back: sent %v", args)
	}
	k, ok := args[at+2].(int)
	if !ok || k != 16 || len(args) < at+3+k {
		t.Fatalf("17 events owed, then the heartbeat's write-back: %v events sent, want the latest 16", args[at+2])
	}
	first, _ := args[at+3].(int64)
	if oldest := time.Duration(first) * time.Microsecond; oldest > 24*time.Second || oldest < 23*time.Second {
		t.Errorf("17 events owed, the oldest 25 s old, then the heartbeat's write-back: the oldest sent %v old, want the 16th latest, 23.5 s", oldest)
	}
}
