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

// toldClosed gives b an answer of Redis's, as every script's answer
// reaches the view (sharedBreaker.update): the fleet's breaker is closed
// with no failures, read now (another process's probe closed it).
func toldClosed(b *sharedBreaker) {
	b.update(0, reading{st: "closed", failures: "0", cooldown: strconv.FormatInt(unwrittenSpec.Cooldown.Microseconds(), 10),
		wait: "0", at: strconv.FormatInt(time.Now().UnixMicro(), 10), sent: mono()})
}

// outageOver opens b's local breaker during an outage (its threshold of
// failures, at 0 on the callers' clock), then brings Redis back: the
// heartbeat writes back what the local breaker learned (the hook refuses
// it, which is final: written), and the store is on the shared state
// again. Then the fleet's breaker is closed, as far as the process knows
// (toldClosed).
func outageOver(t *testing.T, s *Store, h *outageRedis, b *sharedBreaker) {
	t.Helper()
	for range unwrittenSpec.Threshold {
		b.Failure(0)
	}
	if _, ok, _ := b.Allow(0); ok {
		t.Fatal("the threshold of failures during an outage: the local breaker is not open")
	}
	h.down.Store(false)
	s.heartbeat()
	if s.Stats().Degraded {
		t.Fatal("a Redis that answers the heartbeat: still on local limits")
	}
	b.mu.Lock()
	unwritten := b.unwritten
	b.mu.Unlock()
	if unwritten {
		t.Fatal("Redis back: the outage's breaker is not written back")
	}
	toldClosed(b)
}

// The local breaker that stands in for the fleet's when Redis does not
// take an operation starts from the latest state the fleet told the
// process (the view), once what an earlier outage taught was written
// back: not from that outage's local breaker, whose cooldown the fleet
// may have ended since. That holds after Close (a closed store's calls go
// to the local breaker) and for a single operation Redis refuses. The
// calls are made past WithBreakerStaleness (a second) after the view was
// read, so that the closed view is not trusted without asking Redis.
// (The local breaker of the earlier outage was reused: open, it refused
// the scope's calls for the rest of a cooldown the fleet had ended.)
func TestTheLocalBreakerStartsFromTheViewOnceWrittenBack(t *testing.T) {
	for _, c := range []string{"after Close", "an operation Redis refuses"} {
		t.Run(c, func(t *testing.T) {
			s, h := inOutage(t)
			defer s.Close()
			b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
			outageOver(t, s, h, b)
			if c == "after Close" {
				s.Close()
			}
			now := 2 * time.Second
			if wait, ok, _ := b.Allow(now); !ok {
				t.Errorf("an outage's local breaker opened and written back, the fleet's breaker closed since, then %s: Allow refused the call by the local breaker %+v (wait %v), want the fleet's closed breaker",
					c, b.localSnapshot(now), wait)
			}
		})
	}
}

// What the local breaker counted that Redis has not heard of yet still
// counts when the local breaker starts again from the view: a failure an
// operation Redis refused counted (to be written back at the next
// heartbeat), when an outage begins before that heartbeat; and an
// outage's open breaker not written back at Close (Redis still gone).
// (A new outage's local breaker started from the view alone, the failure
// forgotten, by the local breaker and the write-back both.)
func TestTheLocalBreakerKeepsWhatIsUnwritten(t *testing.T) {
	t.Run("a refused operation's failure, then an outage", func(t *testing.T) {
		s, h := inOutage(t)
		defer s.Close()
		b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
		h.down.Store(false)
		s.heartbeat()
		toldClosed(b)
		b.Failure(0) // refused by Redis: the local breaker counts it, for the write-back
		h.down.Store(true)
		s.heartbeat() // Redis does not answer
		s.heartbeat() // nor a timeout later: a new outage (Store.unanswered)
		if !s.Stats().Degraded {
			t.Fatal("a Redis that does not answer the heartbeat: not on local limits")
		}
		b.Failure(0)
		if got := b.Snapshot(0); got.Failures != 2 {
			t.Errorf("a failure Redis refused to count, then an outage and a failure during it: the local breaker %+v, want 2 failures", got)
		}
		b.mu.Lock()
		unwritten := b.unwritten
		b.mu.Unlock()
		b.localMu.Lock()
		fails := len(b.fails)
		b.localMu.Unlock()
		if !unwritten || fails != 2 {
			t.Errorf("a failure Redis refused to count, then an outage and a failure during it: %d failures to write back (unwritten %v), want 2", fails, unwritten)
		}
	})
	t.Run("an outage's open breaker at Close", func(t *testing.T) {
		s, _ := inOutage(t)
		b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
		for range unwrittenSpec.Threshold {
			b.Failure(0)
		}
		toldClosed(b) // an answer that was in flight as the outage began
		s.Close()
		if _, ok, _ := b.Allow(2 * time.Second); ok {
			t.Error("an outage's local breaker opened and not written back (Redis gone at Close): after Close, Allow let a call through within its cooldown")
		}
	})
}

