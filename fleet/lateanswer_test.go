//go:build go1.25

package fleet

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// answeringRedis is a Redis client's hook that answers every command
// itself, without a network (so that it runs in virtual time), as Redis
// answers the heartbeat's script: one live process, the process's id
// echoed. While frozen, and for the next late commands, it answers
// nothing: the command waits for its context's end, as for a Redis, or a
// host, too slow for the timeout. The next command after lose is given
// fails with its error a millisecond later (a connection lost or refused,
// an error reply). It counts
// the write-backs of breakers sent (learned).
type answeringRedis struct {
	passHooks // passes dials and pipelines on
	id        string
	frozen    atomic.Bool
	late      atomic.Int64
	lost      atomic.Pointer[error]
	held      atomic.Pointer[chan error]
	learned   atomic.Int64
}

// lose makes the next command fail with err.
func (h *answeringRedis) lose(err error) { h.lost.Store(&err) }

// holdNext makes the next command wait for an error sent on the channel
// it returns, and fail with it.
func (h *answeringRedis) holdNext() chan<- error {
	ch := make(chan error)
	h.held.Store(&ch)
	return ch
}

func (h *answeringRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[1] == breakerLearnedScript.hash {
			h.learned.Add(1)
		}
		if err := h.lost.Swap(nil); err != nil {
			time.Sleep(time.Millisecond) // the error comes a moment after the command went
			cmd.SetErr(*err)
			return *err
		}
		if ch := h.held.Swap(nil); ch != nil {
			err := <-*ch
			cmd.SetErr(err)
			return err
		}
		if h.frozen.Load() || h.late.Add(-1) >= 0 {
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		cmd.(interface{ SetVal(any) }).SetVal([]any{int64(1), h.id})
		return nil
	}
}

// answeredStore returns a store on an answeringRedis, on the shared state,
// whose heartbeat runs when the test says, logging to logs.
func answeredStore(t *testing.T, timeout time.Duration, logs *syncBuffer) (*Store, *answeringRedis) {
	t.Helper()
	h := &answeringRedis{id: "p"}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	rdb.AddHook(h)
	t.Cleanup(func() { rdb.Close() })
	s := New(rdb, WithProcessID(h.id), WithHeartbeat(time.Hour), WithTimeout(timeout),
		WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if st := s.Stats(); st.Degraded {
		t.Fatalf("a Redis that answers: %+v", st)
	}
	return s, h
}

// op runs one operation on s (the heartbeat's script), reporting whether
// it went on the shared state.
func op(s *Store) bool {
	_, ok := s.run(heartbeatScript, []string{s.key("procs")}, s.cfg.id, 3000, s.ttlMS())
	return ok
}

const switchLine = "Redis does not answer; local limits"

// An answer later than WithTimeout to one operation, while Redis answers
// the operations before and after it, is that operation's: it goes on
// with local limits and counts as a Redis error, and the process stays on
// the shared state. So for several operations in flight that the same
// moment delays (a busy host's scheduling stalls them all), and for the
// heartbeat. (Each of them switched the process to local limits until the
// heartbeat's next answer, a second by default.) In virtual time.
func TestALateAnswerIsThatOperationsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		s, h := answeredStore(t, 250*time.Millisecond, &logs)
		defer s.Close()
		late := func(what string, n int, run func() bool) {
			t.Helper()
			h.late.Store(int64(n))
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					if run() {
						t.Errorf("%s: an operation Redis did not answer in time went on the shared state", what)
					}
				})
			}
			wg.Wait()
			if !op(s) {
				t.Fatalf("%s, then Redis answers: the next operation went on local limits (%+v)", what, s.Stats())
			}
			if st := s.Stats(); st.Degraded || st.Fallbacks != 0 {
				t.Fatalf("%s: %+v, want the shared state", what, st)
			}
		}
		late("one late answer", 1, func() bool { return op(s) })
		late("eight late answers at once", 8, func() bool { return op(s) })
		late("a late heartbeat", 1, func() bool { s.heartbeat(); return false })
		if st := s.Stats(); st.RedisErrors != 10 {
			t.Errorf("10 operations Redis did not answer in time: %+v", st)
		}
		if n := len(logs.lines(switchLine)); n != 0 {
			t.Errorf("a switch to local limits logged %d times:\n%s", n, logs.String())
		}
	})
}

