package fleet

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// A Sentinel client asking sentinels that do not answer where the master
// is holds its Close until that dial ends: go-redis makes it in the
// background, with its retries and its read timeout (3 s a try by
// default), seconds in all. Open's Store does not wait for it past the
// operation timeout from Close's start, as for its other Redis waits: the
// client goes on closing in the background. In real time (the sentinel is
// a TCP listener that reads every command and answers none); before the
// fix Close took 3 s and more.
func TestCloseDoesNotWaitForASentinelsDial(t *testing.T) {
	const timeout = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	s, err := Open("redis://"+ln.Addr().String()+"/0?master_name=m", WithLogger(quiet), WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Stats().Degraded {
		t.Fatal("sentinels that do not answer: not on local limits")
	}
	start := time.Now()
	s.Close()
	// The bound has room for a loaded machine's scheduling; the dial
	// Close no longer waits for takes 3 s at least.
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("Close took %v, want about the operation timeout, %v", took, timeout)
	}
}
