package resilience

import (
	"sync"
	"testing"
)

// The zero Governor is ready to use (its godoc says so), from several
// goroutines at once: its first reads, made at once by goroutines that
// share it, read its clock's epoch only once it is set, so that no read
// races the setting of it. Run with -race, which reports such a race.
func TestAZeroGovernorsFirstReadsRaceNothing(t *testing.T) {
	for _, read := range []struct {
		name string
		f    func(g *Governor)
	}{
		{"Inspect", func(g *Governor) { g.Inspect(ec2Vpcs) }},
		{"Summary of a run", func(g *Governor) { g.Summary(new(Stats)) }},
		{"Summary(nil)", func(g *Governor) { g.Summary(nil) }},
		{"Delay", func(g *Governor) { g.Delay(ec2Vpcs) }},
		{"Survey.Look", func(g *Governor) { g.Survey().Look(ec2Vpcs) }},
		{"Scopes", func(g *Governor) {
			for range g.Scopes() {
			}
		}},
	} {
		t.Run(read.name, func(t *testing.T) {
			var g Governor
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					read.f(&g)
				}()
			}
			close(start)
			wg.Wait()
		})
	}
}
