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
)

// resendRedis is a Redis client's hook that records the arguments of the
// breakers' write-backs (breakerLearnedScript) and loses the answer to the
// next lose of them (the connection closed: Redis may have run them); it
// passes every command on, to an answeringRedis in the tests.
type resendRedis struct {
	passHooks // passes dials and pipelines on
	mu        sync.Mutex
	sends     [][]any
	lose      int
}

func (h *resendRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[1] == breakerLearnedScript.hash {
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
		rh, h := &resendRedis{}, &answeringRedis{id: "p"}
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
		rdb.AddHook(rh)
		rdb.AddHook(h)
		defer rdb.Close()
		s := New(rdb, WithProcessID(h.id), WithHeartbeat(time.Hour), WithTimeout(250*time.Millisecond),
			WithLogger(slog.New(slog.DiscardHandler)))
		defer s.Close()
		b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
		h.lose(io.EOF)
		if op(s) || !s.Stats().Degraded {
			t.Fatalf("a connection closed: %+v, want local limits", s.Stats())
		}
		b.Failure(0) // counted by the local breaker alone, for the write-back
		time.Sleep(time.Second)
		rh.lose = 1
		s.heartbeat() // Redis answers; the write-back's answer is lost
		if !s.Stats().Degraded {
			t.Fatal("the write-back's answer lost: back on the shared state")
		}
		b.Failure(0) // after the first send: a write-back of its own
		time.Sleep(2 * time.Second)
		s.heartbeat()
		if st := s.Stats(); st.Degraded {
			t.Fatalf("Redis answers the write-backs: %+v", st)
		}
		rh.mu.Lock()
		sends := rh.sends
		rh.mu.Unlock()
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
