package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/state"
)

// TestACancelGivesTheLocalLimitsItsTokenOnce: a token a caller gives back
// (Cancel) that the local limits were not charged for is not given to
// them. The local limits of an outage are charged, when made, for the
// tokens the process took and has yet to use; a token given back before
// they are made is not among those, and a Cancel of it on top put them a
// token ahead of the callers queued: whether the give-back to Redis failed
// (Redis gone as it went) or the store was on local limits already.
func TestACancelGivesTheLocalLimitsItsTokenOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heartbeat time.Duration // the outage is found by the give-back, or by the heartbeat first
	}{
		{"its give-back fails", time.Hour},
		{"on local limits", 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, url := proxied(t, be)
				prefix := uniquePrefix(t)
				a, err := fleet.Open(url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(tc.heartbeat))
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				// 0.5 rps with a burst of 1: leases of one token; five
				// callers take the burst's token and the next four, 2 s
				// apart, the last 8 s ahead.
				spec := state.BucketSpec{Rate: 0.5, Burst: 1}
				ab := a.Bucket(vpcsKey, spec, 0)
				for range 5 {
					ab.Reserve(0)
				}
				px.Down()
				if tc.heartbeat < time.Second {
					waitFor(t, 2*time.Second, "A on local limits", func() bool { return a.Stats().Degraded })
				}
				ab.Cancel(0) // the last caller gives its token back
				waitFor(t, 2*time.Second, "A on local limits", func() bool { return a.Stats().Degraded })
				time.Sleep(100 * time.Millisecond) // the give-back's goroutine, done with the local limits
				// The local limits, charged with their burst (A took a token
				// in the burst's time) and the three callers still queued:
				// -3 tokens, and their refill.
				if snap := ab.Snapshot(0); snap.Tokens > -2.5 {
					t.Errorf("A's local limits hold %.2f tokens; want -3 and their refill (a burst drained, three callers queued): the token given back before they were made was given to them too", snap.Tokens)
				}
			})
		})
	}
}
