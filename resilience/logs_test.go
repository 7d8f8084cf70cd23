//go:build go1.26

package resilience

import (
	"context"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// lines returns the log's lines that contain every one of want.
func (b *logBuffer) lines(want ...string) []string {
	var out []string
next:
	for _, l := range strings.Split(b.String(), "\n") {
		for _, w := range want {
			if !strings.Contains(l, w) {
				continue next
			}
		}
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

var (
	countRE = regexp.MustCompile(` (?:throttles|calls)=(\d+)`)
	timeRE  = regexp.MustCompile(`^time=(\S+)`)
)

// counted adds up the counts of lines, and returns their times.
func counted(t *testing.T, lines []string) (int, []time.Time) {
	t.Helper()
	n, times := 0, []time.Time{}
	for _, l := range lines {
		m := countRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("no count in %q", l)
		}
		c, _ := strconv.Atoi(m[1])
		n += c
		at, err := time.Parse(time.RFC3339Nano, timeRE.FindStringSubmatch(l)[1])
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, at)
	}
	return n, times
}

// A scope throttled throughout a scan is said at Info: at its first
// throttle, then at most once per interval with the throttles since its
// last line, so that every throttle is counted once and the log does not
// grow with them. The last interval's count comes with the next logged
// event once the interval has passed.
func TestLogSaysSustainedThrottlingAtInfoRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1000}}, WithLogger(buf.logger()))
		ctx := context.Background()
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		throttles := 0
		for start := time.Now(); time.Since(start) < 25*time.Second; { // 25 s of throttles
			Do(ctx, ec2Vpcs, always(&throttles, throttle()), WithGovernor(g), once)
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(10 * time.Second)
		n := 0
		Do(ctx, iamUsers, always(&n, throttle()), WithGovernor(g), once) // another scope's event
		lines := buf.lines(`level=INFO msg="cloudg: scope throttled"`, "operation=DescribeVpcs")
		got, times := counted(t, lines)
		if got != throttles || throttles < 20 {
			t.Errorf("the lines count %d throttles, want %d:\n%s", got, throttles, strings.Join(lines, "\n"))
		}
		if len(lines) < 3 || len(lines) > 5 {
			t.Errorf("%d lines for 25 s of throttling, want one at the first and one per 10 s:\n%s", len(lines), strings.Join(lines, "\n"))
		}
		for i := 1; i < len(times); i++ {
			if d := times[i].Sub(times[i-1]); d < 10*time.Second {
				t.Errorf("lines %v apart:\n%s", d, strings.Join(lines, "\n"))
			}
		}
		if len(lines) > 1 && !strings.Contains(lines[1], " over=") {
			t.Errorf("the second line says not over how long: %s", lines[1])
		}
	})
}

// Concurrent throttled calls each pause the scope for the provider's
// Retry-After; the log names the pause once, with its length and end, and
// again when a later answer holds the scope longer.
func TestLogNamesAPauseOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(buf.logger()))
		ctx := context.Background()
		var gds []*Guard
		for range 16 {
			gd, _ := g.Begin(ctx, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			gds = append(gds, gd)
		}
		for _, gd := range gds {
			gd.After(throttleAfter(60 * time.Second))
			time.Sleep(10 * time.Millisecond)
		}
		if l := buf.lines(`msg="cloudg: scope paused" for=1m0s bucket=leaf until=`); len(l) != 1 {
			t.Fatalf("%d pause lines for one 60 s pause:\n%s", len(l), buf.String())
		}
		time.Sleep(30 * time.Second)
		gds[0].After(throttleAfter(60 * time.Second)) // holds it 30 s longer
		if l := buf.lines(`msg="cloudg: scope paused"`); len(l) != 2 {
			t.Fatalf("%d pause lines, want 2:\n%s", len(l), buf.String())
		}
		for _, gd := range gds {
			gd.End(nil)
		}
	})
}

// A breaker's opening is logged with its reason: the throttling or the
// errors its calls failed with, or a scope throttled for good.
func TestLogSaysWhyABreakerOpened(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(buf.logger()))
		ctx := context.Background()
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		n := 0
		for range 5 {
			Do(ctx, ec2Vpcs, always(&n, transientErr()), WithGovernor(g), once)
			Do(ctx, ec2Subnets, always(&n, throttle()), WithGovernor(g), once)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				Do(ctx, iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g))
			})
		}
		wg.Wait()
		for op, reason := range map[string]string{"DescribeVpcs": "errors", "DescribeSubnets": "throttling", "ListUsers": "throttled for good"} {
			l := buf.lines(`level=WARN msg="cloudg: circuit breaker open" from=closed reason=`+strconv.Quote(reason), "operation="+op)
			if reason != "throttled for good" {
				l = buf.lines(`level=WARN msg="cloudg: circuit breaker open" from=closed reason=`+reason+" ", "operation="+op)
			}
			if len(l) != 1 {
				t.Errorf("%s: %d lines saying its breaker opened for %s:\n%s", op, len(l), reason, buf.String())
			}
		}
	})
}

