package liveop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// nestedChain starts n operations on a new guard (one per scope, n in
// all), the function of each but the last starting the next with a Run
// made with its context (so that each waits for the next), the last's
// function waiting until release is called, and then waiting callers
// that wait for a slot (Request.Wait), the total cap being full. It
// returns the guard and the context of the first operation's function;
// release ends them all and waits for every Run to return.
func nestedChain(tb testing.TB, n, waiting int) (g *Guard, ctx0 context.Context, release func()) {
	tb.Helper()
	g, err := New(Config{CooldownSeconds: ptr(0.0), MaxConcurrent: 1, MaxConcurrentTotal: n})
	if err != nil {
		tb.Fatal(err)
	}
	first, last, stop := make(chan context.Context, 1), make(chan struct{}), make(chan struct{})
	var op func(i int) func(context.Context) (string, error)
	op = func(i int) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			if i == 0 {
				first <- ctx
			}
			if i == n-1 {
				close(last)
				<-stop
				return "last", nil
			}
			return Run(ctx, g, Request{Key: fmt.Sprint("op", i+1), Scopes: []string{fmt.Sprint("aws/", i+1)}}, op(i+1))
		}
	}
	outs := []<-chan outcome{goRun(context.Background(), g, Request{Key: "op0", Scopes: []string{"aws/0"}}, op(0))}
	ctx0 = <-first
	<-last
	for i := range waiting {
		w := Request{Key: fmt.Sprint("w", i), Scopes: []string{fmt.Sprint("gcp/", i)}, Wait: true}
		outs = append(outs, goRun(context.Background(), g, w, func(context.Context) (string, error) { return "w", nil }))
	}
	for queued := 0; queued < waiting; runtime.Gosched() {
		g.mu.Lock()
		queued = len(g.queue)
		g.mu.Unlock()
	}
	if st := g.Status(); len(st.InFlight) != n {
		tb.Fatalf("%d operations running, want a chain of %d", len(st.InFlight), n)
	}
	return g, ctx0, func() {
		close(stop)
		for _, ch := range outs {
			if o := <-ch; o.err != nil {
				tb.Errorf("a Run of the chain got %v", o.err)
			}
		}
	}
}

// nestedAdmit makes, with the context of the first operation of a chain
// (nestedChain), the Run for that operation's own key, which the guard
// refuses with ErrNested once it has worked out that the first operation
// cannot end while the Run waits (Guard.endable: every other operation
// of the chain can, the last first).
func nestedAdmit(tb testing.TB, g *Guard, ctx0 context.Context) {
	if _, err := Run(ctx0, g, Request{Key: "op0"}, func(context.Context) (string, error) { return "", nil }); !errors.Is(err, ErrNested) {
		tb.Fatalf("the nested Run for the operation's own key got %v, want ErrNested", err)
	}
}

// BenchmarkNestedAdmit is a nested Run's admission (a Run made with an
// operation's context, which the guard refuses as it would wait for its
// own result) with a chain of operations running, each waiting for the
// next, and as many callers waiting for a slot: the guard holds its lock
// while it works out which operations can end.
//
//	go test -run '^$' -bench NestedAdmit -benchmem ./liveop/
func BenchmarkNestedAdmit(b *testing.B) {
	for _, n := range []int{10, 300, 1000} {
		b.Run(fmt.Sprintf("running=%d", n), func(b *testing.B) {
			g, ctx0, release := nestedChain(b, n, n)
			defer release()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				nestedAdmit(b, g, ctx0)
			}
		})
	}
}

// A nested Run's admission does work about linear in the operations
// running and the callers waiting: it holds the guard's lock, which
// every Run, Status and Check takes. Ten times the operations (a chain
// of them, each waiting for the next, and as many callers waiting for a
// slot) may take at most twelve times the steps of Guard.endable
// (Guard.steps: each operation, wait, scope and link it walks; 2497
// against 247, counted): the fixpoint Guard.endable was first
// (endableByPasses, which counts its steps the same way), which walks
// every operation and every waiting caller again for each operation it
// finds can end, takes ninety times as many (612949 against 6808).
// Steps, not time, which a machine busy with other work makes vary.
func TestANestedAdmitIsLinearInTheRunningOperations(t *testing.T) {
	const small, large, most = 50, 500, 12
	steps := func(n int) int {
		g, ctx0, release := nestedChain(t, n, n)
		defer release()
		g.mu.Lock()
		before := g.steps
		g.mu.Unlock()
		nestedAdmit(t, g, ctx0)
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.steps - before
	}
	base, took := steps(small), steps(large)
	if base == 0 || took > most*base {
		t.Fatalf("a nested admission took %d steps with %d operations running in a chain and %d callers waiting, %.1f times the %d it took with %d: want at most %d times",
			took, large, large, float64(took)/float64(max(base, 1)), base, small, most)
	}
	t.Logf("%d steps with %d operations running, %d with %d", base, small, took, large)
}

