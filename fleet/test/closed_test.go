package test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// A call after Close goes on with local limits, and a closed store reports
// no Redis outage: its own client's "redis: client is closed" is not Redis
// failing (it made a fallback, a warning that Redis does not answer, and
// Degraded for good).
func TestAClosedStoreReportsNoOutage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		var logs bytes.Buffer
		s, err := fleet.Open(be.url(), fleet.WithPrefix(uniquePrefix(t)), fleet.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s))
		if err != nil {
			t.Fatal(err)
		}
		if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g)); err != nil {
			t.Fatalf("a call after Close: %v", err)
		}
		resilience.Do(context.Background(), vpcs, throttl, resilience.WithGovernor(g), once)
		if st := s.Stats(); st.Fallbacks != 0 || st.Degraded || st.RedisErrors != 0 || strings.Contains(logs.String(), "does not answer") {
			t.Fatalf("a healthy Redis, the store closed: %+v\n%s", st, logs.String())
		}
	})
}

// A call after Close goes on with local limits whoever made the client:
// a store of New, whose client the caller keeps open, no longer uses the
// fleet's state once closed (it no longer counts among the live processes
// either).
func TestACallAfterCloseIsLocalWithTheCallersClient(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		rdb := be.client()
		defer rdb.Close()
		s := fleet.New(rdb, fleet.WithPrefix(prefix), fleet.WithLogger(quiet))
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s))
		if err != nil {
			t.Fatal(err)
		}
		if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		calls := s.Stats().RedisCalls
		resilience.Do(context.Background(), vpcs, throttl, resilience.WithGovernor(g), once)
		other := newProcess(t, be, prefix, resilience.Config{})
		ceiling := other.gov.Inspect(vpcs).Leaf.Ceiling
		if r := other.gov.Inspect(vpcs).Leaf.Rate; r != ceiling || s.Stats().RedisCalls != calls {
			t.Fatalf("a throttle after Close: the fleet's rate %v (ceiling %v), %d Redis calls after Close; want the rate untouched and none",
				r, ceiling, s.Stats().RedisCalls-calls)
		}
	})
}
