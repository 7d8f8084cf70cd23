package test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/state"
)

// A breaker in Redis keeps the times of its latest failures only (those a
// write-back orders against a success), however high its threshold: each
// failure rewrites them, and a list of one time per failure counted, up
// to the threshold (2^28 allowed), grew without bound, a string rewritten
// whole by every failure. The count itself goes on: 300 failures against a
// threshold of 1000 are 300, of which the latest 64 are timed.
// (Every failure was timed: 300 times, growing by one per failure.)
func TestABreakersFailureTimesAreBounded(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// Each failure is a Redis operation: one answered after the
		// default timeout (250 ms, on a loaded machine) would put the store
		// on local limits for the rest, its heartbeat an hour away, and
		// Redis would count fewer than 300.
		s := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour), fleet.WithTimeout(2*time.Second))
		br := s.Breaker(vpcsKey, state.BreakerSpec{Threshold: 1000, Cooldown: time.Second, MaxCooldown: time.Second})
		for range 300 {
			if br.Failure(0) {
				t.Fatal("opened before the threshold")
			}
		}
		rdb := be.client()
		defer rdb.Close()
		h, err := rdb.HGetAll(context.Background(), prefix+":{"+vpcsKey+"}:breaker").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := strconv.Atoi(h["failures"]); n != 300 {
			t.Fatalf("300 failures against a threshold of 1000: the fleet's breaker counts %q, want 300 (the store's stats: %+v)", h["failures"], s.Stats())
		}
		if n := len(strings.Fields(h["ft"])); n > 64 {
			t.Errorf("300 failures against a threshold of 1000: the fleet's breaker keeps %d failure times (%d bytes, rewritten by every failure), want at most the latest 64", n, len(h["ft"]))
		}
		if got := br.Snapshot(0).Failures; got != 300 {
			t.Errorf("300 failures: the breaker's snapshot counts %d, want 300", got)
		}
	})
}
