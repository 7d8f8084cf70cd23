//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestCooldownAfterSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := &counted{d: 10 * time.Second, val: "x"}
		if _, err := Run(context.Background(), g, req("a", "aws/1"), op.run); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), g, req("b", "aws/1"), op.run)
		r := refused(t, err, ReasonCooldown, "live collection of aws/1 ran recently; cooling down, retry in 120s or use the cached dataset")
		if r.RetryAfter != 120*time.Second || !errors.Is(err, ErrCooldown) || len(r.Scopes) != 1 {
			t.Fatalf("%+v", r)
		}
		time.Sleep(60 * time.Second)
		if d := g.CooldownRemaining("aws/1"); d != 60*time.Second {
			t.Fatalf("remaining %v", d)
		}
		if st := g.Status(); st.Cooling["aws/1"] != 60 {
			t.Fatalf("status %+v", st)
		}
		time.Sleep(60 * time.Second)
		if g.CooldownRemaining("aws/1") != 0 || g.Check(req("b", "aws/1")) != nil {
			t.Fatal("still cooling after 120 s")
		}
		if op.calls.Load() != 1 {
			t.Fatal("a refused operation ran")
		}
	})
}

func TestCooldownAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := &counted{d: time.Second, err: errors.New("Throttling")}
		g := newGuard(t, Config{})
		if _, err := Run(context.Background(), g, req("a", "aws/1"), failing.run); err == nil {
			t.Fatal("no error")
		}
		if d := g.CooldownRemaining("aws/1"); d != 120*time.Second {
			t.Fatalf("after a failure: %v", d)
		}

		// Turned off: a failure leaves no cooldown, a success still does.
		g = newGuard(t, Config{CooldownAfterFailure: ptr(false)})
		if _, err := Run(context.Background(), g, req("a", "aws/1"), failing.run); err == nil {
			t.Fatal("no error")
		}
		if d := g.CooldownRemaining("aws/1"); d != 0 {
			t.Fatalf("after a failure, turned off: %v", d)
		}
		ok := &counted{d: time.Second}
		if _, err := Run(context.Background(), g, req("a", "aws/1"), ok.run); err != nil {
			t.Fatal(err)
		}
		if d := g.CooldownRemaining("aws/1"); d != 120*time.Second {
			t.Fatalf("after a success: %v", d)
		}
	})
}

// With live_cooldown_after_failure false, an operation that timed out or
// was abandoned starts no cooldown, even when its function, cancelled,
// returns without an error (the partial result nobody gets).
func TestNoCooldownAfterATimeoutOrAbandonment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownAfterFailure: ptr(false), OperationTimeoutSeconds: 30})
		partial := func(ctx context.Context) (string, error) { <-ctx.Done(); return "partial", nil }
		_, err := Run(context.Background(), g, req("a", "aws/1"), partial)
		if !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
		synctest.Wait()
		if d := g.CooldownRemaining("aws/1"); d != 0 {
			t.Fatalf("after a timeout: %v", d)
		}
		ctx, cancel := context.WithCancel(context.Background())
		a := goRun(ctx, g, req("b", "aws/2"), partial)
		synctest.Wait()
		cancel()
		if o := <-a; o.err != context.Canceled {
			t.Fatalf("%+v", o)
		}
		synctest.Wait()
		if st := g.Status(); st.Active != 0 || g.CooldownRemaining("aws/2") != 0 {
			t.Fatalf("after the operation was abandoned: status %+v, cooling %v", st, g.CooldownRemaining("aws/2"))
		}
	})
}

func TestCooldownPerProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownSeconds: ptr(60.0), MaxConcurrentTotal: 10,
			ProviderCooldownSeconds: map[string]float64{"aws": 300, "gcp": 0}})
		op := &counted{}
		for _, c := range []struct {
			scope string
			want  time.Duration
		}{
			{"aws/123456789012", 300 * time.Second},
			{"aws", 300 * time.Second},
			{"gcp/projects/p", 0},
			{"azure/sub", 60 * time.Second},
			{"azure:sub", 60 * time.Second},
			{"awsx/1", 60 * time.Second},
		} {
			if _, err := Run(context.Background(), g, req(c.scope, c.scope), op.run); err != nil {
				t.Fatal(err)
			}
			if d := g.CooldownRemaining(c.scope); d != c.want {
				t.Errorf("%s: %v, want %v", c.scope, d, c.want)
			}
		}
	})
}

