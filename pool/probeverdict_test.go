//go:build go1.25

package pool

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// probeStore is a store whose breaker (of the one scope a test uses) has
// its half-open probe answer between two reads of it, as a probe's
// success at that instant, in another goroutine, would: the breaker's
// second read that finds it half-open once the probe is sent (sent)
// lets the probe answer (release) and reads the breaker again once the
// probe's call has returned (answered). A read that finds it half-open
// before the probe is sent waits until it is.
type probeStore struct {
	state.Store
	sent, release, answered chan struct{}
	reads                   atomic.Int32 // half-open reads once the probe was sent
}

func newProbeStore() *probeStore {
	return &probeStore{Store: resilience.MemoryStore(),
		sent: make(chan struct{}), release: make(chan struct{}), answered: make(chan struct{})}
}

func (s *probeStore) Breaker(_ string, spec state.BreakerSpec) state.Breaker {
	return &probeBreaker{Breaker: breaker.New(spec), s: s}
}

// probeBreaker is a breaker of a probeStore: the memory store's, with
// its optional methods (the verdicts a breaker_wait call waits for), and
// a Snapshot that lets the probe answer between two reads.
type probeBreaker struct {
	*breaker.Breaker
	s *probeStore
}

func (b *probeBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	snap := b.Breaker.Snapshot(now)
	if snap.State == state.HalfOpen {
		<-b.s.sent
		if b.s.reads.Add(1) == 2 {
			close(b.s.release)
			<-b.s.answered
			snap = b.Breaker.Snapshot(now)
		}
	}
	return snap
}

// A probe whose success closes its breaker while the pool reads the
// scope (Delay said the breaker was half-open with its probe out, and
// the pool's next read of the breaker finds it closed) runs no task of the
// scope: the breaker closed since Delay answered is not an open breaker
// whose calls fail fast, nor a scope found dead with its breaker closed,
// and the probe took the scope's token. Before, the pool read the
// breaker again for each question it asked of Delay's answer, took the
// closed breaker for a dead scope's (breaker_wait) or for one that fails
// fast (no breaker_wait), and ran the next task, whose first call found
// no token and was deferred: run twice, a worker spent on it. The flaky
// TestAnOpenBreakerThatWaitsForItsVerdictRunsNoTaskToDeferIt met this
// order about one run in ten.
func TestAProbesSuccessWhileThePoolReadsItsBreakerRunsNoTaskToDeferIt(t *testing.T) {
	for _, wait := range []bool{true, false} {
		t.Run("breaker_wait="+strconv.FormatBool(wait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fixed := false
				store := newProbeStore()
				g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Adaptive: &fixed, BreakerWait: wait}},
					resilience.WithStateStore(store))
				s := scope("dead")
				openBreaker(t, g, s)
				cooldown, _ := g.Delay(s)
				time.Sleep(cooldown) // the first task's call is the probe
				p, ctx := New(context.Background(), WithGovernor(g))
				var runs atomic.Int32
				for range 3 {
					p.Go(ctx, s, func(ctx context.Context) error {
						probe := runs.Add(1) == 1
						err := resilience.Do(ctx, s, func(context.Context) error {
							if probe {
								close(store.sent)
								<-store.release
							}
							return nil
						}, resilience.WithGovernor(g))
						if probe {
							close(store.answered)
						}
						return err
					})
				}
				synctest.Wait()
				if n := store.reads.Load(); n < 2 {
					close(store.release) // the probe answers, so that Wait returns
					t.Errorf("the pool read the breaker %d times while the probe was out, want 2: the probe did not answer between two reads", n)
				}
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if pr := p.Progress(); runs.Load() != 3 || pr.Deferred != 0 {
					t.Fatalf("3 tasks of a scope whose probe closed its breaker between two reads of the pool: %d runs, %d deferred; want 3 runs, none deferred",
						runs.Load(), pr.Deferred)
				}
			})
		})
	}
}