// endableByPasses is Guard.endable as it was first written: a fixpoint
// that, pass after pass, walks every running operation and, for each,
// every waiting caller, until a pass finds no more operations that can
// end; it counts its steps in g.steps, as Guard.endable does. It is
// the reference the worklist of Guard.endable must agree with
// (TestEndableAgreesWithItsFixpoint).
func (g *Guard) endableByPasses(p, join *flight, scopes []string) map[*flight]bool {
	ends := map[*flight]bool{}
	for changed := true; changed; {
		changed = false
		total, held := 0, map[string]int{}
		for f := range g.running {
			g.steps++
			if !ends[f] {
				total++
				for _, s := range f.scopes {
					held[s]++
				}
			}
		}
		slotFrees := func(scopes []string) bool {
			if total >= g.cfg.maxTotal {
				return false
			}
			for _, s := range scopes {
				if held[s] >= g.cfg.maxPerScope {
					return false
				}
			}
			return true
		}
		stuck := func(f *flight) bool { _, running := g.running[f]; return running && !ends[f] }
		canEnd := func(f *flight) bool {
			if f.phase != phaseRunning {
				return true
			}
			for o := range f.awaits {
				g.steps++
				if stuck(o) {
					return false
				}
			}
			for _, w := range g.queue {
				g.steps++
				if w.inside == f && w.phase == waitAsleep && !slotFrees(w.scopes) {
					return false
				}
			}
			if f == p {
				if join != nil {
					return !stuck(join)
				}
				return slotFrees(scopes)
			}
			return true
		}
		for f := range g.running {
			g.steps++
			if !ends[f] && canEnd(f) {
				ends[f], changed = true, true
			}
		}
	}
	return ends
}

// Guard.endable finds the operations the fixpoint it replaced found
// (endableByPasses), for random guards: operations running, timed out
// or abandoned, on random scopes, with random caps; their functions'
// Runs waiting for operations (running, or ended) and callers waiting
// for slots, inside an operation (running or ended) or none, woken or
// not; and the Run asked about, by an operation or none, joining one or
// waiting for a slot.
func TestEndableAgreesWithItsFixpoint(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := &Guard{}
		g.init()
		g.cfg.maxPerScope = rapid.IntRange(1, 3).Draw(rt, "maxPerScope")
		g.cfg.maxTotal = rapid.IntRange(1, 6).Draw(rt, "maxTotal")
		scopesOf := func(label string) []string {
			s := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c", "d"}), 0, 3, rapid.ID[string]).Draw(rt, label)
			slices.Sort(s)
			return s
		}
		var ops []*flight // the running ones first, then some ended
		running := rapid.IntRange(0, 9).Draw(rt, "running")
		ended := rapid.IntRange(0, 2).Draw(rt, "ended")
		for i := range running + ended {
			f := &flight{guard: g, key: fmt.Sprint(i), scopes: scopesOf("scopes")}
			if i < running {
				f.phase = rapid.SampledFrom([]phase{phaseRunning, phaseRunning, phaseRunning, phaseTimedOut, phaseAbandoned}).Draw(rt, "phase")
				g.running[f] = struct{}{}
			} else {
				f.phase = phaseEnded
			}
			ops = append(ops, f)
		}
		anOp := func(label string) *flight { // nil, or an operation
			if len(ops) == 0 {
				return nil
			}
			if i := rapid.IntRange(-1, len(ops)-1).Draw(rt, label); i >= 0 {
				return ops[i]
			}
			return nil
		}
		for _, f := range ops[:running] {
			for range rapid.IntRange(0, 3).Draw(rt, "awaits") {
				if o := anOp("awaited"); o != nil {
					f.await(o)
				}
			}
		}
		for range rapid.IntRange(0, 6).Draw(rt, "waiting") {
			g.queue = append(g.queue, &waiter{inside: anOp("inside"), phase: rapid.SampledFrom([]waitPhase{waitAsleep, waitWoken}).Draw(rt, "phase"), scopes: scopesOf("waiterScopes")})
		}
		p := anOp("p")
		var join *flight
		if rapid.Bool().Draw(rt, "joins") {
			join = anOp("join")
		}
		scopes := scopesOf("runScopes")
		got, want := g.endable(p, join, scopes), g.endableByPasses(p, join, scopes)
		if len(got) != len(want) {
			rt.Fatalf("endable found %d operations that can end, the fixpoint %d", len(got), len(want))
		}
		for i, f := range ops {
			if got[f] != want[f] {
				rt.Fatalf("operation %d (%v, scopes %v): endable says it can end: %v; the fixpoint: %v", i, f.phase, f.scopes, got[f], want[f])
			}
		}
	})
}

// A nested Run's admission allocates about as much with hundreds of
// operations running as with a few (a map and a slice or two, which
// grow with them, and the refusal): what each operation waits for is not
// a slice of its own.
func TestANestedAdmitAllocatesLittleWithManyOperationsRunning(t *testing.T) {
	const running, most = 300, 80
	g, ctx0, release := nestedChain(t, running, running)
	defer release()
	if n := testing.AllocsPerRun(20, func() { nestedAdmit(t, g, ctx0) }); n > most {
		t.Fatalf("a nested admission with %d operations running in a chain and %d callers waiting made %.0f allocations, want at most %d", running, running, n, most)
	}
}
