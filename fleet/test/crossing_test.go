package test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// leaseAnswer matches the answer of a lease request (the take script's,
// an array of 14 elements, the age of the breaker's last success last).
// The test that slows it checks that it held one, so that it fails when
// the answer changes its length.
func leaseAnswer(answer []byte) bool { return bytes.HasPrefix(answer, []byte("*14\r\n")) }

// A lease request's answer, whose reading of the breaker Redis made before
// this process opened it and which arrives after the answer that opened
// it, does not set the process's view back to closed: an older reading
// does not replace a newer one, and the process keeps refusing calls
// through the breaker it opened (it let them through for up to
// WithBreakerStaleness).
func TestALateLeaseAnswerKeepsTheBreakerThisProcessOpened(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		px.SlowAnswers(leaseAnswer, 200*time.Millisecond)
		p := newProcess(t, at(px.Addr()), uniquePrefix(t), resilience.Config{}, fleet.WithTimeout(2*time.Second))
		spec := state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: time.Minute}
		br := p.store.Breaker(vpcsKey, spec)
		bk := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 10, Burst: 10}, 0)
		start := time.Now()
		clock := func() time.Duration { return time.Since(start) }
		done := make(chan struct{})
		var took time.Duration
		go func() { // a lease request, answered in 200 ms
			sent := time.Now()
			bk.Reserve(clock())
			took = time.Since(sent)
			close(done)
		}()
		time.Sleep(50 * time.Millisecond)
		if !br.Failure(clock()) {
			t.Fatal("did not open")
		}
		<-done
		if took < 150*time.Millisecond {
			t.Fatalf("the lease request was answered in %v: the proxy did not hold its answer (leaseAnswer does not match it)", took)
		}
		if w, ok, _ := br.Allow(clock()); ok || w < 59*time.Second {
			t.Fatalf("this process opened the fleet's breaker, and its next Allow: ok %v, wait %v", ok, w)
		}
	})
}
