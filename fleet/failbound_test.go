package fleet

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// The failures a local breaker alone counted (Redis refused or never got
// their scripts) are kept for the write-back as the latest 64 times and a
// count of those before, as the fleet's breaker keeps them (ft): one time
// per failure, up to the threshold (2^28 allowed), grew without bound in
// the process, and the write-back sent each as an argument.
func TestTheUnsentFailuresAreBounded(t *testing.T) {
	h := &recordingRedis{script: breakerLearnedScript}
	rdb := unreachable()
	rdb.AddHook(h)
	defer rdb.Close()
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour))
	defer s.Close()
	b := s.Breaker("aws/123456789012/us-east-1/ec2/DescribeVpcs", state.BreakerSpec{Threshold: 1000, Cooldown: time.Minute, MaxCooldown: time.Minute}).(*sharedBreaker)
	toldClosed(b)
	for range 300 {
		if b.Failure(0) {
			t.Fatal("300 failures against a threshold of 1000: opened")
		}
	}
	if got := b.fallback().Snapshot(0).Failures; got != 300 {
		t.Fatalf("300 failures refused by Redis: the local breaker counts %d, want 300", got)
	}
	b.localMu.Lock()
	times, older := len(b.fails), b.older
	b.localMu.Unlock()
	if times > 64 || times+older != 300 {
		t.Errorf("300 failures refused by Redis: the process holds %d failure times and a count of %d before them, want the latest 64 and 236", times, older)
	}
	s.writeBack()
	h.mu.Lock()
	args := h.args
	h.mu.Unlock()
	at := 4 + len(b.args) + 5 // the command, the script, its key count, its key, the breaker's arguments, the local breaker's five
	if len(args) <= at {
		t.Fatalf("300 failures refused by Redis, then the heartbeat's write-back: sent %v", args)
	}
	// A count and two times, the write-back's record and number, then the
	// failures' times.
	if n := len(args) - at; n > 5+64 {
		t.Errorf("300 failures refused by Redis, then the heartbeat's write-back: %d arguments of failures sent (one per failure, held until then), want a count, two times, the record and number, and the latest 64 times", n)
	} else if older, _ := args[at].(int); older != 236 || n != 5+64 {
		t.Errorf("300 failures refused by Redis, then the heartbeat's write-back: a count of %v before %d times sent, want 236 before 64", args[at], n-5)
	}
}
