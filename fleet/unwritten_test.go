package fleet

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// outageRedis is a Redis client's hook: while down is set, every command
// goes to the client's server, where nothing listens (a Redis that does
// not answer); otherwise the hook refuses it at once (an error reply:
// Redis answers, and a write-back it refuses is not sent again).
type outageRedis struct {
	passHooks // passes dials and pipelines on
	down      atomic.Bool
}

// refusedByTest is outageRedis's error reply.
type refusedByTest struct{}

func (refusedByTest) Error() string { return "ERR refused by the test" }
func (refusedByTest) RedisError()   {}

func (h *outageRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.down.Load() {
			return next(ctx, cmd)
		}
		cmd.SetErr(refusedByTest{})
		return refusedByTest{}
	}
}

// inOutage returns a store on a Redis that does not answer (on local
// limits from its first heartbeat, which New sends) and the hook that
// brings Redis back; the heartbeat runs when the test says (heartbeat).
func inOutage(t *testing.T) (*Store, *outageRedis) {
	t.Helper()
	h := &outageRedis{}
	h.down.Store(true)
	rdb := unreachable()
	rdb.AddHook(h)
	t.Cleanup(func() { rdb.Close() })
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(100*time.Millisecond))
	if !s.Stats().Degraded {
		t.Fatal("a store whose Redis does not answer is not on local limits")
	}
	return s, h
}

var unwrittenSpec = state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: 4 * time.Minute}

// letGo returns a weak pointer to the breaker of key, after failures
// failures counted on it; nothing else holds the breaker.
//
//go:noinline
func letGo(s *Store, key string, failures int) weak.Pointer[sharedBreaker] {
	b := s.Breaker(key, unwrittenSpec).(*sharedBreaker)
	for range failures {
		b.Failure(0)
	}
	return weak.Make(b)
}

// collect runs the garbage collector until what only weak pointers reach
// is gone.
func collect() {
	for range 3 {
		runtime.GC()
	}
}

// The store holds a breaker whose local breaker learned what was not
// written back to Redis yet until it is written back, whatever let go of
// it (the governor's Reset, a Configure that replaced it): its knowledge
// does not depend on the collector. It holds no other: a breaker with
// nothing to write back, and one written back, are the collector's once
// nothing else holds them. (The store held every breaker by a weak pointer
// alone: one let go of during an outage was written back only when the
// collector had not taken it yet.)
func TestABreakerIsKeptUntilWrittenBack(t *testing.T) {
	s, h := inOutage(t)
	defer s.Close()
	quiet := letGo(s, "aws/1/us-east-1/ec2/DescribeVpcs", 0)
	failed := letGo(s, "aws/1/us-east-1/ec2/DescribeSubnets", 1)
	collect()
	if quiet.Value() != nil {
		t.Error("a breaker with nothing to write back was kept after it was let go of")
	}
	if failed.Value() == nil {
		t.Fatal("a breaker that counted a failure while Redis did not answer was collected after it was let go of, before it was written back: the failure is lost")
	}
	h.down.Store(false)
	s.heartbeat() // the write-back: Redis refuses it, which is final
	if s.Stats().Degraded {
		t.Fatal("a Redis that answers the heartbeat: still on local limits")
	}
	collect()
	if failed.Value() != nil {
		t.Error("a breaker written back was kept after it was let go of")
	}
}

// Close lets go of what the local limits learned and the heartbeat would
// have written back: a bucket's pause owed to Redis and a breaker's
// failures, held before Close and those that come after it (a closed store
// writes nothing back), so that a governor that goes on with local limits
// after Close keeps none of the buckets and breakers it lets go of. (The
// store kept each bucket that owed a pause, one more for every bucket
// paused after Close, for as long as the store lived.)
func TestAClosedStoreKeepsNothingUnwritten(t *testing.T) {
	for _, c := range []string{"learned before Close", "learned after Close"} {
		t.Run(c, func(t *testing.T) {
			s, _ := inOutage(t)
			if c == "learned after Close" {
				s.Close()
			}
			bucket := func() weak.Pointer[sharedBucket] {
				b := s.Bucket("aws/1/us-east-1/ec2/DescribeVpcs", state.BucketSpec{Rate: 10, Burst: 10}, 0).(*sharedBucket)
				b.Pause(0, time.Minute)
				return weak.Make(b)
			}()
			breaker := letGo(s, "aws/1/us-east-1/ec2/DescribeVpcs", 1)
			s.Close()
			collect()
			if bucket.Value() != nil {
				t.Errorf("a bucket paused during an outage (%s) was kept after Close", c)
			}
			if breaker.Value() != nil {
				t.Errorf("a breaker that counted a failure during an outage (%s) was kept after Close", c)
			}
			runtime.KeepAlive(s) // as a governor that goes on after Close holds its store
		})
	}
}

// Once Close let go of a breaker whose local breaker learned something
// while Redis did not answer, nothing will write it back: the local
// breaker alone decides the scope's calls, and the breaker is Pristine as
// soon as its local breaker is (closed with no failures), so that the
// governor's reclaimer can drop the scope as it drops one of an in-process
// breaker. Until then it is not: a failure counted, an open breaker, are
// the scope's to keep. Before Close, such a breaker is not Pristine
// whatever its local breaker holds: what it learned waits for Redis.
// (After Close the breaker stayed not Pristine for good, and the governor
// kept its scope for as long as it lived.)
func TestAClosedStoresBreakerIsPristineOnceItsLocalBreakerIs(t *testing.T) {
	for _, c := range []struct {
		name     string
		failures int // counted during the outage
	}{
		{"a failure counted", 1},
		{"opened", unwrittenSpec.Threshold},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := inOutage(t)
			b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
			for range c.failures {
				b.Failure(0)
			}
			if b.Pristine() {
				t.Fatalf("%s during an outage: Pristine before Close, with nothing written back", c.name)
			}
			s.Close()
			if b.Pristine() {
				t.Fatalf("%s during an outage, then Close: Pristine while its local breaker is not (%+v)", c.name, b.Snapshot(0))
			}
			if c.failures >= unwrittenSpec.Threshold {
				if _, ok, probe := b.Allow(unwrittenSpec.Cooldown); !ok || !probe {
					t.Fatalf("%s during an outage, then Close: no probe at the end of the cooldown", c.name)
				}
			}
			b.Success() // resets the failure, or the probe's: closes the breaker
			if !b.Pristine() {
				t.Errorf("%s during an outage, then Close, and its local breaker closed with no failures: not Pristine (%+v), the governor keeps its scope for good",
					c.name, b.Snapshot(2*unwrittenSpec.Cooldown))
			}
		})
	}
}
