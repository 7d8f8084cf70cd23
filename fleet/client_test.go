package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/state"
)

// Open makes the client of each of go-redis's URL forms, every one ending
// its calls at their context's deadline.
func TestOpenMakesTheClientOfEachURLForm(t *testing.T) {
	single, err := openClient("redis://u:p@127.0.0.1:6390/2?dial_timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if o := single.(*redis.Client).Options(); o.Addr != "127.0.0.1:6390" || o.DB != 2 || !o.ContextTimeoutEnabled || o.DialTimeout != time.Second {
		t.Fatalf("single server: %+v", o)
	}
	if !endsAtDeadline(single) {
		t.Fatal("Open's single-server client does not end calls at their deadline")
	}

	cluster, err := openClient("redis://u:p@127.0.0.1:7301?addr=127.0.0.1:7302&addr=127.0.0.1:7303")
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	cc, ok := cluster.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("a URL with addr= made a %T, want a *redis.ClusterClient", cluster)
	}
	if o := cc.Options(); fmt.Sprint(o.Addrs) != "[127.0.0.1:7301 127.0.0.1:7302 127.0.0.1:7303]" || o.Username != "u" || o.Password != "p" || !o.ContextTimeoutEnabled {
		t.Fatalf("cluster: %+v", o)
	}

	sentinel, err := openClient("redis://su:sp@127.0.0.1:26379/1?master_name=mymaster&addr=127.0.0.1:26380&password=mp")
	if err != nil {
		t.Fatal(err)
	}
	defer sentinel.Close()
	if o := sentinel.(*redis.Client).Options(); o.Addr != "FailoverClient" || o.DB != 1 || o.Password != "mp" || !o.ContextTimeoutEnabled {
		t.Fatalf("sentinel: %+v", o)
	}

	// A client the caller made without ContextTimeoutEnabled, or a
	// cluster's, is bounded by the store.
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer plain.Close()
	if endsAtDeadline(plain) || endsAtDeadline(cluster) {
		t.Fatal("a client that may outlast its deadline was trusted to end at it")
	}
}

// No error Open returns shows the URL's password.
func TestOpenNeverShowsThePassword(t *testing.T) {
	for _, u := range []string{
		"redis://alice:s3cr%zzet@127.0.0.1:6379/0",        // a bad escape in the password
		"redis://alice:s3cret@127.0.0.1:notaport/0",       // a bad port
		"redis://alice:s3cret@127.0.0.1:6379/x",           // a bad database
		"rediss://alice:s3cret@127.0.0.1:6379/0?nope=1",   // an unknown option
		"redis://alice:s3cret@127.0.0.1:7301?addr=nohost", // a bad cluster node
		"redis://alice:s3cret@127.0.0.1:7301?addr=a:1&bogus=2",
		"redis://alice:s3cret@127.0.0.1:26379?master_name=m&pool_size=x",
		"http://alice:s3cret@127.0.0.1:6379/0",
		"alice:s3cret@127.0.0.1:6379",
		"redis://alice:s3cret@[::1/0",
	} {
		_, err := Open(u)
		if err == nil {
			t.Errorf("%s: accepted", u)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr") || strings.Contains(msg, "cret") {
			t.Errorf("the error for %s shows the password: %v", u, err)
		}
	}
	if got := redact("rediss://alice:s3cret@redis:6379/0?x=1"); got != "rediss://xxxxx@redis:6379/0?x=1" {
		t.Errorf("redact: %s", got)
	}
}

// errorReplies are Redis's error replies: first those that refuse every
// command, then refusals of one operation.
var errorReplies = []string{
	"LOADING Redis is loading the dataset in memory", "READONLY You can't write against a read only replica.",
	"MASTERDOWN Link with MASTER is down", "CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot",
	"MOVED 16097 127.0.0.1:7303", "ASK 16097 127.0.0.1:7303", "NOAUTH Authentication required.",
	"WRONGPASS invalid username-password pair or user is disabled.", "OOM command not allowed when used memory > 'maxmemory'.",
	"BUSY Redis is busy running a script.", "MISCONF Redis is configured to save RDB snapshots", "NOREPLICAS Not enough good replicas to write.",
	"ERR max number of clients reached",
	// one operation's
	"WRONGTYPE Operation against a key holding the wrong kind of value",
	"NOPERM this user has no permissions to access one of the keys used as arguments",
	"ERR user_script:12: Script attempted to access nonexistent global variable",
}