// The local bucket that stands in for the fleet's when Redis does not take
// an operation starts from the fleet's rate as the process last read it,
// once the outage whose local bucket slowed is over: after Close, and for
// a single operation Redis refuses. (The local bucket of the earlier
// outage was reused, at the rate a throttle during it left, which the
// fleet's never took.)
func TestTheLocalBucketStartsFromTheViewAfterAnOutage(t *testing.T) {
	spec := state.BucketSpec{Rate: 10, Burst: 10, Adaptive: true}
	for _, c := range []string{"after Close", "an operation Redis refuses"} {
		t.Run(c, func(t *testing.T) {
			s, h := inOutage(t)
			defer s.Close()
			b := s.Bucket("aws/1/us-east-1/ec2/DescribeVpcs", spec, 0).(*sharedBucket)
			b.Throttle(0, 0) // the local bucket slows
			if r := b.Snapshot(0).Rate; r >= spec.Rate {
				t.Fatalf("a throttle during an outage: the local bucket's rate %v, want below %v", r, spec.Rate)
			}
			h.down.Store(false)
			s.heartbeat()
			if s.Stats().Degraded {
				t.Fatal("a Redis that answers the heartbeat: still on local limits")
			}
			if c == "after Close" {
				s.Close()
			}
			if got := b.Snapshot(time.Second); got.Rate != spec.Rate {
				t.Errorf("a throttle during an outage that ended, the fleet's rate %v as far as the process knows, then %s: the local bucket %+v, want the fleet's rate",
					b.rate(), c, got)
			}
		})
	}
}

// gatedRedis is a Redis client's hook: while down is set, every command
// goes to the client's server, where nothing listens; otherwise the first
// command is refused at once (an error reply), and every later one waits
// until the test releases it (entered tells it is waiting), then gets a
// LOADING reply: Redis did not run it, and does not answer.
type gatedRedis struct {
	passHooks // passes dials and pipelines on
	down      atomic.Bool
	n         atomic.Int64
	entered   chan struct{}
	release   chan struct{}
}

type loadingByTest struct{}

func (loadingByTest) Error() string { return "LOADING Redis is loading the dataset in memory" }
func (loadingByTest) RedisError()   {}

func (h *gatedRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.down.Load() {
			return next(ctx, cmd)
		}
		if h.n.Add(1) == 1 {
			cmd.SetErr(refusedByTest{})
			return refusedByTest{}
		}
		h.entered <- struct{}{}
		<-h.release
		cmd.SetErr(loadingByTest{})
		return loadingByTest{}
	}
}

// A failure an outage's local breaker counted is not lost when a newer
// view comes while the write-back that sends it is on its way and Redis
// then does not run it: the local breaker is not made again from the view
// meanwhile (it would not count the failure, and the failure would not go
// back to it for the next try).
func TestAWriteBackOnItsWayKeepsTheLocalBreaker(t *testing.T) {
	h := &gatedRedis{entered: make(chan struct{}), release: make(chan struct{})}
	h.down.Store(true)
	rdb := unreachable()
	rdb.AddHook(h)
	defer rdb.Close()
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(100*time.Millisecond))
	defer s.Close()
	b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
	b.Failure(0) // Redis does not answer: counted by the local breaker alone
	h.down.Store(false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.heartbeat() // refused, then the write-back, which waits
	}()
	<-h.entered
	toldClosed(b) // an answer that was in flight
	during := b.Snapshot(0)
	h.release <- struct{}{}
	<-done
	b.localMu.Lock()
	fails := len(b.fails)
	b.localMu.Unlock()
	if got := b.Snapshot(0); during.Failures != 1 || got.Failures != 1 || fails != 1 {
		t.Errorf("a failure counted during an outage, a newer view while its write-back was on its way, which Redis did not run: the local breaker %+v during the write-back, %+v after it, %d failures to write back; want 1 failure each",
			during, got, fails)
	}
}
