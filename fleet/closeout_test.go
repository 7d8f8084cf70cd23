//go:build go1.25

package fleet

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// heldRedis is a Redis client's hook that answers every command itself,
// with nothing sent: a refusal (an error reply: the operation goes on
// with local limits, and the store stays on the shared state), given at
// once, or, to a command sent while held is set, once held is closed,
// whatever the command's context.
type heldRedis struct {
	passHooks // passes dials and pipelines on
	held      chan struct{}
}

// refusal is heldRedis's error reply.
type refusal struct{}

func (refusal) Error() string { return "ERR refused by the test" }
func (refusal) RedisError()   {}

func (h *heldRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		if h.held != nil {
			<-h.held
		}
		cmd.SetErr(refusal{})
		return refusal{}
	}
}

// Store.Close waits for a bucket's operation in flight (a lease request,
// a give-back of a token a caller cancelled) until it ends, and no
// longer: it returns as the operation ends, signalled, not at the next of
// polls a millisecond apart; an operation that outlasts Close's deadline
// (one operation timeout from its start: a client that ignores its
// context's deadline, as a client given to New may) is left to end alone.
// In virtual time, where the operation ends when the test says.
func TestCloseReturnsAsTheOperationInFlightEnds(t *testing.T) {
	const timeout = time.Second
	ops := []struct {
		name  string
		start func(b state.Bucket) // sends the operation held in flight
	}{
		{"lease request", func(b state.Bucket) { go b.Reserve(0) }},
		{"give-back", func(b state.Bucket) { b.Cancel(0) }},
	}
	for _, op := range ops {
		for _, tc := range []struct {
			name string
			ends time.Duration // after Close began; 0: never, before Close's deadline
			want time.Duration // Close's return, after it began
		}{
			{"ending 1.5 ms into Close", 1500 * time.Microsecond, 1500 * time.Microsecond},
			{"ending 700.25 ms into Close", 700*time.Millisecond + 250*time.Microsecond, 700*time.Millisecond + 250*time.Microsecond},
			{"outlasting Close's deadline", 0, timeout},
		} {
			t.Run(op.name+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := &heldRedis{}
					rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
					rdb.AddHook(h)
					defer rdb.Close()
					s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(timeout))
					b := s.Bucket("aws/123456789012/us-east-1/ec2/DescribeVpcs", state.BucketSpec{Rate: 10, Burst: 10}, 0)
					release := make(chan struct{})
					h.held = release
					op.start(b) // held in flight
					synctest.Wait()
					start := time.Now()
					var took time.Duration
					closed := make(chan struct{})
					go func() {
						s.Close()
						took = time.Since(start)
						close(closed)
					}()
					if tc.ends > 0 {
						time.Sleep(tc.ends)
						close(release)
						<-closed
					} else {
						<-closed
						close(release) // lets the hook's goroutine end
					}
					if took != tc.want {
						t.Errorf("Close returned %v after it began, the bucket's %s in flight %s; want %v", took, op.name, tc.name, tc.want)
					}
				})
			})
		}
	}
}