// A Redis that answers nothing (frozen) is left within two operation
// timeouts of the first operation it did not answer, whether one caller
// sends its operations one after the other or several send them at once:
// the operation sent a timeout after that one gets no answer either. No
// operation waits for Redis longer than the timeout, the switch is logged
// once, and when Redis answers again the heartbeat writes back what the
// local limits learned and goes back to the shared state. In virtual time.
func TestAFrozenRedisIsLeftWithinTwoTimeouts(t *testing.T) {
	const timeout = 250 * time.Millisecond
	for _, callers := range []int{1, 8} {
		t.Run(strconv.Itoa(callers)+" callers", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs syncBuffer
				s, h := answeredStore(t, timeout, &logs)
				defer s.Close()
				b := s.Breaker("aws/1/us-east-1/ec2/Describe", unwrittenSpec).(*sharedBreaker)
				h.frozen.Store(true)
				start := time.Now()
				var longest atomic.Int64
				var wg sync.WaitGroup
				for range callers {
					wg.Go(func() {
						for !s.Stats().Degraded {
							t0 := time.Now()
							op(s)
							storeMax(&longest, int64(time.Since(t0)))
						}
					})
				}
				wg.Wait()
				if took := time.Since(start); took > 2*timeout {
					t.Errorf("a frozen Redis left after %v, want within %v", took, 2*timeout)
				}
				if d := time.Duration(longest.Load()); d > timeout {
					t.Errorf("an operation waited %v for a frozen Redis, with WithTimeout(%v)", d, timeout)
				}
				if st := s.Stats(); st.Fallbacks != 1 {
					t.Errorf("%+v, want one switch", st)
				}
				if n := len(logs.lines(switchLine)); n != 1 {
					t.Errorf("the switch logged %d times, want once:\n%s", n, logs.String())
				}

				b.Failure(0) // the local breaker's, to write back
				h.frozen.Store(false)
				s.heartbeat()
				if st := s.Stats(); st.Degraded {
					t.Fatalf("Redis answers the heartbeat again: %+v", st)
				}
				if h.learned.Load() == 0 {
					t.Error("Redis answers again: the local breaker's failure was not written back")
				}
			})
		})
	}
}

// Only a timeout is taken for a late answer. A connection Redis closed or
// reset under an operation (Redis killed or restarted), a connection
// refused, or a client closed under the store is no busy host's delay,
// nor is an error reply that refuses every command (LOADING): the store
// switches to local limits at that operation, logs it once, and comes
// back at the heartbeat's next answer. (A killed Redis's lost
// connections were each taken as a late answer, and a call after the
// kill went on the shared state's next dead connection.) In virtual time.
func TestALostConnectionSwitchesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"closed", io.EOF},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}},
		{"client closed", redis.ErrClosed},
		{"loading", loadingReply{}}, // an answer, which refuses every command
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs syncBuffer
				s, h := answeredStore(t, 250*time.Millisecond, &logs)
				defer s.Close()
				if !op(s) {
					t.Fatalf("Redis answers: %+v", s.Stats())
				}
				h.lose(tc.err)
				start := time.Now()
				if op(s) {
					t.Fatal("an operation whose connection failed went on the shared state")
				}
				if st := s.Stats(); !st.Degraded || st.Fallbacks != 1 || st.RedisErrors != 1 {
					t.Errorf("%v: %+v, want local limits at that operation, one switch", tc.err, st)
				}
				if d := time.Since(start); d != time.Millisecond {
					t.Errorf("the switch waited %v, want the error's millisecond alone", d)
				}
				if n := len(logs.lines(switchLine)); n != 1 {
					t.Errorf("the switch logged %d times, want once:\n%s", n, logs.String())
				}
				s.heartbeat()
				if st := s.Stats(); st.Degraded || !op(s) {
					t.Errorf("Redis answers the heartbeat again: %+v", st)
				}
			})
		})
	}
}

// A connection refused or lost under an operation that Redis answered
// another one sent after it is older than that answer: a dial go-redis
// tried again and again, until it gave up, while Redis came back and the
// heartbeat found it. It goes on with local limits alone, and the
// process stays on the shared state; the same error met by an operation
// sent after Redis's last answer switches it. (The stale refusal switched
// the process back to local limits right after it came back.) In virtual
// time.
func TestAFailureOlderThanAnAnswerSwitchesNothing(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		s, h := answeredStore(t, time.Second, &logs)
		defer s.Close()
		if !op(s) {
			t.Fatalf("Redis answers: %+v", s.Stats())
		}
		fail := h.holdNext()
		done := make(chan bool)
		go func() { done <- op(s) }()
		synctest.Wait() // sent, and held
		time.Sleep(100 * time.Millisecond)
		if !op(s) {
			t.Fatalf("an operation sent after it: %+v", s.Stats())
		}
		fail <- refused
		if <-done {
			t.Fatal("an operation whose dial was refused went on the shared state")
		}
		if st := s.Stats(); st.Degraded || st.Fallbacks != 0 || st.RedisErrors != 1 {
			t.Errorf("a refusal older than Redis's last answer: %+v, want the shared state, one Redis error", st)
		}
		h.lose(refused)
		if op(s) {
			t.Fatal("an operation whose dial was refused went on the shared state")
		}
		if st := s.Stats(); !st.Degraded || st.Fallbacks != 1 {
			t.Errorf("a refusal of an operation sent after Redis's last answer: %+v, want local limits", st)
		}
	})
}

// loadingReply is Redis's error reply while it loads its dataset: it
// refuses every command.
type loadingReply struct{}

func (loadingReply) Error() string { return "LOADING Redis is loading the dataset in memory" }
func (loadingReply) RedisError()   {}
