package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// writesRedis is successRedis (every command refused, a success answered
// while answer is set) that also records the scripts sent to it but the
// reads' (breakerSnapshotScript's), with the state a write-back sends.
type writesRedis struct {
	successRedis
	mu   sync.Mutex
	sent []string
}

func (h *writesRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	inner := h.successRedis.ProcessHook(next)
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) > 1 && args[1] != breakerSnapshotScript.hash {
			w := fmt.Sprint(args[1])
			switch {
			case args[1] == breakerLearnedScript.hash && len(args) > 9:
				w = fmt.Sprintf("a write-back of a breaker %v", args[9])
			case args[1] == breakerFailureScript.hash:
				w = "a failure"
			case args[1] == breakerSuccessScript.hash:
				w = "a success"
			case args[1] == allowScript.hash:
				w = "an allow"
			case len(w) > 8:
				w = w[:8]
			}
			h.mu.Lock()
			h.sent = append(h.sent, w)
			h.mu.Unlock()
		}
		return inner(ctx, cmd)
	}
}

func (h *writesRedis) writes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.sent...)
}

// Reads have no side effects: a Snapshot of a shared breaker that Redis
// refuses returns what the next call would see of the local breaker, and
// makes none. So the same calls, with a read between them or not, leave
// the breaker in the same state and send Redis the same writes. Here the
// local breaker counted failures Redis refused, one short of the
// threshold, and the view then read another process's failure: the next
// call Redis refuses makes the local breaker again from the view, which
// those failures open. A success Redis takes comes first, and ends them.
func TestABreakerSnapshotRedisRefusesChangesNothing(t *testing.T) {
	type outcome struct {
		read     state.BreakerSnapshot
		pristine bool
		allowed  bool
		writes   string
	}
	run := func(read bool) (o outcome) {
		h := &writesRedis{}
		rdb := unreachable()
		rdb.AddHook(h)
		defer rdb.Close()
		s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(100*time.Millisecond))
		defer s.Close()
		b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
		toldClosed(b)
		for range unwrittenSpec.Threshold - 1 {
			b.Failure(0) // refused: counted by the local breaker, for the write-back
		}
		// Another process's failure, in a newer reading.
		b.update(0, reading{st: "closed", failures: "1", cooldown: strconv.FormatInt(unwrittenSpec.Cooldown.Microseconds(), 10),
			wait: "0", at: strconv.FormatInt(time.Now().UnixMicro()+1, 10), sent: mono()})
		if read {
			o.read = b.Snapshot(0) // refused
		}
		h.answer.Store(true)
		b.Success()
		h.answer.Store(false)
		o.pristine = b.Pristine()
		b.writeBack()
		_, o.allowed, _ = b.Allow(2 * time.Second) // the view stale: asks Redis, which refuses
		o.writes = fmt.Sprint(h.writes())
		return o
	}
	without, with := run(false), run(true)
	if with.read.State != state.Open {
		t.Errorf("a Snapshot Redis refused, with the view at 1 failure and %d failures Redis refused: %+v, want open (what the next call Redis refuses sees)",
			unwrittenSpec.Threshold-1, with.read)
	}
	if with.pristine != without.pristine || with.allowed != without.allowed || with.writes != without.writes {
		t.Errorf("the same calls with a Snapshot Redis refused between them: Pristine %v, Allow %v, writes %s; without it: Pristine %v, Allow %v, writes %s",
			with.pristine, with.allowed, with.writes, without.pristine, without.allowed, without.writes)
	}
}

// lateRedis refuses every command (an error reply: Redis is up) but a
// retry budget's exchange, which it holds until release is closed, then
// answers as Redis would the spend of the fleet's last retry; while down
// is set, it answers none (a connection that failed: an outage).
type lateRedis struct {
	passHooks // passes dials and pipelines on
	down      atomic.Bool
	held      chan struct{} // closed when the exchange is held
	release   chan struct{}
}

func (h *lateRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if c, ok := cmd.(onceCmd); ok && len(args) > 1 && args[1] == budgetScript.hash {
			close(h.held)
			<-h.release
			c.SetVal([]any{int64(1), int64(0)})
			return nil
		}
		if h.down.Load() {
			err := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused by the test")}
			cmd.SetErr(err)
			return err
		}
		cmd.SetErr(refusedByTest{})
		return refusedByTest{}
	}
}

// Reads have no side effects: a retry budget's Remaining while the store
// is on local limits returns what the local budget the next retry would
// spend holds, and makes none. So the same calls, with a read between
// them or not, leave the same retries. Here a spend sent before an outage
// is answered after it began, with the fleet's budget spent: the next
// retry's local budget starts from that answer, the latest the process
// has of the fleet's budget.
func TestABudgetsRemainingOnLocalLimitsChangesNothing(t *testing.T) {
	const size = 4
	run := func(read bool) (remaining float64, retry bool) {
		h := &lateRedis{held: make(chan struct{}), release: make(chan struct{})}
		rdb := unreachable()
		rdb.AddHook(h)
		defer rdb.Close()
		s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(time.Minute))
		defer s.Close()
		if s.Stats().Degraded {
			t.Fatal("a Redis that refuses the heartbeat: on local limits")
		}
		b := s.Budget("aws", size)
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.Take() // answered late
		}()
		<-h.held
		h.down.Store(true)
		s.heartbeat() // no answer: an outage begins
		if !s.Stats().Degraded {
			t.Fatal("a Redis that does not answer the heartbeat: not on local limits")
		}
		if read {
			remaining = b.Remaining()
		}
		close(h.release)
		<-done
		return remaining, b.Take()
	}
	_, without := run(false)
	read, with := run(true)
	if with != without || read != size {
		t.Errorf("a budget of %d, a spend answered after an outage began with the fleet's budget spent: a retry %v with a Remaining before the answer between (which read %v), %v without; want the same, and Remaining %d (the budget as last read, the next retry's then)",
			size, with, read, without, size)
	}
}

// Reads have no side effects: a bucket's Snapshot while the store is on
// local limits returns what the local bucket the next call would reserve
// on holds, and makes none. So the same calls, with a read between them
// or not, give the same waits. Here a call took a token on an outage's
// local limits, Redis came back, and a second outage began: its local
// bucket, made at the next call, is charged for the tokens taken lately
// (a burst's worth), from that call's time on.
func TestABucketsSnapshotOnLocalLimitsChangesNothing(t *testing.T) {
	spec := state.BucketSpec{Rate: 1, Burst: 2}
	later := 10 * time.Second
	run := func(read bool) (snap state.BucketSnapshot, wait time.Duration) {
		s, h := inOutage(t)
		defer s.Close()
		bk := s.Bucket("aws/1/us-east-1/ec2/DescribeVpcs", spec, 0)
		bk.Reserve(0) // on the first outage's local limits
		h.down.Store(false)
		s.heartbeat() // refused: Redis is up
		h.down.Store(true)
		s.heartbeat() // no answer
		s.heartbeat() // nor to this one, sent a timeout later: a second outage (Store.unanswered)
		if !s.Stats().Degraded {
			t.Fatal("a Redis that does not answer the heartbeat: not on local limits")
		}
		if read {
			snap = bk.Snapshot(0)
		}
		return snap, bk.Reserve(later)
	}
	_, without := run(false)
	snap, with := run(true)
	if with != without {
		t.Errorf("a token taken on an outage's local limits, then a second outage: a call at %v waits %v with a Snapshot at 0 between (which read %+v), %v without; want the same",
			later, with, snap, without)
	}
}