const unavailableReplies = 14

// A refusal of every command, or no answer, is Redis unavailable; a
// refusal of one operation on its keys is not. Either refusal says that
// Redis did not run the command.
func TestUnavailableReadsTheErrorCode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveErrors(ln, errorReplies)
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, PoolSize: 1})
	defer rdb.Close()
	for i, reply := range errorReplies {
		err := rdb.Get(context.Background(), "k").Err()
		var re redis.Error
		if !errors.As(err, &re) || err.Error() != reply {
			t.Fatalf("%s: got %v", reply, err)
		}
		if got, want := unavailable(err), i < unavailableReplies; got != want {
			t.Errorf("%s: unavailable %v, want %v", reply, got, want)
		}
		if got, want := redirected(err), strings.HasPrefix(reply, "MOVED") || strings.HasPrefix(reply, "ASK"); got != want {
			t.Errorf("%s: redirected %v, want %v", reply, got, want)
		}
		if !notRun(err) {
			t.Errorf("%s: notRun false for an error reply: Redis did not run the command", reply)
		}
	}
	if !unavailable(context.DeadlineExceeded) || !unavailable(io.EOF) || !unavailable(redis.ErrClosed) {
		t.Error("a timeout, a closed connection or a closed client is not Redis unavailable")
	}
}

// A connection that could not be made, or none free in the client's pool,
// says, as an error reply does, that Redis did not run the command (what it
// counted is sent again, as nothing was); a timeout or a connection that closed may
// have come after it did, so that what the command counted is not sent
// again.
func TestNotRunKnowsWhatRedisDidNotRun(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close() // nothing listens there: the dial fails
	down := redis.NewClient(&redis.Options{Addr: closed.Addr().String(), MaxRetries: -1})
	defer down.Close()
	if err := down.Get(context.Background(), "k").Err(); err == nil || !notRun(err) {
		t.Errorf("a connection refused: notRun false (%v)", err)
	}
	// A command that waited for a connection of the client's pool in vain
	// was never written to any.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go serveErrors(silent, nil) // answers no GET
	busy := redis.NewClient(&redis.Options{Addr: silent.Addr().String(), MaxRetries: -1, PoolSize: 1, PoolTimeout: 50 * time.Millisecond, ReadTimeout: -1, Protocol: 2})
	held := make(chan struct{})
	go func() {
		defer close(held)
		busy.Get(context.Background(), "k") // holds the pool's one connection until the client closes
	}()
	for busy.PoolStats().TotalConns == 0 {
		runtime.Gosched()
	}
	err = busy.Get(context.Background(), "k").Err()
	busy.Close()
	<-held
	if !errors.Is(err, redis.ErrPoolTimeout) || !notRun(err) {
		t.Errorf("no connection free in the pool (%v): notRun %v, want true", err, notRun(err))
	}
	if notRun(context.DeadlineExceeded) || notRun(io.EOF) {
		t.Error("a timeout or a closed connection read as a command Redis did not run")
	}
}

// serveErrors answers each GET with the next of replies, as an error (none
// with no replies), and the client's handshake as a RESP2 server does.
func serveErrors(ln net.Listener, replies []string) {
	next := 0
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				break
			}
			n, _ := strconv.Atoi(strings.TrimSpace(line[1:])) // *<arguments>
			var args []string
			for range n { // $<length>, then the argument
				r.ReadString('\n')
				a, _ := r.ReadString('\n')
				args = append(args, strings.TrimSpace(a))
			}
			switch {
			case len(args) > 0 && strings.EqualFold(args[0], "GET"):
				if len(replies) > 0 {
					fmt.Fprintf(c, "-%s\r\n", replies[next%len(replies)])
					next++
				}
			case len(args) > 0 && strings.EqualFold(args[0], "HELLO"):
				io.WriteString(c, "-ERR unknown command 'HELLO'\r\n") // a RESP2 server
			default:
				io.WriteString(c, "+OK\r\n")
			}
		}
		c.Close()
	}
}

