package resilience

import (
	"context"
	"sync"
	"time"
)

// Clock gives a governor the time and a context-aware sleep. The default is
// the time package, so a governor created inside a testing/synctest bubble
// runs in the bubble's virtual time. ScaledClock runs minutes of provider
// time in seconds, for simulators.
//
// A Clock whose time runs at another pace than the wall clock should also
// implement RealDuration(d time.Duration) time.Duration, returning the wall
// time d of clock time takes; the governor uses it to compare its waits with
// a context's deadline.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, and returns ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

// realDurationer is the optional interface of clocks that run at another pace.
type realDurationer interface {
	RealDuration(d time.Duration) time.Duration
}

// SystemClock is the time package: the default Clock. Inside a
// testing/synctest bubble its time is the bubble's virtual time. Its zero
// value is ready to use.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d on a timer, or until ctx is done, and then returns
// ctx.Err().
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error { return sleep(ctx, d) }

// sleep waits d or until ctx is done, on a timer and the context's channel,
// so that no goroutine outlives it.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ScaledClock is a Clock whose time runs Scale times faster than the wall
// clock from the moment it is made: with Scale 10, a 60 s wait takes 6 s.
// It is safe for concurrent use; the zero value runs at Scale 1.
type ScaledClock struct {
	Scale float64

	once  sync.Once
	start time.Time // wall time at the origin
}

// NewScaledClock returns a clock running scale times faster than the wall
// clock (scale <= 0 means 1).
func NewScaledClock(scale float64) *ScaledClock {
	c := &ScaledClock{Scale: scale}
	c.init()
	return c
}

func (c *ScaledClock) init() {
	c.once.Do(func() {
		c.start = time.Now()
		if c.Scale <= 0 {
			c.Scale = 1
		}
	})
}

// Now returns the start time plus the scaled wall time elapsed since.
func (c *ScaledClock) Now() time.Time {
	c.init()
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.Scale))
}

// Sleep waits d of clock time: d/Scale of wall time.
func (c *ScaledClock) Sleep(ctx context.Context, d time.Duration) error {
	return sleep(ctx, c.RealDuration(d))
}

// RealDuration returns the wall time that d of clock time takes.
func (c *ScaledClock) RealDuration(d time.Duration) time.Duration {
	c.init()
	return time.Duration(float64(d) / c.Scale)
}
