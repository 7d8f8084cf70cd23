//go:build go1.25

package pool

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// provingLive counts the tasks running (started, not finished) that the
// pool started to prove their scopes (see Pool.proves). p.mu is held.
func provingLive(p *Pool) int {
	n := 0
	for _, q := range p.scopes {
		for _, t := range q.live {
			if t.proveWait > 0 {
				n++
			}
		}
	}
	return n
}

// The tasks started to prove their scopes (see Pool.proves) hold at most
// a quarter of the workers (at least one) at once for as long as they
// run, their retries too, not only while their first calls wait: each
// keeps its worker for its call's retries, and a scope throttled but
// alive that serves less than a call per quarter of breaker_dead_seconds
// (here one every 10 s, as a scope at the floor of its rate may) would
// otherwise have a new one started as each first call is decided, until
// its tasks held every worker and the other scopes' tasks waited. Here 30
// tasks of it and 200 of a healthy scope of another account, on 4
// workers: one such task at most at any attempt.
func TestTasksProvingTheirScopesHoldAQuarterOfTheWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := defaultGov(t, 3, 4)
		slow := getRole()
		other := resilience.Scope{Provider: "aws", Account: "999999999999", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
		p, pctx := New(context.Background(), Workers(4), WithGovernor(g))
		provider := rationed{every: 10 * time.Second}
		var mu sync.Mutex
		most := 0
		look := func() {
			p.mu.Lock()
			n := provingLive(p)
			p.mu.Unlock()
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
		}
		for range 30 {
			p.Go(pctx, slow, func(ctx context.Context) error {
				return resilience.Do(ctx, slow, func(context.Context) error {
					look()
					return provider.answer()
				}, resilience.WithGovernor(g))
			})
		}
		for range 200 {
			p.Go(pctx, other, func(ctx context.Context) error {
				look()
				return resilience.Do(ctx, other, func(context.Context) error {
					time.Sleep(time.Second)
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		p.Wait()
		if served := provider.served; served < 2 {
			t.Fatalf("the slow scope served %d calls: it is not alive, the test proves nothing", served)
		}
		if want := p.provers(); most > want {
			t.Fatalf("%d tasks started to prove their scope ran at once; want at most %d, a quarter of the 4 workers", most, want)
		}
		t.Logf("at most %d proving at once; %d calls served", most, provider.served)
	})
}