// A script whose answer is lost (the connection closes after Redis ran it)
// is not sent again, whatever the client: the scripts are not idempotent.
// The server here counts the scripts it is sent and closes the connection
// instead of answering; go-redis would send each again up to its
// MaxRetries (3 by default) on a single server's client, and up to
// MaxRedirects on a cluster's.
func TestALostAnswerNeverSendsAScriptAgain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var scripts atomic.Int64
	go serveLostAnswers(ln, &scripts)
	addr := ln.Addr().String()
	for _, c := range []struct {
		name string
		open func(...Option) (*Store, error)
	}{
		{"Open, one server", func(o ...Option) (*Store, error) { return Open("redis://"+addr+"/0", o...) }},
		{"Open, a cluster", func(o ...Option) (*Store, error) { return Open("redis://"+addr+"?addr="+addr, o...) }},
		{"New, a client of go-redis's defaults", func(o ...Option) (*Store, error) {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { rdb.Close() })
			return New(rdb, o...), nil
		}},
		{"New, a cluster client of go-redis's defaults", func(o ...Option) (*Store, error) {
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
			t.Cleanup(func() { rdb.Close() })
			return New(rdb, o...), nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := scripts.Load()
			s, err := c.open(WithLogger(quiet), WithHeartbeat(time.Hour)) // New's heartbeat, no other
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if n := scripts.Load() - before; n != 1 {
				t.Fatalf("New's heartbeat was sent %d times", n)
			}
			// Its answer lost, the store is on local limits; back on the
			// shared state, one failure is one script sent.
			s.toShared()
			before = scripts.Load()
			s.Breaker("k", state.BreakerSpec{Threshold: 2, Cooldown: time.Minute, MaxCooldown: time.Minute}).Failure(0)
			if n := scripts.Load() - before; n != 1 {
				t.Fatalf("one failure sent its script %d times", n)
			}
		})
	}
}

// serveLostAnswers counts the scripts (EVALSHA, EVAL) it is sent and
// closes the connection without answering them. It answers a cluster
// client's CLUSTER SLOTS as a one-node cluster holding every slot, and
// the handshake as a RESP2 server does.
func serveLostAnswers(ln net.Listener, scripts *atomic.Int64) {
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
				var args []string
				for range n {
					r.ReadString('\n')
					a, _ := r.ReadString('\n')
					args = append(args, strings.TrimSpace(a))
				}
				if len(args) == 0 {
					return
				}
				switch strings.ToUpper(args[0]) {
				case "EVALSHA", "EVAL":
					scripts.Add(1)
					return // the answer is lost
				case "HELLO":
					io.WriteString(c, "-ERR unknown command 'HELLO'\r\n")
				case "CLUSTER":
					fmt.Fprintf(c, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$%d\r\n%s\r\n:%s\r\n", len(host), host, port)
				case "PING":
					io.WriteString(c, "+PONG\r\n")
				case "COMMAND":
					io.WriteString(c, "*0\r\n")
				default:
					io.WriteString(c, "+OK\r\n")
				}
			}
		}()
	}
}

// A malformed Redis URL is named on one line: a control character that
// made it malformed (a newline in an environment variable) is written
// quoted, so that the error forges no line of a log that carries it.
func TestAMalformedURLIsNamedOnOneLine(t *testing.T) {
	_, err := openClient("redis://u:p@127.0.0.1:6390/\nINFO fleet ok")
	if err == nil || strings.ContainsAny(err.Error(), "\n") || strings.Contains(err.Error(), "u:p") {
		t.Errorf("openClient of a URL with a newline: %v; want an error on one line, without the password", err)
	}
}

// A timeout, the operation's deadline or no connection free in time, may
// be a busy host's late answer; a connection closed, reset or refused, an
// error reply or a client closed is not.
func TestLateIsATimeoutAlone(t *testing.T) {
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}
	for _, err := range []error{context.DeadlineExceeded, redis.ErrPoolTimeout, dialTimeout, readTimeout,
		fmt.Errorf("wrapped: %w", context.DeadlineExceeded)} {
		if !late(err) {
			t.Errorf("%v: not late, want a late answer", err)
		}
	}
	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, redis.ErrClosed,
		&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
		&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)},
		&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
		refusal{}} {
		if late(err) {
			t.Errorf("%v: late, want no late answer", err)
		}
	}
}

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