// A scope found dead with its breaker still closed, of a provider that
// does not wait for its breakers' verdicts, fails fast as one whose
// breaker is open: the pool runs its tasks at once, the first call's
// admission opens the breaker, and every call is refused, none sent. The
// pool tells it from a breaker closed by its probe's success by the
// scope's Dead, read with the breaker (see
// TestAProbesSuccessWhileThePoolReadsItsBreakerRunsNoTaskToDeferIt):
// taken for one, its queue would be parked, asked again each second, and
// sent to the dead scope once the streak of failures grew old.
func TestADeadScopeWhoseBreakerIsClosedFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fixed := false
		g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Adaptive: &fixed}})
		s := scope("dead")
		defer foundDead(t, g, s)()
		p, ctx := New(context.Background(), WithGovernor(g))
		start := time.Now()
		var sent atomic.Int32
		for range 3 {
			p.Go(ctx, s, func(ctx context.Context) error {
				return resilience.Do(ctx, s, func(context.Context) error {
					sent.Add(1)
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		err := p.Wait()
		if took := time.Since(start); !errors.Is(err, resilience.ErrCircuitOpen) || sent.Load() != 0 || took != 0 || p.Progress().Failed != 3 {
			t.Fatalf("3 tasks of a scope found dead, its breaker closed: %d calls sent, %d failed, took %v, Wait: %v; want none sent, 3 failed fast at once with ErrCircuitOpen",
				sent.Load(), p.Progress().Failed, took, err)
		}
	})
}

// verdictStore is a store whose breakers have their half-open probe
// answer at the first read that finds them half-open once armed, after
// that read: the reader gets the snapshot of the half-open breaker, and
// the next read finds the probe's verdict (answer runs it, on another
// goroutine, and returns once it is in).
type verdictStore struct {
	state.Store
	armed  atomic.Bool
	answer func()
}

func (s *verdictStore) Breaker(_ string, spec state.BreakerSpec) state.Breaker {
	return &verdictBreaker{Breaker: breaker.New(spec), s: s}
}

// verdictBreaker is a breaker of a verdictStore: the memory store's, with
// its optional methods, and a Snapshot that lets the probe answer after
// it reads.
type verdictBreaker struct {
	*breaker.Breaker
	s *verdictStore
}

func (b *verdictBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	snap := b.Breaker.Snapshot(now)
	if snap.State == state.HalfOpen && b.s.armed.CompareAndSwap(true, false) {
		b.s.answer()
	}
	return snap
}

// Progress reads a queued scope as pick does (see Pool.circuit): Delay,
// then the scope's snapshot, so that a probe's verdict between the two
// reads shows the scope as what its breaker is after it. A probe that
// fails as Progress reads its half-open breaker leaves it open: the scope
// is open, not waiting for the verdict, and without breaker_wait its tasks
// fail fast when run, an ETA of 0. Before, Progress read the snapshot
// first, found the breaker half-open, and took Delay's answer for the
// reopened breaker for the probe's wait.
func TestProgressOfAScopeWhoseProbeFailsAsItIsReadIsOpen(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run("breaker_wait="+strconv.FormatBool(wait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fixed := false
				store := &verdictStore{Store: resilience.MemoryStore()}
				g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Adaptive: &fixed, BreakerWait: wait}},
					resilience.WithStateStore(store))
				s := scope("dead")
				openBreaker(t, g, s)
				cooldown, _ := g.Delay(s)
				time.Sleep(cooldown)
				// The probe, a call outside the pool, out until it fails.
				probe, err := g.Begin(context.Background(), s)
				if err != nil {
					t.Fatal(err)
				}
				if err := probe.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				store.answer = func() {
					done := make(chan struct{})
					go func() {
						fail := &apiErr{code: "InternalError", status: 500}
						probe.After(fail)
						probe.End(fail)
						close(done)
					}()
					<-done
				}
				p, ctx := New(context.Background(), WithGovernor(g))
				for range 3 {
					p.Go(ctx, s, call(g, s, 0))
				}
				synctest.Wait() // the pool parks the queue: the breaker is half-open, its probe out
				store.armed.Store(true)
				pr := p.Progress()
				answered := !store.armed.Swap(false)
				_ = p.Wait() // the tasks fail fast, or wait for the breaker's verdict
				if !answered {
					t.Fatal("Progress did not read the breaker half-open: the probe did not answer while it read")
				}
				if len(pr.Scopes) != 1 || pr.Scopes[0].State != ScopeOpen || !wait && pr.Scopes[0].ETA != 0 {
					t.Fatalf("a scope whose probe failed as Progress read it: %+v; want open (an ETA of 0 without breaker_wait)", pr.Scopes)
				}
			})
		})
	}
}
