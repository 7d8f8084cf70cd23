//go:build go1.25

package fleet

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// resendRedis is a Redis client's hook that records the arguments of the
// commands that run script (a write-back's) and loses the answer to the
// next lose of them (the connection closed: Redis may have run them); it
// passes every command on, to an answeringRedis in the tests.
type resendRedis struct {
	passHooks // passes dials and pipelines on
	script    *script
	mu        sync.Mutex
	sends     [][]any
	lose      int
}

func (h *resendRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[1] == h.script.hash {
			h.mu.Lock()
			h.sends = append(h.sends, args)
			lost := h.lose > 0
			h.lose--
			h.mu.Unlock()
			if lost {
				cmd.SetErr(io.EOF)
				return io.EOF
			}
		}
		return next(ctx, cmd)
	}
}

// resendStore returns a store on an answeringRedis, on local limits (a
// connection closed), whose heartbeat runs when the test says, and the
// resendRedis hook of the commands that run script. Virtual time only:
// mono's epoch precedes the bubble, so that the ages sent are compared,
// not read.
func resendStore(t *testing.T, sc *script) (*Store, *resendRedis) {
	t.Helper()
	rh, h := &resendRedis{script: sc}, &answeringRedis{id: "p"}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	rdb.AddHook(rh)
	rdb.AddHook(h)
	t.Cleanup(func() { rdb.Close() })
	s := New(rdb, WithProcessID(h.id), WithHeartbeat(time.Hour), WithTimeout(250*time.Millisecond),
		WithLogger(slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { s.Close() })
	h.lose(io.EOF)
	if op(s) || !s.Stats().Degraded {
		t.Fatalf("a connection closed: %+v, want local limits", s.Stats())
	}
	return s, rh
}

// argv returns ARGV[i] of a script's command whose arguments are args
// (EVALSHA, its hash, one key, the key, then ARGV).
func argv(args []any, i int) any {
	if 3+i < len(args) {
		return args[3+i]
	}
	return nil
}

// A write-back whose answer was lost is sent again at the next heartbeat
// with the same number and the same events, each failure's age counted
// from the new send (the stale age would place it earlier than it came),
// and what the local breaker learned after the first send goes in a
// write-back of its own, numbered next. In virtual time.
func TestAWriteBackSentAgainIsTheSameAsOfItsSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rh := resendStore(t, breakerLearnedScript)
		b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
		b.Failure(0) // counted by the local breaker alone, for the write-back
		time.Sleep(time.Second)
		rh.lose = 1
		s.heartbeat() // Redis answers; the write-back's answer is lost
		if !s.Stats().Degraded {
			t.Fatal("the write-back's answer lost: back on the shared state")
		}
		b.Failure(0) // after the first send: a write-back of its own
		sends := heartbeatLater(t, s, rh)
		if len(sends) != 3 {
			t.Fatalf("%d write-backs sent, want 3: the first, sent again, then the failure after it", len(sends))
		}
		first, again, next := sends[0], sends[1], sends[2]
		if argv(again, 14) != argv(first, 14) || argv(again, 15) != argv(first, 15) || len(again) != len(first) {
			t.Errorf("sent again as %v %v with %d arguments, first as %v %v with %d: want the same record and number",
				argv(again, 14), argv(again, 15), len(again), argv(first, 14), argv(first, 15), len(first))
		}
		if a, f := toInt(argv(again, 16)), toInt(argv(first, 16)); a-f != (2 * time.Second).Microseconds() {
			t.Errorf("the failure's age: %d µs when first sent, %d µs when sent again 2 s later; want 2 s more", f, a)
		}
		if argv(next, 14) != argv(first, 14) || toInt(argv(next, 15)) != toInt(argv(first, 15))+1 {
			t.Errorf("the next write-back is %v %v, want %v %d", argv(next, 14), argv(next, 15), argv(first, 14), toInt(argv(first, 15))+1)
		}
		if len(next) != len(first) {
			t.Errorf("the next write-back carries %d arguments, want %d: the one failure after the first send", len(next), len(first))
		}
	})
}

