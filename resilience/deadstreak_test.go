//go:build go1.25

package resilience

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A snapshot reads a scope's health at once: its Dead and its Failing
// are of one moment, so that a scope read dead shows the streak of
// failures that makes it so, even when a success ends the streak as the
// snapshot is read (here, as it reads the health: testHookHealthRead).
// It read Dead "throttled for good" beside no streak at all.
func TestADeadScopesSnapshotShowsItsStreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		end := throttledStreak(t, g, ec2Vpcs) // 5 throttled calls over 6 s
		defer end()
		time.Sleep(4500 * time.Millisecond) // the streak spans breaker_dead_seconds (10 s)
		e, _ := g.provider("aws").scopes.peek(ec2Vpcs)
		if s := g.Inspect(ec2Vpcs); s.Dead == "" || s.Failing == (state.StreakSnapshot{}) {
			t.Fatalf("before: Dead %q, Failing %+v; want a dead scope and its streak", s.Dead, s.Failing)
		}
		testHookHealthRead = e.noteSuccess // a success, as the snapshot reads the health
		defer func() { testHookHealthRead = nil }()
		s := g.Inspect(ec2Vpcs)
		testHookHealthRead = nil
		if (s.Dead != "") != (s.Failing != state.StreakSnapshot{}) {
			t.Fatalf("Dead %q beside Failing %+v: want a streak where the scope is dead, and none where a success ended it", s.Dead, s.Failing)
		}
	})
}
