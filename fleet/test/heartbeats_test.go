package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
)

// Processes whose heartbeats or key TTLs differ count each other: a
// process forgets only the entries that claim to live past the longest of
// its own claim, its key TTL and the set's own expiry, which every
// heartbeat extends to its claim and its TTL, never shortens. Before, a
// process with a short key TTL (or a short heartbeat) forgot, at each of
// its heartbeats, every process whose heartbeat claims to live longer than
// its own TTL: it counted itself alone, and took the whole of the limits on
// local limits, and leases as large as a process alone's.
func TestProcessesWithOtherHeartbeatsCountEachOther(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithTimeout(2*time.Second),
			fleet.WithHeartbeat(500*time.Millisecond)) // lives 1.5 s a beat
		b := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithTimeout(2*time.Second),
			fleet.WithHeartbeat(100*time.Millisecond), fleet.WithKeyTTL(time.Second))
		time.Sleep(1200 * time.Millisecond) // two heartbeats of A's, twelve of B's
		if pa, pb := a.Stats().Processes, b.Stats().Processes; pa != 2 || pb != 2 {
			t.Errorf("two processes, heartbeats of 500 ms and 100 ms (key TTL 1 s): they count %d and %d, want 2 each", pa, pb)
		}
	})
}
