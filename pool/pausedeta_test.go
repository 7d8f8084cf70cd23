//go:build go1.25

package pool

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// scopeOf returns sc's share of pr.
func scopeOf(t *testing.T, pr Progress, sc resilience.Scope) ScopeProgress {
	t.Helper()
	for _, s := range pr.Scopes {
		if s.Scope == sc {
			return s
		}
	}
	t.Fatalf("no %v in %+v", sc, pr)
	return ScopeProgress{}
}

// progressOfTwoInAPause runs two tasks of op0 on a pool of four workers,
// each a call of 5 s (with a deadline of callTimeout, if not 0), the
// first task with a deadline 7 s away set by its caller (the scan's task
// timeout), the second too if bothDeadlines, and has the provider pause
// op0 for 60 s a second in, the calls in flight. It returns the pool's
// Progress a second after the pause began, once the pool is done. It runs
// in a synctest bubble.
func progressOfTwoInAPause(t *testing.T, callTimeout time.Duration, bothDeadlines bool) Progress {
	t.Helper()
	g := newGov(t, 10, resilience.Config{})
	p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
	slow := func(ctx context.Context) error {
		if callTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, callTimeout)
			defer cancel()
		}
		return resilience.Do(ctx, scope("op0"), func(context.Context) error {
			time.Sleep(5 * time.Second) // in flight as the scope is paused
			return nil
		}, resilience.WithGovernor(g))
	}
	// A task's own deadline, set by its caller (the scan's task timeout).
	tctx, cancel := context.WithTimeout(ctx, 7*time.Second)
	defer cancel()
	p.Go(tctx, scope("op0"), slow)
	if bothDeadlines {
		p.Go(tctx, scope("op0"), slow)
	} else {
		p.Go(ctx, scope("op0"), slow)
	}
	time.Sleep(time.Second)
	pause(t, g, scope("op0"), 60*time.Second)
	time.Sleep(time.Second)
	pr := p.Progress()
	p.Wait()
	return pr
}

// A running task whose next call a pause of its scope holds is done by
// the pause's end at the latest, unless its context's deadline comes
// first: a call whose deadline the pause outlasts is refused at once
// (resilience.DeadlineExceededError), and a task's context ends by its
// deadline anyway, so the ETA of its scope counts the pause left only up
// to the latest deadline of its running tasks. Paused and the line still
// say the pause as it is. The ETA used to be the whole pause left (58 s
// for tasks whose deadlines were 6 s away).
func TestProgressOfRunningTasksWhoseDeadlinesComeBeforeThePauseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr := progressOfTwoInAPause(t, 8*time.Second, true)
		sp := scopeOf(t, pr, scope("op0"))
		if sp.Running != 2 || sp.Paused < 59*time.Second {
			t.Fatalf("setup: op0 %+v, want 2 running, paused 60 s", sp)
		}
		// The tasks' contexts end 7 s from the start at the latest: 5 s
		// from now.
		if sp.ETA > 5*time.Second || pr.ETA > 5*time.Second {
			t.Errorf("ETA %v, op0's %v; want at most the 5 s to its running tasks' deadline, which the 60 s pause outlasts", pr.ETA, sp.ETA)
		}
		if line := pr.String(); !strings.Contains(line, "running 2 (2 in a paused scope, 59s left)") {
			t.Errorf("line %q; want it to say the 2 running tasks are in a paused scope, 59s left", line)
		}
	})
}

// One running task with no deadline keeps the whole pause in its scope's
// ETA, beside one whose deadline comes first.
func TestProgressOfARunningTaskWithNoDeadlineInAPausedScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr := progressOfTwoInAPause(t, 0, false)
		if sp := scopeOf(t, pr, scope("op0")); sp.Running != 2 || sp.ETA < 58*time.Second {
			t.Errorf("op0 %+v; want 2 running and an ETA of the 59 s pause left, one task having no deadline", sp)
		}
	})
}