// The same for a bucket's write-back of the throttles Redis did not run:
// sent again with the same number, the same event and the same success
// counts, their ages counted from the new send. (Sent again, it carried
// no success count, dropped in case Redis had run the first, and a flag
// in place of the number.) In virtual time.
func TestAThrottlesWriteBackSentAgainIsTheSameAsOfItsSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rh := resendStore(t, throttledScript)
		b := s.Bucket("aws/1/us-east-1/ec2/DescribeVpcs", state.BucketSpec{Rate: 100, Burst: 10, Goodput: true}, 0).(*sharedBucket)
		for range 3 {
			b.Success(0)
		}
		b.Throttle(0, 0) // owed, with the success counts before it
		time.Sleep(time.Second)
		rh.lose = 1
		s.heartbeat() // Redis answers; the write-back's answer is lost
		if !s.Stats().Degraded {
			t.Fatal("the write-back's answer lost: back on the shared state")
		}
		sends := heartbeatLater(t, s, rh)
		if len(sends) != 2 {
			t.Fatalf("%d write-backs sent, want 2: the first, sent again", len(sends))
		}
		first, again := sends[0], sends[1]
		const arg0, k = 21, 1 // the bucket's arguments; one event
		if len(again) != len(first) || len(first) < 3+arg0+7+k+2 {
			t.Fatalf("sent again with %d arguments, first with %d: want the same, and a success count", len(again), len(first))
		}
		for _, i := range []int{arg0 + 4 + k, arg0 + 6 + k} { // the record, the number
			if argv(again, i) != argv(first, i) || argv(first, i) == nil {
				t.Errorf("ARGV[ARG0+%d]: %v when first sent, %v when sent again: want the same", i-arg0, argv(first, i), argv(again, i))
			}
		}
		for _, i := range []int{arg0, arg0 + 3, arg0 + 7 + k} { // the latest throttle, the event, the success count
			if a, f := toInt(argv(again, i)), toInt(argv(first, i)); a-f != (2 * time.Second).Microseconds() {
				t.Errorf("ARGV[ARG0+%d], an age: %d µs when first sent, %d µs when sent again 2 s later; want 2 s more", i-arg0, f, a)
			}
		}
	})
}

// heartbeatLater runs s's heartbeat 2 s later, whose write-backs Redis
// answers, and returns the write-backs rh saw sent.
func heartbeatLater(t *testing.T, s *Store, rh *resendRedis) [][]any {
	t.Helper()
	time.Sleep(2 * time.Second)
	s.heartbeat()
	if st := s.Stats(); st.Degraded {
		t.Fatalf("Redis answers the write-backs: %+v", st)
	}
	rh.mu.Lock()
	defer rh.mu.Unlock()
	return rh.sends
}

// A write-back whose answer was lost is sent again only while Redis still
// holds its record of the write-backs it applied: within the keys' TTL
// less the operation timeout of its first send. One owed longer (Redis
// away for the rest of the TTL) is dropped, the breaker and the bucket
// alike, so that one Redis applied, and then forgot it had, is not
// applied again. In virtual time.
func TestAWriteBackOwedPastTheKeysTTLIsNotSentAgain(t *testing.T) {
	for _, sc := range []*script{breakerLearnedScript, throttledScript} {
		name := "breaker"
		if sc == throttledScript {
			name = "bucket"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rh := resendStore(t, sc)
				const key = "aws/1/us-east-1/ec2/DescribeVpcs"
				if sc == breakerLearnedScript {
					s.Breaker(key, unwrittenSpec).Failure(0)
				} else {
					s.Bucket(key, state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}, 0).Throttle(0, 0)
				}
				rh.lose = 1
				s.heartbeat() // Redis answers; the write-back's answer is lost
				if !s.Stats().Degraded {
					t.Fatal("the write-back's answer lost: back on the shared state")
				}
				// Just within the TTL less the timeout: sent again.
				time.Sleep(s.cfg.keyTTL - s.cfg.timeout)
				rh.lose = 1
				s.heartbeat() // its answer lost again
				rh.mu.Lock()
				n := len(rh.sends)
				rh.mu.Unlock()
				if n != 2 {
					t.Fatalf("%d write-backs sent, want 2: the first, sent again within the TTL less the timeout", n)
				}
				time.Sleep(time.Millisecond) // past it
				if sends := heartbeatLater(t, s, rh); len(sends) != 2 {
					t.Errorf("%d write-backs sent, want 2: one owed past the TTL less the timeout is not sent again", len(sends))
				}
			})
		})
	}
}
