package test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// garbageServer is a fake Redis on 127.0.0.1 that answers every script
// (EVALSHA, EVAL) with reply, a well-formed RESP answer of the wrong type
// or shape, and the rest as a RESP2 server does: what a proxy in the way,
// a server that only speaks the protocol, or a broken script engine would
// send.
type garbageServer struct {
	ln    net.Listener
	reply atomic.Value // string
}

func startGarbage(t *testing.T, reply string) *garbageServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &garbageServer{ln: ln}
	g.reply.Store(reply)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.serve(c)
		}
	}()
	return g
}

func (g *garbageServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || len(line) < 2 {
			return
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:])) // *<arguments>
		var args []string
		for range n { // $<length>, then the argument
			l, err := r.ReadString('\n')
			if err != nil || len(l) < 2 {
				return
			}
			size, _ := strconv.Atoi(strings.TrimSpace(l[1:]))
			a := make([]byte, size+2)
			if _, err := io.ReadFull(r, a); err != nil {
				return
			}
			args = append(args, string(a[:size]))
		}
		if len(args) == 0 {
			return
		}
		var out string
		switch strings.ToUpper(args[0]) {
		case "EVALSHA", "EVAL":
			out = g.reply.Load().(string)
		case "HELLO":
			out = "-ERR unknown command 'HELLO'\r\n"
		case "PING":
			out = "+PONG\r\n"
		default:
			out = "+OK\r\n"
		}
		if _, err := io.WriteString(c, out); err != nil {
			return
		}
	}
}

// array is a RESP array of n copies of elem.
func array(n int, elem string) string {
	return "*" + strconv.Itoa(n) + "\r\n" + strings.Repeat(elem, n)
}

// garbageReplies are answers no script of the store gives: of another
// type, empty, too short, or as long as the longest (the lease
// request's, 14) with elements of the wrong type or out of range.
var garbageReplies = []struct{ name, reply string }{
	{"an integer", ":1\r\n"},
	{"a status", "+OK\r\n"},
	{"a nil", "$-1\r\n"},
	{"an empty array", "*0\r\n"},
	{"a short array", array(1, ":1\r\n")},
	{"an array of nils", array(14, "$-1\r\n")},
	{"an array of words", array(14, "$3\r\nabc\r\n")},
	{"an array of arrays", array(14, "*1\r\n:1\r\n")},
	{"an array of zeros", array(14, ":0\r\n")},
	{"an array of negative numbers", array(14, ":-1\r\n")},
	{"an array of huge numbers", array(14, ":9223372036854775807\r\n")},
	{"an array of NaNs", array(14, "$3\r\nnan\r\n")},
	// The shape of a lease request's answer, granting no token, which the
	// script never does (it grants one for each caller queued).
	{"a lease of no token", "*14\r\n:0\r\n$1\r\n0\r\n$4\r\n1000\r\n$4\r\n1000\r\n$6\r\nclosed\r\n" +
		"$1\r\n0\r\n$1\r\n0\r\n:0\r\n$1\r\n0\r\n$1\r\n0\r\n$1\r\n0\r\n$1\r\n0\r\n$0\r\n\r\n$2\r\n-1\r\n"},
	// The shape of a breaker's answer to a call, refusing it while closed,
	// which the script never does.
	{"a closed breaker refusing", "*8\r\n:0\r\n$1\r\n0\r\n$6\r\nclosed\r\n:0\r\n$1\r\n0\r\n$7\r\n1000000\r\n$0\r\n\r\n$2\r\n-1\r\n"},
}

