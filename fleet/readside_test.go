package fleet

import (
	"context"
	"fmt"
	"strconv"
	"sync"
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
