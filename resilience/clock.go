package resilience

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/internal/sleep"
)

// Clock gives a governor the time and a context-aware sleep. The default is
// the time package, so a governor created inside a testing/synctest bubble
// runs in the bubble's virtual time. A simulator may run minutes of
// provider time in seconds with a faster clock. A Clock must be safe for
// concurrent use: the governor calls its methods (RealDuration too) from
// the goroutines of the calls it governs, concurrently. Now is also read
// while the governor holds locks of its own (its table of scopes, as a
// scope is made): it must return at once and must not call back into the
// governor.
//
// Now must not go back. The governor keeps its buckets' queues and pauses
// as times of Now's clock, so that a Now set back (a wall clock stepped
// back, read without time.Now's monotonic reading: time.Now().Round(0),
// UTC or In strip it) holds every caller of a scope for as long as the
// step (a full bucket at 20 rps read 1000 s back makes its next caller
// wait about 998 s); only a breaker's cooldown is kept to one cooldown
// from the step. The default, the time package, reads the monotonic
// clock.
//
// A Clock whose time runs at another pace than the wall clock should also
// implement RealDuration(d time.Duration) time.Duration, returning the wall
// time d of clock time takes; the governor uses it to compare its waits with
// a context's deadline, which is wall time.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, and returns ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock is the time package: the default Clock.
type systemClock struct{}

func (systemClock) Now() time.Time                                   { return time.Now() }
func (systemClock) Sleep(ctx context.Context, d time.Duration) error { return sleep.For(ctx, d) }
