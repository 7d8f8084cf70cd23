package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/clocktest"
	"github.com/cloudg/cloudg/resilience"
)

// perAccount is one scope per account (an IAM sweep of many accounts);
// ec2Estate is 30 accounts x 10 regions x EC2 operations.
func perAccount(n int) []resilience.Scope {
	s := make([]resilience.Scope, n)
	for i := range s {
		s[i] = resilience.Scope{Provider: "aws", Account: fmt.Sprintf("%012d", i), Region: "us-east-1", Service: "iam", Operation: "ListUsers"}
	}
	return s
}

func ec2Estate(n int) []resilience.Scope {
	s := make([]resilience.Scope, n)
	for i := range s {
		s[i] = resilience.Scope{Provider: "aws", Account: fmt.Sprintf("%012d", i%30), Region: fmt.Sprintf("region-%d", (i/30)%10),
			Service: "ec2", Operation: fmt.Sprintf("Describe%d", i/300)}
	}
	return s
}

// fill makes a governor holding scopes, each called once. Its IAM leaves
// are fast, so that no call waits for a token.
func fill(b *testing.B, scopes []resilience.Scope, opts ...resilience.GovernorOption) *resilience.Governor {
	g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
		Services: map[string]resilience.ServiceConfig{"iam": {MaxRPS: fast, Burst: fast}},
	}}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	opt := resilience.WithGovernor(g)
	for _, s := range scopes {
		if err := resilience.Do(ctx, s, work, opt); err != nil {
			b.Fatal(err)
		}
	}
	return g
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkScopeBytes reports the heap a live scope holds, in the two
// shapes, at 1, 10,000 and 1,000,000 scopes.
func BenchmarkScopeBytes(b *testing.B) {
	for _, shape := range []struct {
		name   string
		scopes func(int) []resilience.Scope
	}{{"per-account", perAccount}, {"ec2-estate", ec2Estate}} {
		for _, n := range []int{1, 10_000, 1_000_000} {
			b.Run(fmt.Sprintf("%s-%d", shape.name, n), func(b *testing.B) {
				scopes := shape.scopes(n)
				var perScope float64
				for b.Loop() {
					before := heap()
					g := fill(b, scopes)
					perScope = float64(heap()-before) / float64(n)
					runtime.KeepAlive(g)
				}
				b.ReportMetric(perScope, "B/scope")
			})
		}
	}
}

// BenchmarkScattered calls n live scopes in a random order: the cost of a
// call whose scope is nowhere near the last one's in memory. The "map" rows
// are the floor of the machine for the same access pattern: one lookup of
// the scope in a Go map of n scopes, and an atomic add on what it finds.
func BenchmarkScattered(b *testing.B) {
	for _, n := range []int{100, 10_000, 1_000_000} {
		b.Run(fmt.Sprintf("map-%d", n), func(b *testing.B) {
			scopes := perAccount(n)
			m := make(map[resilience.Scope]*atomic.Int64, n)
			for _, s := range scopes {
				m[s] = new(atomic.Int64)
			}
			order := rand.New(rand.NewPCG(1, 2)).Perm(n)
			i := 0
			for b.Loop() {
				m[scopes[order[i%n]]].Add(1)
				i++
			}
		})
	}
	for _, n := range []int{100, 10_000, 1_000_000} {
		b.Run(fmt.Sprintf("governed-%d", n), func(b *testing.B) {
			scopes := perAccount(n)
			g := fill(b, scopes)
			order := rand.New(rand.NewPCG(1, 2)).Perm(n)
			ctx := context.Background()
			opt := resilience.WithGovernor(g)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := resilience.Do(ctx, scopes[order[i%n]], work, opt); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkReclaim fills a governor with a million scopes, lets time pass
// on its clock, and times each of the next 5,000 calls (to one scope of
// the million). After three idle minutes the reclaimer's steps ride on
// those calls ("after-3-idle-minutes"); after one second nothing is due
// ("nothing-due"), which shows what the machine itself adds. Each reports
// the slowest call, the 99th percentile and the median, in wall time and
// (cpu-) in the CPU time of the calling thread, which leaves out the
// operating system running something else meanwhile, and how much of the
// idle scopes' memory the calls freed.
func BenchmarkReclaim(b *testing.B) {
	const n, calls = 1_000_000, 5_000
	scopes := perAccount(n)
	for _, idle := range []struct {
		name string
		d    time.Duration
	}{{"after-3-idle-minutes", 3 * time.Minute}, {"nothing-due", time.Second}} {
		b.Run(idle.name, func(b *testing.B) {
			var lat, cpu []time.Duration
			var freed float64
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for b.Loop() {
				clock := clocktest.Start(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
				base := heap()
				g := fill(b, scopes, resilience.WithClock(clock))
				full := heap()
				clock.Advance(idle.d)
				ctx := context.Background()
				opt := resilience.WithGovernor(g)
				lat, cpu = lat[:0], cpu[:0]
				for range calls {
					startCPU := threadCPU()
					start := time.Now()
					if err := resilience.Do(ctx, scopes[0], work, opt); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
					cpu = append(cpu, threadCPU()-startCPU) // a clock read's cost more than the wall time
				}
				freed = float64(int64(full)-int64(heap())) / float64(full-base)
				runtime.KeepAlive(g)
			}
			slices.Sort(lat)
			slices.Sort(cpu)
			b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(cpu[len(cpu)-1].Nanoseconds()), "cpu-max-ns")
			b.ReportMetric(float64(cpu[len(cpu)*99/100].Nanoseconds()), "cpu-p99-ns")
			b.ReportMetric(100*freed, "%freed")
		})
	}
}
