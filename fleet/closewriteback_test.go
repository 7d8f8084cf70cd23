//go:build go1.25

package fleet

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// silentRedis is a Redis client's hook that sends nothing and answers
// nothing: every command waits for its context's end (a Redis that does
// not answer), and is counted.
type silentRedis struct {
	passHooks // passes dials and pipelines on
	sent      atomic.Int64
}

func (h *silentRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.sent.Add(1)
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return ctx.Err()
	}
}

// Close writes back what an outage taught when Redis answers
// (TestCloseWritesBackWhatAnOutageTaught, in the fleet's tests), and
// stays bounded when it does not: it tries once, and returns when the
// operation timeout from its start has passed, however many buckets and
// breakers hold what was not written back (not one timeout each); with
// nothing to write back, it sends nothing and returns at once. In virtual
// time.
func TestCloseIsBoundedWhileRedisDoesNotAnswer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, n := range []int{0, 1, 8} { // buckets paused and breakers that counted a failure
		t.Run(strconv.Itoa(n)+" of each", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &silentRedis{}
				rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
				rdb.AddHook(h)
				defer rdb.Close()
				s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(timeout))
				if !s.Stats().Degraded {
					t.Fatal("a Redis that does not answer: not on local limits")
				}
				for i := range n {
					key := "aws/1/us-east-1/ec2/Describe" + strconv.Itoa(i)
					s.Bucket(key, state.BucketSpec{Rate: 10, Burst: 10}, 0).Pause(0, time.Minute)
					s.Breaker(key, unwrittenSpec).Failure(0)
				}
				before := h.sent.Load()
				start := time.Now()
				s.Close()
				took, sent := time.Since(start), h.sent.Load()-before
				want, wantSent := timeout, int64(1)
				if n == 0 {
					want, wantSent = 0, 0
				}
				if took != want || sent != wantSent {
					t.Errorf("Close, Redis not answering, %d buckets paused and %d breakers that counted a failure during the outage: returned after %v, %d operations sent; want %v, %d",
						n, n, took, sent, want, wantSent)
				}
			})
		})
	}
}
