package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cloudg/cloudg/pool"
	"github.com/cloudg/cloudg/resilience"
)

// BenchmarkCallBesideAPool is BenchmarkCall's governed call (one slot of
// the account's concurrency cap taken and given back) made outside a
// pool of package pool that shares its governor, and whose queue once
// waited for a slot of another account (told no slot, then given one):
// idle, its task ended, not Waited; busy, a task of it still running (it
// makes no call). A pool watches the governor's slots
// (resilience.Governor.WatchSlots) while it has tasks: the idle one
// should cost the call nothing, the busy one a lookup of the call's
// account among those it waits for a slot of (not the pool's lock: it
// waits on none of this account's).
func BenchmarkCallBesideAPool(b *testing.B) {
	ctx := context.Background()
	for _, busy := range []bool{false, true} {
		name := "idle"
		if busy {
			name = "busy"
		}
		b.Run(name, func(b *testing.B) {
			g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
				GlobalMaxRPS:   new(float64(fast)),
				GlobalBurst:    fast,
				AccountMaxRPS:  new(float64(fast)),
				AccountBurst:   fast,
				MaxConcurrency: 1,
				Services:       map[string]resilience.ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}},
			}})
			if err != nil {
				b.Fatal(err)
			}
			opt := resilience.WithGovernor(g)
			other := scope
			other.Account = "210987654321"
			p, pctx := pool.New(ctx, pool.WithGovernor(g))
			outside, err := g.Begin(ctx, other)
			if err != nil {
				b.Fatal(err)
			}
			if err := outside.Enter(ctx); err != nil {
				b.Fatal(err)
			}
			p.Go(pctx, other, func(ctx context.Context) error { return resilience.Do(ctx, other, work, opt) })
			time.Sleep(20 * time.Millisecond) // the pool asks about the queue: told no slot
			outside.End(nil)
			for p.Progress().Done < 1 {
				runtime.Gosched()
			}
			stop := make(chan struct{})
			if busy {
				p.Go(pctx, resilience.Scope{}, func(context.Context) error { <-stop; return nil })
				for p.Progress().Running < 1 {
					runtime.Gosched()
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := resilience.Do(ctx, scope, work, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			close(stop)
			if err := p.Wait(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
