package test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/resilience"
)

// A pause set while Redis does not answer (a throttle's Retry-After, on
// the local limits) holds the scope until it ends, whatever Redis does
// meanwhile: when Redis answers again it is carried there, so that no
// call of this process or of another is sent before it ends; and when
// Redis stops answering again before it ends, the new local limits keep
// it.
func TestAPauseSetDuringAnOutageOutlivesIt(t *testing.T) {
	const pause = 2 * time.Second
	for _, tc := range []struct {
		name         string
		secondOutage bool
	}{
		{"Redis back", false},
		{"Redis back then gone again", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, err := redisproxy.Start(be.addr())
				if err != nil {
					t.Fatal(err)
				}
				defer px.Close()
				prefix := uniquePrefix(t)
				cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 10}}}}
				a := newProcess(t, at(px.Addr()), prefix, cfg)
				b := newProcess(t, at(px.Addr()), prefix, cfg)
				a.do(t, vpcs, ok, once)
				b.do(t, vpcs, ok, once)

				px.Down()
				waitFor(t, 2*time.Second, "A on local limits", func() bool { return a.store.Stats().Degraded })
				start := time.Now()
				a.do(t, vpcs, func(context.Context) error { return &apiErr{code: "Throttling", status: 400, retry: "2"} }, once)
				if err := px.Up(); err != nil {
					t.Fatal(err)
				}
				// B, which made no call during the outage, may have found it
				// too (its heartbeat, or a reply the proxy cut); the pause is
				// carried to Redis for B to find once both are back on it.
				waitFor(t, time.Second, "A and B back on the shared state", func() bool {
					return !a.store.Stats().Degraded && !b.store.Stats().Degraded
				})
				ps := []*process{a, b}
				if tc.secondOutage {
					px.Down()
					waitFor(t, time.Second, "A on local limits again", func() bool { return a.store.Stats().Degraded })
					ps = ps[:1]
				}
				if time.Since(start) > pause/2 {
					t.Skipf("the outages took %v of the %v pause", time.Since(start), pause)
				}
				var wg sync.WaitGroup
				for i, p := range ps {
					wg.Go(func() {
						var sent time.Duration
						err := p.do(t, vpcs, func(context.Context) error {
							sent = time.Since(start)
							return nil
						}, once)
						if err != nil || sent < pause {
							st := p.store.Stats()
							t.Errorf("process %c's call, the scope paused for %v during an outage: sent at %v (%v; its store degraded %v, fallbacks %d)",
								'A'+i, pause, sent, err, st.Degraded, st.Fallbacks)
						}
					})
				}
				wg.Wait()
			})
		})
	}
}
