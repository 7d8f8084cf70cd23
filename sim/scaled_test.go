//go:build go1.25

package sim

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// The command's way: real time, scaled. Every strategy, the SDK's included,
// must run on the scaled clock: a strategy left on the wall clock would take
// 50 times longer than its simulated makespan, or never finish.
func TestScaledClock(t *testing.T) {
	sc, _ := Builtin(ScenarioModel10)
	sc.Workload = Workload{Workers: 16, Calls: 300, Actions: []string{"DescribeInstances"}}
	sc.Provider.Burst = 20
	sc.Client.Burst = 20
	sc.TimeLimit = 10 * time.Minute
	ideal := sc.IdealMakespan() // 28 s
	clock := NewScaledClock(50)
	restore := UseSDKClock(clock, sc.Seed)
	defer restore()
	for _, name := range []string{AWSAdaptive, Failsafe, Static, CloudgGoodput} {
		start := time.Now()
		r, err := NewRun(sc, name).Execute(context.Background(), clock)
		if err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start)
		t.Logf("%s: makespan %v (ideal %v) in %v of wall time, %d lost, %d rejected", name, r.Makespan, ideal, wall, r.Lost, r.Throttled)
		upper := 4 * ideal
		if name == Failsafe {
			upper += longestRetries(sc.Client)
		}
		if r.Aborted || r.Makespan < ideal*9/10 || r.Makespan > upper {
			t.Errorf("%s: makespan %v, ideal %v", name, r.Makespan, ideal)
		}
		// x50 would take a fiftieth; a strategy on the wall clock would take
		// all of it. The bound leaves room for a loaded machine.
		if wall > r.Makespan/5 {
			t.Errorf("%s: %v of wall time for %v simulated at x50", name, wall, r.Makespan)
		}
		if name == CloudgGoodput && r.Lost != 0 {
			t.Errorf("governor lost %d calls", r.Lost)
		}
	}
}

// longestRetries bounds the time a failsafe strategy's call can spend
// backing off: each retry waits from BaseDelay, doubling up to
// MaxBackoff, jittered by up to half, and one BreakerDelay more for its
// breaker, which it retries while open. How much of that a run spends is
// a draw (failsafe-go jitters from the global math/rand, and at x50 a
// loaded machine's scheduling delays bunch its requests): 35-47 s of
// makespan for an ideal of 28 s in twelve runs here, and 2m44s, with 106
// requests rejected, in one run of the test command on a loaded machine.
func longestRetries(c ClientSpec) time.Duration {
	var d time.Duration
	for i := range c.MaxRetries {
		d += min(c.MaxBackoff, c.BaseDelay<<i) * 3 / 2
	}
	return d + c.BreakerDelay
}

// A ScaledClock runs scale times faster than the wall clock, which inside a
// synctest bubble is virtual: the figures are exact.
func TestScaledClockPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewScaledClock(10)
		t0, w0 := c.Now(), time.Now()
		if err := c.Sleep(context.Background(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if got, wall := c.Now().Sub(t0), time.Since(w0); got != 30*time.Second || wall != 3*time.Second {
			t.Fatalf("a 30 s sleep at x10: %v of clock time in %v of wall time", got, wall)
		}
		if c.Scale() != 10 || c.RealDuration(time.Minute) != 6*time.Second || scaleOf(c) != 10 {
			t.Fatalf("scale %v, a minute takes %v, scaleOf %v", c.Scale(), c.RealDuration(time.Minute), scaleOf(c))
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("a sleep with a cancelled context: %v", err)
		}
		for _, s := range []float64{0, -2, math.NaN(), math.Inf(1), math.Inf(-1)} {
			if c := NewScaledClock(s); c.Scale() != 1 {
				t.Errorf("NewScaledClock(%v): scale %v, want 1", s, c.Scale())
			}
		}
		if scaleOf(SystemClock{}) != 1 {
			t.Error("the system clock is not at x1")
		}
	})
}

// paceOnly is a ScaledClock without RealDuration: the governor cannot tell
// its pace from the wall clock's.
type paceOnly struct{ c *ScaledClock }

func (p paceOnly) Now() time.Time                                   { return p.c.Now() }
func (p paceOnly) Sleep(ctx context.Context, d time.Duration) error { return p.c.Sleep(ctx, d) }

// A context's deadline is wall time: on a clock at x10, 500 ms of wall time
// leave 5 s of clock time, enough for a token 1 s of clock time away, and
// 50 ms leave 0.5 s, too little. The governor reads the pace from
// RealDuration; without it, 500 ms would be too little.
func TestScaledClockDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		one := resilience.Config{AWS: resilience.ProviderConfig{
			Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}},
		}}
		scope := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeInstances"}
		ok := func(context.Context) error { return nil }
		// call empties the bucket, then makes a call that needs a token 1 s
		// of clock time away, with a context of wall timeout.
		call := func(clock Clock, timeout time.Duration) (time.Duration, error) {
			g, err := resilience.NewGovernor(one, resilience.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			if err := resilience.Do(context.Background(), scope, ok, resilience.WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			err = resilience.Do(ctx, scope, ok, resilience.WithGovernor(g))
			return time.Since(start), err
		}
		if wall, err := call(NewScaledClock(10), 500*time.Millisecond); err != nil || wall != 100*time.Millisecond {
			t.Errorf("x10, 500 ms of wall time: %v after %v, want nil after 100ms", err, wall)
		}
		var de *resilience.DeadlineExceededError
		if wall, err := call(NewScaledClock(10), 50*time.Millisecond); !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || wall != 0 {
			t.Errorf("x10, 50 ms of wall time: %v after %v, want a *DeadlineExceededError at once", err, wall)
		}
		if _, err := call(paceOnly{NewScaledClock(10)}, 500*time.Millisecond); !errors.As(err, &de) {
			t.Errorf("without RealDuration, 500 ms of wall time: %v, want a *DeadlineExceededError", err)
		}
	})
}

// The zero ScaledClock is a clock at x1, the wall clock: its time moves
// with the wall clock's and its Sleep waits as long as asked, rather than
// standing still at the zero time.Time while every Sleep returns at once.
func TestZeroScaledClockIsTheWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c ScaledClock
		t0, w0 := c.Now(), time.Now()
		if err := c.Sleep(context.Background(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if got, wall := c.Now().Sub(t0), time.Since(w0); got != 30*time.Second || wall != 30*time.Second {
			t.Fatalf("a 30 s sleep on the zero ScaledClock: %v of clock time in %v of wall time, want 30s in 30s", got, wall)
		}
		if c.Scale() != 1 || c.RealDuration(time.Minute) != time.Minute || scaleOf(&c) != 1 {
			t.Fatalf("the zero ScaledClock: scale %v, a minute takes %v, scaleOf %v; want 1, 1m0s, 1", c.Scale(), c.RealDuration(time.Minute), scaleOf(&c))
		}
	})
}
