package fleet

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// successRedis is a Redis client's hook that refuses every command (an
// error reply, as outageRedis's) but the script of a success while answer
// is set, which it answers as Redis would a closed breaker's success: the
// failures reset.
type successRedis struct {
	passHooks // passes dials and pipelines on
	answer    atomic.Bool
	sent      atomic.Int64 // the successes answered
}

func (h *successRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if c, ok := cmd.(onceCmd); ok && h.answer.Load() && len(args) > 1 && args[1] == breakerSuccessScript.hash {
			h.sent.Add(1)
			c.SetVal([]any{int64(0), "closed", strconv.FormatInt(time.Now().UnixMicro(), 10),
				strconv.FormatInt(unwrittenSpec.Cooldown.Microseconds(), 10)})
			return nil
		}
		cmd.SetErr(refusedByTest{})
		return refusedByTest{}
	}
}

// A success ends the run of failures the local breaker counted for
// operations Redis refused (failures the fleet has not heard of yet),
// whether or not the view shows failures, and whether Redis takes the
// success or refuses it: a failure before it is not counted again on a
// local breaker made from the view after it, nor written back as one of
// the run (Redis merges the failures written back after the scope's last
// success only). So the local breaker does not open on failures a success
// came between, and does not open the fleet's by its write-back.
func TestASuccessEndsTheFailuresRedisRefused(t *testing.T) {
	const quietView = "a success sent already this period, the view closed with no failure"
	for _, c := range []string{"Redis refuses the success", "Redis takes the success", quietView} {
		t.Run(c, func(t *testing.T) {
			h := &successRedis{}
			rdb := unreachable()
			rdb.AddHook(h)
			defer rdb.Close()
			s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(100*time.Millisecond))
			defer s.Close()
			if s.Stats().Degraded {
				t.Fatal("a Redis that refuses the heartbeat: on local limits")
			}
			b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
			toldClosed(b)
			if c == quietView {
				h.answer.Store(true)
				b.Success() // the period's: the next is not sent while the view shows no failure
			}
			for range unwrittenSpec.Threshold - 1 {
				b.Failure(0) // refused: counted by the local breaker, for the write-back
			}
			h.answer.Store(c == "Redis takes the success")
			b.Success()
			h.answer.Store(false)
			if c != "Redis refuses the success" && h.sent.Load() != 1 {
				t.Fatalf("%s: %d successes sent to Redis, want 1", c, h.sent.Load())
			}
			opened := b.Failure(0) // refused
			got := b.Snapshot(0)
			b.localMu.Lock()
			fails := len(b.fails)
			b.localMu.Unlock()
			if opened || got.State != state.Closed || got.Failures != 1 || fails > 1 {
				t.Errorf("%d failures Redis refused, a success (%s), then one more failure Redis refused: opened %v, the local breaker %+v, %d failures to write back; want closed with 1 failure, at most 1 to write back",
					unwrittenSpec.Threshold-1, c, opened, got, fails)
			}
		})
	}
}

// After Close every call goes to the local breaker: Allow does not let a
// call through on the view of the fleet's breaker (closed, read within
// WithBreakerStaleness) once the local breaker opened on failures counted
// after Close.
func TestAClosedStoresAllowAsksTheLocalBreaker(t *testing.T) {
	h := &successRedis{}
	rdb := unreachable()
	rdb.AddHook(h)
	defer rdb.Close()
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(100*time.Millisecond))
	b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
	toldClosed(b)
	s.Close()
	opened := false
	for range unwrittenSpec.Threshold {
		opened = b.Failure(0)
	}
	if !opened {
		t.Fatal("the threshold of failures after Close: the local breaker did not open")
	}
	if wait, ok, _ := b.Allow(0); ok {
		t.Errorf("the threshold of failures after Close, the fleet's breaker read closed just before: Allow let a call through (wait %v), want the local breaker's refusal", wait)
	}
}