// A pause that has ended holds nothing: Paused 0, an ETA of 0 for a
// scope with nothing queued, and a line that says no paused scope.
func TestProgressAfterThePauseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 10, resilience.Config{})
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		p.Go(ctx, scope("op0"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op0"), func(context.Context) error {
				time.Sleep(90 * time.Second)
				return nil
			}, resilience.WithGovernor(g))
		})
		time.Sleep(time.Second)
		pause(t, g, scope("op0"), 60*time.Second)
		time.Sleep(30 * time.Second)
		during := p.Progress()
		time.Sleep(40 * time.Second) // the pause ended 9 s ago
		after := p.Progress()
		p.Wait()
		if sp := scopeOf(t, during, scope("op0")); sp.Paused < 29*time.Second || during.ETA < 29*time.Second {
			t.Fatalf("during the pause: op0 %+v, ETA %v", sp, during.ETA)
		}
		sp := scopeOf(t, after, scope("op0"))
		if sp.Paused != 0 || sp.ETA != 0 || after.ETA != 0 {
			t.Errorf("after the pause: op0 Paused %v, ETA %v, pool's %v; want 0", sp.Paused, sp.ETA, after.ETA)
		}
		if line := after.String(); line != "done 0/1, running 1, queued 0, ETA 0s" {
			t.Errorf("line %q after the pause ended", line)
		}
	})
}

// A pause of the account (Guard.PauseAccount, ARM's low remaining reads)
// holds every scope of it: a running task of another service of the
// account reads it as Paused, and its scope's ETA counts it.
func TestProgressOfARunningTaskWhoseAccountIsPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acct := 100.0
		g := newGov(t, 10, resilience.Config{AWS: resilience.ProviderConfig{AccountMaxRPS: &acct}})
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		p.Go(ctx, scope("op0"), call(g, scope("op0"), 30*time.Second))
		time.Sleep(time.Second)
		other := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2"}
		gd, err := g.Begin(context.Background(), other)
		if err != nil {
			t.Fatal(err)
		}
		gd.PauseAccount(60 * time.Second)
		gd.End(nil)
		time.Sleep(time.Second)
		pr := p.Progress()
		p.Wait()
		sp := scopeOf(t, pr, scope("op0"))
		if sp.Paused < 58*time.Second || sp.ETA < 58*time.Second || pr.ETA < 58*time.Second {
			t.Errorf("op0 %+v, ETA %v; want its account's 59 s pause left in Paused and the ETA", sp, pr.ETA)
		}
		if line := pr.String(); !strings.Contains(line, "running 1 (1 in a paused scope, 59s left)") {
			t.Errorf("line %q", line)
		}
	})
}

// Progress only reads: reads made at once from several goroutines, while
// the pool runs and a pause holds a running task, all say the same and
// change nothing (the race detector watches them).
func TestProgressReadsOfAPausedScopeAtOnceAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 10, resilience.Config{})
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		p.Go(ctx, scope("op0"), call(g, scope("op0"), 10*time.Second))
		for range 5 {
			p.Go(ctx, scope("op1"), call(g, scope("op1"), 0))
		}
		time.Sleep(time.Second)
		pause(t, g, scope("op0"), 60*time.Second)
		synctest.Wait()
		lines := make([]string, 8)
		var wg sync.WaitGroup
		for i := range lines {
			wg.Go(func() { lines[i] = p.Progress().String() })
		}
		wg.Wait()
		again := p.Progress().String()
		p.Wait()
		for _, l := range lines {
			if l != again {
				t.Errorf("reads at once: %q, then %q", l, again)
			}
		}
	})
}

// The line's words follow the count: one scope or several, one task or
// several.
func TestProgressLineOfPausedScopesSingularAndPlural(t *testing.T) {
	sc := func(op string, running int, paused time.Duration) ScopeProgress {
		return ScopeProgress{Scope: scope(op), Running: running, Paused: paused, State: ScopeIdle}
	}
	for _, c := range []struct {
		scopes []ScopeProgress
		want   string
	}{
		{[]ScopeProgress{sc("op0", 1, 46*time.Second)}, "running 1 (1 in a paused scope, 46s left)"},
		{[]ScopeProgress{sc("op0", 3, 46*time.Second)}, "running 3 (3 in a paused scope, 46s left)"},
		{[]ScopeProgress{sc("op0", 1, 46*time.Second), sc("op1", 2, 10*time.Second)}, "running 3 (3 in paused scopes, 46s left)"},
		{[]ScopeProgress{sc("op0", 1, 0), sc("op1", 2, 10*time.Second)}, "running 3 (2 in a paused scope, 10s left)"},
	} {
		pr := Progress{Scopes: c.scopes}
		for _, s := range c.scopes {
			pr.Running += s.Running
		}
		if line := pr.String(); !strings.Contains(line, c.want+", queued 0") {
			t.Errorf("line %q, want %q", line, c.want)
		}
	}
}
