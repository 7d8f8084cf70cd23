// Package sleep waits on a timer and a context, so that no goroutine
// outlives the wait and a wait inside a testing/synctest bubble runs in
// the bubble's virtual time.
package sleep

import (
	"context"
	"time"
)

// For waits d or until ctx is done, and returns ctx.Err() then. A d of zero
// or less returns ctx.Err() at once.
func For(ctx context.Context, d time.Duration) error {
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

// Or waits d, until ctx is done, or until wake, also, third, fourth or
// fifth is closed (a nil channel never is), and reports whether a wake channel
// ended the wait; it returns ctx.Err() when ctx did. A d of zero or less
// returns at once, as For does, reporting no wake even when one is closed.
func Or(ctx context.Context, d time.Duration, wake, also, third, fourth, fifth <-chan struct{}) (woken bool, err error) {
	if d <= 0 {
		return false, ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, nil
	case <-wake:
		return true, nil
	case <-also:
		return true, nil
	case <-third:
		return true, nil
	case <-fourth:
		return true, nil
	case <-fifth:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
