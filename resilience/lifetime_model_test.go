//go:build go1.25

package resilience

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The lifetime totals against a model, through sweeps of the reclaimer
// that fold idle scopes' calls: random sequences of calls (that succeed,
// or are throttled, which gives their service lifetime counters of its
// own), calls begun before a sweep and sent after it, time passing, sweeps
// (whole, or the steps calls take), and reads of Summary(nil) and
// Lifetime, some of them with a sweep and a call made while they read
// (between a provider's listing and the reading of its entries). Every
// read's totals count each call once: between the calls made before it
// began and those made by its end, never fewer than a read before it, and
// the model's when nothing moved during it. A service's count is
// Summary(nil)'s and Lifetime's alike, and once the service has counters
// of its own, counts every call made since and only grows (a scope of a
// service with none keeps none once dropped: its calls stay in the totals
// alone, see Summary).
func TestLifetimeTotalsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(rt *rapid.T) {
			g, err := NewGovernor(Config{}, WithRandom(rand.NewPCG(1, 2)), WithReclaimAfter(time.Second))
			if err != nil {
				rt.Fatal(err)
			}
			scopes := []Scope{ec2Vpcs, ec2Subnets, iamUsers,
				{Provider: "azure", Account: "sub-1", Service: "Microsoft.Compute", Operation: "virtualMachines/read"}}
			var total, seen int64    // the calls made; the most a read saw
			svc := map[Scope]int64{} // per service scope, the calls made
			own := map[Scope]int64{} // per service with counters of its own (a throttle made them), the calls made since
			saw := map[Scope]int64{} // per service with counters of its own, the most a read saw
			counted := func(sc Scope) {
				s := sc.ServiceScope()
				total++
				svc[s]++
				if _, ok := own[s]; ok {
					own[s]++
				}
			}
			pick := func(rt *rapid.T) Scope { return rapid.SampledFrom(scopes).Draw(rt, "scope") }
			call := func(rt *rapid.T, sc Scope) {
				throttled := rapid.Bool().Draw(rt, "throttled")
				sent := false
				Do(context.Background(), sc, func(context.Context) error {
					if sent = true; throttled {
						return throttle()
					}
					return nil
				}, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
				if !sent {
					return // refused (an open breaker, a pause past the deadline)
				}
				counted(sc)
				if _, ok := own[sc.ServiceScope()]; !ok && throttled {
					own[sc.ServiceScope()] = 1
				}
			}
			sweep := func() {
				for _, p := range g.providers() {
					p.scopes.sweep(g.now(), 0, 1<<20, time.Now().Add(time.Hour), nil)
				}
			}
			// totals checks the totals got of a read (name) begun when from
			// calls had been made.
			totals := func(rt *rapid.T, name string, got, from int64) {
				if got < from || got > total || got < seen {
					rt.Fatalf("%s counts %d calls: %d were made before the read, %d by its end, a read before saw %d", name, got, from, total, seen)
				}
				seen = got
			}
			// across reads the totals with read while a sweep and a call are
			// made, between a provider's listing and the reading of its
			// entries.
			across := func(rt *rapid.T, name string, read func() int64) {
				sc, from, moved := pick(rt), total, false
				testHookLive = func() {
					if !moved {
						moved = true
						sweep()
						call(rt, sc)
					}
				}
				defer func() { testHookLive = nil }()
				got := read()
				testHookLive = nil
				totals(rt, name+" read across a sweep and a call", got, from)
			}
			rt.Repeat(map[string]func(*rapid.T){
				"call": func(rt *rapid.T) { call(rt, pick(rt)) },
				"sleep": func(rt *rapid.T) {
					time.Sleep(time.Duration(rapid.IntRange(1, 40).Draw(rt, "tenths")) * 100 * time.Millisecond)
				},
				"sweep": func(*rapid.T) { sweep() },
				"step":  func(*rapid.T) { g.maybeReclaim(g.now()) },
				"a call begun before a sweep": func(rt *rapid.T) {
					sc := pick(rt)
					gd, err := g.Begin(context.Background(), sc)
					if err != nil {
						rt.Fatal(err)
					}
					time.Sleep(2 * time.Second)
					sweep()
					if err := gd.Enter(context.Background()); err != nil {
						gd.End(err)
						return
					}
					gd.After(nil)
					gd.End(nil)
					counted(sc)
				},
				"Summary(nil) across a sweep": func(rt *rapid.T) {
					across(rt, "Summary(nil)", func() int64 { return g.Summary(nil).Totals.Calls })
				},
				"Lifetime across a sweep": func(rt *rapid.T) {
					across(rt, "Lifetime", func() int64 { lt, _ := g.Lifetime(); return lt.Calls })
				},
				"": func(rt *rapid.T) {
					sum := g.Summary(nil)
					lt, ls := g.Lifetime(scopes...)
					totals(rt, "Summary(nil)", sum.Totals.Calls, total)
					totals(rt, "Lifetime", lt.Calls, total)
					for i, sc := range scopes {
						s := sc.ServiceScope()
						got := sum.Scopes[s].Calls
						if got != ls[i].Calls || got > svc[s] || got < own[s] || got < saw[s] {
							rt.Fatalf("service %v: Summary(nil) %d calls, Lifetime %d; %d made, %d since it has counters of its own, a read before saw %d",
								s, got, ls[i].Calls, svc[s], own[s], saw[s])
						}
						if _, ok := own[s]; ok {
							saw[s] = got
						}
					}
				},
			})
		})
	})
}
