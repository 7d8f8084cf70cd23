// Package clocktest holds a resilience.Clock for tests that moves only
// when told, so that minutes of a governor's time (a scope left idle past
// its reclaim, a cooldown) take none of the test's.
package clocktest

import (
	"context"
	"sync"
	"time"
)

// Manual is a clock whose time moves only by Advance, or by as much as a
// caller sleeps (Sleep returns at once). It is safe for concurrent use.
// Its zero value reads the zero time.Time; Start makes one that reads
// another.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// Start returns a Manual clock reading t.
func Start(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock by d and returns ctx's error.
func (c *Manual) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}

// Advance moves the clock by d.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
