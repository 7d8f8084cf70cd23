package test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A pause set while Redis does not answer (a throttle's Retry-After, on
// the local limits) holds the scope until it ends, whatever Redis does
// meanwhile: when Redis answers again it is carried there, so that no
// call of this process or of another is sent before it ends; and when
// Redis stops answering again before it ends, the new local limits keep
// it. The pause (10 s) outlasts the test's setup, which its waits bound
// to 4 s whatever the load, and each process's call is bounded by a
// deadline well before its end: the call is refused for the pause, with a
// wait that reaches the pause's end, and not sent.
func TestAPauseSetDuringAnOutageOutlivesIt(t *testing.T) {
	const pause = 10 * time.Second
	for _, tc := range []struct {
		name         string
		secondOutage bool
	}{
		{"Redis back", false},
		{"Redis back then gone again", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, _ := proxied(t, be)
				prefix := uniquePrefix(t)
				cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 10}}}}
				a := newProcess(t, at(px.Addr()), prefix, cfg)
				b := newProcess(t, at(px.Addr()), prefix, cfg)
				fallsBack(a.store) // the outages: the proxy goes down under both
				fallsBack(b.store)
				a.do(t, vpcs, ok, once)
				b.do(t, vpcs, ok, once)

				px.Down()
				waitFor(t, 2*time.Second, "A on local limits", func() bool { return a.store.Stats().Degraded })
				start := time.Now()
				a.do(t, vpcs, func(context.Context) error { return &apiErr{code: "Throttling", status: 400, retry: "10"} }, once)
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
				// The waits above end within 4 s, or fail the test; a local
				// call and a listen do not take 4 s more.
				if el := time.Since(start); el > pause-2*time.Second {
					t.Fatalf("the outages took %v of the %v pause; the test's waits bound them to 4 s", el, pause)
				}
				var wg sync.WaitGroup
				for i, p := range ps {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						defer cancel()
						sent := false
						err := resilience.Do(ctx, vpcs, func(context.Context) error {
							sent = true
							return nil
						}, resilience.WithGovernor(p.gov), once)
						var de *resilience.DeadlineExceededError
						refused := errors.As(err, &de)
						if sent || !refused || time.Since(start)+de.Wait < pause-time.Second {
							st := p.store.Stats()
							t.Errorf("process %c's call %v into a %v pause set during an outage, its deadline 1 s on: sent %v (%v); want refused, its token after the pause (its store degraded %v, fallbacks %d)",
								'A'+i, time.Since(start).Round(time.Millisecond), pause, sent, err, st.Degraded, st.Fallbacks)
						}
					})
				}
				wg.Wait()
			})
		})
	}
}