// A refusal lists the cooling scopes and waits for the one that cools
// longest.
func TestCooldownListsTheCoolingScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		g.MarkCompleted("aws/2")
		time.Sleep(30 * time.Second)
		g.MarkCompleted("aws/1")
		_, err := Run(context.Background(), g, req("k", "aws/3", "aws/2", "aws/1", "aws/2"), (&counted{}).run)
		r := refused(t, err, ReasonCooldown, "live collection of aws/1, aws/2 ran recently; cooling down, retry in 120s or use the cached dataset")
		if r.RetryAfter != 120*time.Second || len(r.Scopes) != 2 {
			t.Fatalf("%+v", r)
		}
		time.Sleep(100 * time.Second) // aws/2 has ended; aws/1 has 20 s left
		_, err = Run(context.Background(), g, req("k", "aws/2", "aws/1"), (&counted{}).run)
		refused(t, err, ReasonCooldown, "live collection of aws/1 ran recently; cooling down, retry in 20s or use the cached dataset")
	})
}

func TestBypassSkipsTheCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		g.MarkCompleted("aws/1")
		time.Sleep(100 * time.Second)
		op := &counted{d: time.Second, val: "fresh"}
		r := req("k", "aws/1")
		r.Bypass = true
		if err := g.Check(r); err != nil {
			t.Fatal(err)
		}
		v, err := Run(context.Background(), g, r, op.run)
		if err != nil || v != "fresh" {
			t.Fatal(v, err)
		}
		// The bypassing operation starts a new cooldown when it ends.
		if d := g.CooldownRemaining("aws/1"); d != 120*time.Second {
			t.Fatalf("remaining %v", d)
		}
		// Bypass skips only the cooldown.
		a := goRun(context.Background(), g, r, (&counted{d: time.Minute}).run)
		synctest.Wait()
		r.Key = "other"
		_, err = Run(context.Background(), g, r, op.run)
		refused(t, err, ReasonBusy, "a live operation is already running for aws/1; retry when it finishes or use the cached dataset")
		<-a
	})
}

func TestMarkCompletedAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CallerMaxOperations: 1, CooldownSeconds: ptr(0.0),
			ProviderCooldownSeconds: map[string]float64{"aws": 30}})
		g.MarkCompleted("aws/1", "aws/2", "gcp/projects/p")
		if st := g.Status(); len(st.Cooling) != 2 || st.Cooling["aws/1"] != 30 || st.Cooling["aws/2"] != 30 {
			t.Fatalf("status %+v", st)
		}
		g.Reset("aws/1")
		if g.CooldownRemaining("aws/1") != 0 || g.CooldownRemaining("aws/2") != 30*time.Second {
			t.Fatal("Reset reset the wrong scope")
		}
		if _, err := Run(context.Background(), g, req("k", "azure/s"), (&counted{}).run); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(g.Check(req("k2", "azure/t")), ErrQuota) {
			t.Fatal("no quota refusal")
		}
		g.ResetAll()
		if g.CooldownRemaining("aws/2") != 0 || g.Check(req("k2", "azure/t")) != nil {
			t.Fatal("ResetAll left a cooldown or a quota entry")
		}
	})
}

// Status's seconds of cooldown left are rounded up to 0.1: a scope still
// cooling never shows 0, nor a time at which a retry would be refused.
func TestStatusCoolingRoundsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		g.MarkCompleted("aws/1")
		for _, c := range []struct {
			sleep time.Duration
			want  float64
		}{{30270 * time.Millisecond, 89.8}, {89700 * time.Millisecond, 0.1}} {
			time.Sleep(c.sleep)
			if st := g.Status(); st.Cooling["aws/1"] != c.want {
				t.Fatalf("%v left: cooling %v, want %v", g.CooldownRemaining("aws/1"), st.Cooling, c.want)
			}
		}
	})
}
