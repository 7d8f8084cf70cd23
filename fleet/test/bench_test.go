package test

import (
	"context"
	"testing"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// BenchmarkGovernedCall compares a governed call with the in-memory state
// and with fleet mode, when the token comes from the local lease (hit), with
// the default lease (a round trip per 64 calls), and when every token is a
// Redis round trip (miss, fleet.WithMaxLease(1)): against
// miniredis in this process, against redis-server over loopback when
// CLOUDG_REDIS_URL names one, and against a Redis Cluster when
// CLOUDG_REDIS_CLUSTER_ADDRS lists its nodes.
//
//	(cd fleet/test && go test -run '^$' -bench . -benchmem .)
func BenchmarkGovernedCall(b *testing.B) {
	fast := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1e9, Burst: 1e9}}}}
	ctx := context.Background()
	work := func(context.Context) error { return nil }
	run := func(b *testing.B, g *resilience.Governor) {
		opt := resilience.WithGovernor(g)
		b.ReportAllocs()
		for b.Loop() {
			if err := resilience.Do(ctx, vpcs, work, opt); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("memory", func(b *testing.B) {
		g, _ := resilience.NewGovernor(fast)
		run(b, g)
	})
	for _, be := range backends(b) {
		for _, c := range []struct {
			name string
			opts []fleet.Option
		}{
			// The local path: a lease large enough that Redis is asked once
			// in a long while.
			{"lease-hit", []fleet.Option{fleet.WithMaxLease(1 << 20)}},
			// The default lease of at most 64 tokens: one round trip per 64 calls.
			{"lease-64", nil},
			// Every token a round trip.
			{"lease-miss", []fleet.Option{fleet.WithMaxLease(1)}},
		} {
			b.Run("fleet-"+be.name+"-"+c.name, func(b *testing.B) {
				p := newProcess(b, be, uniquePrefix(b), fast, c.opts...)
				run(b, p.gov)
				if st := p.store.Stats(); st.Degraded {
					b.Fatalf("fell back to local limits: %+v", st)
				}
			})
		}
	}
}