// TestARedisAnsweringGarbage: a server that answers the store's scripts
// with well-formed answers of the wrong type or shape fails no call, for
// the bucket and its lease, the breaker and the retry budget: each goes
// on with local limits, as when Redis refuses an operation, within the
// operation's timeout, and the store logs it (and counts it as an error).
// No call hangs, and none is refused by a breaker or a budget that the
// garbage made up.
func TestARedisAnsweringGarbage(t *testing.T) {
	for _, c := range garbageReplies {
		t.Run(c.name, func(t *testing.T) {
			srv := startGarbage(t, c.reply)
			rdb := redis.NewClient(&redis.Options{Addr: srv.ln.Addr().String(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
			t.Cleanup(func() { rdb.Close() })
			var logs syncBuffer
			store := fleet.New(rdb, fleet.WithPrefix(uniquePrefix(t)), fleet.WithTimeout(100*time.Millisecond),
				fleet.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			t.Cleanup(func() { store.Close() })
			// 1,000 rps with a burst of 10: leases of up to 64 tokens.
			cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(10), BreakerThreshold: 3,
				Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 10}}}}
			gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(store))
			if err != nil {
				t.Fatal(err)
			}
			call := func(what string, fn func(context.Context) error, opts ...resilience.CallOption) error {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start := time.Now()
				err := resilience.Do(ctx, vpcs, fn, append([]resilience.CallOption{resilience.WithGovernor(gov)}, opts...)...)
				if d := time.Since(start); d > 2*time.Second || ctx.Err() != nil {
					t.Fatalf("%s took %v (%v): it hung on the garbage", what, d, err)
				}
				return err
			}
			// The bucket and its lease.
			for i := range 30 {
				if err := call("a call", ok); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			// The breaker: failures below its threshold refuse nothing.
			for i := range 2 {
				err := call("a failing call", func(context.Context) error { return transient }, once)
				if !errors.Is(err, transient) || errors.Is(err, state.ErrCircuitOpen) {
					t.Fatalf("failing call %d: %v, want its own error", i, err)
				}
			}
			if err := call("a call after the failures", ok); err != nil {
				t.Fatalf("a call after 2 failures (threshold 3): %v", err)
			}
			// The retry budget: a call's third and fourth retries cost a
			// token each, which a budget of 10 has.
			sent := 0
			err = call("a retried call", func(context.Context) error { sent++; return transient },
				resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Millisecond, MaxBackoff: 2 * time.Millisecond}))
			if !errors.Is(err, transient) || errors.Is(err, state.ErrBudgetExhausted) || sent != 5 {
				t.Fatalf("a call with 4 retries: %v after %d attempts; want its own error after 5", err, sent)
			}
			st := store.Stats()
			if st.RedisErrors == 0 {
				t.Errorf("the garbage counted no error: %+v", st)
			}
			if !strings.Contains(logs.String(), "local limits") {
				t.Errorf("nothing logged of the garbage: %q", logs.String())
			}
		})
	}
}

// TestARedisAnsweringGarbageIsAnOutage: a server that answers every
// script with garbage is a Redis the store cannot use, as a dead one is:
// after a few such answers in a row the store switches to local limits,
// counts the switch (Fallbacks), logs it once, and sends nothing more but
// the heartbeat's probe, which keeps it there while the answers stay
// garbage. Calls cost no round trip each, and none fails.
func TestARedisAnsweringGarbageIsAnOutage(t *testing.T) {
	for _, c := range garbageReplies {
		t.Run(c.name, func(t *testing.T) {
			srv := startGarbage(t, c.reply)
			rdb := redis.NewClient(&redis.Options{Addr: srv.ln.Addr().String(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
			t.Cleanup(func() { rdb.Close() })
			var logs syncBuffer
			store := fleet.New(rdb, fleet.WithPrefix(uniquePrefix(t)), fleet.WithTimeout(100*time.Millisecond),
				fleet.WithHeartbeat(50*time.Millisecond), fleet.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			t.Cleanup(func() { store.Close() })
			cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 10}}}}
			gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(store))
			if err != nil {
				t.Fatal(err)
			}
			const calls = 50
			before := store.Stats()
			start := time.Now()
			for i := range calls {
				if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov)); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			took := time.Since(start)
			after := store.Stats()
			// The heartbeat's probes, one per 50 ms, are not the calls'.
			beats := int64(took/(50*time.Millisecond)) + 2
			if ops := after.RedisCalls - before.RedisCalls; ops > beats+5 {
				t.Errorf("%d calls cost %d Redis operations in %v (at most %d heartbeats), %.2f per call; want the garbage taken for an outage after a few",
					calls, ops, took, beats, float64(ops)/calls)
			}
			if !after.Degraded || after.Fallbacks != 1 {
				t.Errorf("after %d calls answered with garbage: Degraded %v, Fallbacks %d; want on local limits, switched once", calls, after.Degraded, after.Fallbacks)
			}
			time.Sleep(200 * time.Millisecond) // heartbeats, each answered with garbage
			if st := store.Stats(); !st.Degraded || st.Fallbacks != 1 {
				t.Errorf("after the heartbeats' garbage: Degraded %v, Fallbacks %d; want still on local limits, switched once", st.Degraded, st.Fallbacks)
			}
			if n := strings.Count(logs.String(), "local limits divided among the live processes"); n != 1 {
				t.Errorf("the switch to local limits logged %d times, want once: %q", n, logs.String())
			}
		})
	}
}
