package test

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Some tests start redis-server processes of their own (TLS, Sentinel),
// on free ports of 127.0.0.1, stopped when the test ends. ./scripts/test
// installs redis-server; a plain go test without it skips them.

// redisServerBinary returns the path of redis-server.
func redisServerBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		if _, underScript := redisServer(t); underScript {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skip("needs redis-server (./scripts/test installs it)")
	}
	return p
}

// freePort returns a port of 127.0.0.1 nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	// Below Linux's ephemeral range (32768-60999 by default): a client
	// dialling a dead server's port in that range, again and again as
	// go-redis and Sentinel do after a kill, can be given that very port
	// as its own and connect to itself (a TCP simultaneous open), which
	// then answers like a live server: Sentinel saw the killed master come
	// back, and the store never noticed it had died.
	//
	// A port once returned is never returned again: a test starts its
	// servers after picking all their ports, and two picks of one port
	// (free at both) left a replica unable to bind while its wait for a
	// listener found the primary there (TestSentinelFailover: "bind:
	// Address already in use").
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		if given[port] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		given[port] = true
		return port
	}
	t.Fatal("no free port in 20000-31999")
	return 0
}

// given holds the ports freePort returned.
var (
	givenMu sync.Mutex
	given   = map[int]bool{}
)

// server is a redis-server process a test started.
type server struct {
	addr string
	cmd  *exec.Cmd
	log  *syncBuffer
}

// startServer starts redis-server with args (a configuration file's
// directives, as flags) on port, and waits until it accepts connections.
func startServer(t *testing.T, port int, args ...string) *server {
	t.Helper()
	dir := t.TempDir()
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, args...)
	return start(t, exec.Command(redisServerBinary(t), all...), port)
}

// startSentinel starts a Sentinel on port, which needs a configuration
// file it can write.
func startSentinel(t *testing.T, port int, conf string) *server {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(redisServerBinary(t), file, "--sentinel", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir)
	return start(t, cmd, port)
}

func start(t *testing.T, cmd *exec.Cmd, port int) *server {
	t.Helper()
	s := &server{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd, log: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("redis-server on %s:\n%s", s.addr, s.log.String())
		}
	})
	for range 200 {
		if c, err := net.DialTimeout("tcp", s.addr, 50*time.Millisecond); err == nil {
			c.Close()
			return s
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not start:\n%s", s.addr, s.log.String())
	return nil
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// freePort never returns a port twice, though each it returns is free
// again at once: without that, 500 picks of 12,000 ports all but
// certainly repeat one.
func TestFreePortReturnsEachPortOnce(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p := freePort(t)
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}