// Every way of losing a call is logged at Warn, rate-limited per scope and
// way: 50 calls an open breaker skips make a line at the first and one
// with the other 49 an interval later; a refused and a cancelled call say
// how they were lost.
func TestLogSaysLostCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(buf.logger()))
		ctx := context.Background()
		openBreaker(t, g)
		for range 50 {
			Do(ctx, ec2Subnets, func(context.Context) error { return nil }, WithGovernor(g))
		}
		time.Sleep(11 * time.Second)
		pauseScope(t, g, ec2Vpcs, 60*time.Second) // a logged event: the held line is due
		skipped := buf.lines(`level=WARN msg="cloudg: call skipped"`, "operation=DescribeSubnets")
		if n, _ := counted(t, skipped); n != 50 || len(skipped) != 2 {
			t.Errorf("%d skipped calls in %d lines, want 50 in 2:\n%s", n, len(skipped), buf.String())
		}
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		Do(short, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g)) // refused: the pause outlasts it
		cancel()
		gone, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(time.Second); cancel() }()
		Do(gone, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g), WithPolicy(RetryPolicy{Deadline: time.Hour})) // cancelled while it waits
		for _, want := range []string{
			`level=WARN msg="cloudg: call lost" loss=refused reason=wait calls=1`,
			`level=WARN msg="cloudg: call lost" loss=cancelled reason=context calls=1`,
		} {
			if len(buf.lines(want, "operation=DescribeVpcs")) != 1 {
				t.Errorf("log lacks %q:\n%s", want, buf.String())
			}
		}
	})
}

// Without a logger (or an observer) the log keeps nothing: a throttled
// scope makes no window.
func TestNoLoggerKeepsNoLogState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		for range 10 {
			Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		g.logs.mu.Lock()
		defer g.logs.mu.Unlock()
		if g.logs.m != nil {
			t.Fatalf("log windows %v", g.logs.m)
		}
	})
}

// A logger above Info keeps no windows for Info lines either.
func TestLogAtWarnCountsNoThrottles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		g.logs.mu.Lock()
		_, kept := g.logs.m[logKey{scope: ec2Vpcs, kind: observe.Throttle}]
		g.logs.mu.Unlock()
		if kept || buf.contains("scope throttled") {
			t.Fatalf("a Warn logger counted throttles:\n%s", buf.String())
		}
	})
}

// loggingStore is a state store that logs, as fleet's does.
type loggingStore struct {
	state.Store
	got *slog.Logger
}

func (s *loggingStore) UseLogger(l *slog.Logger) { s.got = l }

// A state store that logs is given the governor's logger, so that one
// logger takes the governor's lines and the store's.
func TestTheStoreGetsTheGovernorsLogger(t *testing.T) {
	var buf logBuffer
	l := buf.logger()
	s := &loggingStore{Store: MemoryStore()}
	newGov(t, Config{}, WithStateStore(s), WithLogger(l))
	if s.got != l {
		t.Fatalf("the store got %v", s.got)
	}
}

// probingErr is a throttling answer whose Error method notes whether the
// log's lock was held when it was called.
type probingErr struct {
	g      *Governor
	called int
	locked int
}

func (e *probingErr) Error() string {
	e.called++
	if e.g.logs.mu.TryLock() {
		e.g.logs.mu.Unlock()
	} else {
		e.locked++
	}
	return "Throttling: Rate exceeded"
}
func (e *probingErr) ErrorCode() string { return "Throttling" }

// The log calls an answer's Error method, which is the SDK's or the
// caller's code, outside its lock: code that logs through the same
// governor, or that is slow, holds no other call's logging.
func TestTheLogReadsErrorsOutsideItsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(buf.logger()))
		e := &probingErr{g: g}
		n := 0
		Do(context.Background(), iamUsers, always(&n, e), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 3}))
		if e.called == 0 || e.locked != 0 || !buf.contains("cloudg: scope throttled") {
			t.Fatalf("Error called %d times, %d of them under the log's lock; log:\n%s", e.called, e.locked, buf.String())
		}
	})
}

// An endless log interval is one: the first line of a scope's throttles
// is logged, no other, and the log looks for lines held back no more
// often than the interval (an interval that wrapped past now made it look
// at every event, over every scope's window).
func TestEndlessLogIntervalLogsOnceAndSweepsNever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1000}}, WithLogger(buf.logger()), WithLogInterval(time.Duration(math.MaxInt64)))
		ctx := context.Background()
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		n := 0
		time.Sleep(time.Second) // the first event after the governor's start
		for range 30 {
			Do(ctx, ec2Vpcs, always(&n, throttle()), WithGovernor(g), once)
			time.Sleep(time.Second)
		}
		if lines := buf.lines(`msg="cloudg: scope throttled"`); len(lines) != 1 {
			t.Fatalf("%d lines for 30 throttles under an endless interval, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
		}
		g.logs.mu.Lock()
		next := g.logs.sweep
		g.logs.mu.Unlock()
		if now := g.now(); next <= now {
			t.Fatalf("the log looks for held lines next at %v, at or before now (%v)", next, now)
		}
	})
}
