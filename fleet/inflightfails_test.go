package fleet

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// steppedRedis is a Redis client's hook that refuses every command (an error
// reply: Redis did not run it) but a breaker's success and its write-back,
// each of which waits until the test releases it (entered tells it is
// waiting): the success is then answered as Redis would a closed breaker's
// (the failures reset), the write-back gets a LOADING reply (Redis did not
// run it, and does not answer).
type steppedRedis struct {
	passHooks // passes dials and pipelines on
	entered   chan string
	release   chan struct{}
}

func (h *steppedRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		c, ok := cmd.(onceCmd)
		switch {
		case ok && len(args) > 1 && args[1] == breakerSuccessScript.hash:
			h.entered <- "success"
			<-h.release
			c.SetVal([]any{int64(0), "closed", strconv.FormatInt(time.Now().UnixMicro(), 10),
				strconv.FormatInt(unwrittenSpec.Cooldown.Microseconds(), 10)})
			return nil
		case ok && len(args) > 1 && args[1] == breakerLearnedScript.hash:
			h.entered <- "write-back"
			<-h.release
			cmd.SetErr(loadingByTest{})
			return loadingByTest{}
		}
		cmd.SetErr(refusedByTest{})
		return refusedByTest{}
	}
}

// A success Redis runs while a write-back is on its way ends the failures
// the local breaker counted before the success was sent, and only those:
// when Redis then does not run the write-back, the failures it carried
// that came after the success was sent go back into the local breaker's
// count for the next write-back, and the local breaker made again from the
// view counts them. (They were lost: the fleet's breaker never counted
// them, nor did the local breaker once made again from the view.)
func TestAFailureAfterASuccessOutlivesAWriteBackRedisDidNotRun(t *testing.T) {
	h := &steppedRedis{entered: make(chan string), release: make(chan struct{})}
	rdb := unreachable()
	rdb.AddHook(h)
	defer rdb.Close()
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(time.Minute))
	defer s.Close()
	if s.Stats().Degraded {
		t.Fatal("a Redis that refuses the heartbeat: on local limits")
	}
	b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
	toldClosed(b)
	b.Failure(0) // refused: counted by the local breaker, for the write-back; the next success ends it
	succeeded := make(chan struct{})
	go func() {
		defer close(succeeded)
		b.Success()
	}()
	if got := <-h.entered; got != "success" {
		t.Fatalf("%s sent, want the success", got)
	}
	b.Failure(0) // refused, reported after the success was sent: the success does not end it
	wrote := make(chan bool)
	go func() { wrote <- b.writeBack() }()
	if got := <-h.entered; got != "write-back" {
		t.Fatalf("%s sent, want the write-back", got)
	}
	h.release <- struct{}{} // Redis runs the success
	<-succeeded
	h.release <- struct{}{} // and does not run the write-back
	if <-wrote {
		t.Fatal("a write-back Redis did not run reported written")
	}
	b.localMu.Lock()
	fails := len(b.fails)
	b.localMu.Unlock()
	b.mu.Lock()
	unwritten := b.unwritten
	b.mu.Unlock()
	if got := b.Snapshot(0); got.Failures != 1 || fails != 1 || !unwritten {
		t.Errorf("a failure Redis refused, a success sent, a failure Redis refused, a write-back on its way, the success run, the write-back not run: the local breaker %+v, %d failures to write back, unwritten %v; want 1 failure (the one after the success), 1 to write back, unwritten",
			got, fails, unwritten)
	}
}
