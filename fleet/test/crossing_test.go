package test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// slowTakeProxy forwards to target and holds the answers of lease requests
// (the take script's, an array of 9 or more elements: 10 since it carries
// Redis's clock) for d: a lease answer that arrives after a later
// operation's.
func slowTakeProxy(t *testing.T, target string, d time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(up, c); up.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						if bytes.HasPrefix(buf[:n], []byte("*9\r\n")) || bytes.HasPrefix(buf[:n], []byte("*10\r\n")) {
							time.Sleep(d)
						}
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A lease request's answer, whose reading of the breaker Redis made before
// this process opened it and which arrives after the answer that opened
// it, does not set the process's view back to closed: an older reading
// does not replace a newer one, and the process keeps refusing calls
// through the breaker it opened (it let them through for up to
// WithBreakerStaleness).
func TestALateLeaseAnswerKeepsTheBreakerThisProcessOpened(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		addr := slowTakeProxy(t, be.addr(), 200*time.Millisecond)
		p := newProcess(t, at(addr), uniquePrefix(t), resilience.Config{}, fleet.WithTimeout(2*time.Second))
		spec := state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: time.Minute}
		br := p.store.Breaker(vpcsKey, spec)
		bk := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 10, Burst: 10}, 0)
		start := time.Now()
		clock := func() time.Duration { return time.Since(start) }
		done := make(chan struct{})
		go func() { bk.Reserve(clock()); close(done) }() // a lease request, answered in 200 ms
		time.Sleep(50 * time.Millisecond)
		if !br.Failure(clock()) {
			t.Fatal("did not open")
		}
		<-done
		if w, ok, _ := br.Allow(clock()); ok || w < 59*time.Second {
			t.Fatalf("this process opened the fleet's breaker, and its next Allow: ok %v, wait %v", ok, w)
		}
	})
}
