//go:build go1.25

package resilience

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// Inspect's Failing is the scope's streak of failed answers, what the
// rule that finds a scope dead counts: when it began, its last failed
// answer, the distinct calls it counts (a call's retries once), whether
// only throttling answered, when it has lasted breaker_dead_seconds, and
// the calls it lacks for breaker_threshold; a success ends it, and a
// read changes nothing (two reads alike). Here three calls throttled 1.5
// s apart, each answered twice (an answer and its retry's), with the
// defaults (breaker_threshold 5, breaker_dead_seconds 10).
func TestInspectShowsTheStreakOfFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		start := time.Now()
		if f := g.Inspect(ec2Vpcs).Failing; f != (state.StreakSnapshot{}) {
			t.Fatalf("a scope never called: Failing %+v; want none", f)
		}
		var gds []*Guard
		for i := range 3 {
			if i > 0 {
				time.Sleep(1500 * time.Millisecond)
			}
			gd, _ := g.Begin(context.Background(), ec2Vpcs)
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			gd.Release()
			gd.After(throttle())
			gds = append(gds, gd)
		}
		if err := gds[2].Enter(context.Background()); err != nil { // the third call's retry
			t.Fatal(err)
		}
		gds[2].Release()
		gds[2].After(transientErr())
		last := time.Since(start)
		want := state.StreakSnapshot{
			Since: start, Last: start.Add(last), Calls: 3, Throttled: false,
			DeadFrom: start.Add(10 * time.Second), CallsShort: 2,
		}
		got := g.Inspect(ec2Vpcs).Failing
		if !got.Since.Equal(want.Since) || !got.Last.Equal(want.Last) || !got.DeadFrom.Equal(want.DeadFrom) ||
			got.Calls != want.Calls || got.Throttled != want.Throttled || got.CallsShort != want.CallsShort {
			t.Fatalf("Failing %+v; want %+v", got, want)
		}
		if again := g.Inspect(ec2Vpcs).Failing; again != got {
			t.Fatalf("a second read: %+v; want %+v, as the first", again, got)
		}
		b, err := json.Marshal(g.Inspect(ec2Vpcs))
		if err != nil || !strings.Contains(string(b), `"failing":{"since":`) || !strings.Contains(string(b), `"calls_short":2`) {
			t.Fatalf("JSON %s (%v); want the streak under failing", b, err)
		}
		if err := gds[0].Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		gds[0].Release()
		gds[0].End(nil) // a success ends the streak
		if f := g.Inspect(ec2Vpcs).Failing; f != (state.StreakSnapshot{}) {
			t.Fatalf("after a success: Failing %+v; want none", f)
		}
		if b, _ := json.Marshal(g.Inspect(ec2Vpcs)); strings.Contains(string(b), `"failing"`) {
			t.Fatalf("JSON %s; want no failing after a success", b)
		}
		for _, gd := range gds[1:] {
			gd.End(throttle())
		}
	})
}
