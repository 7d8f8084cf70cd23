// Package cutctx is the context an integration gives an SDK's retry loop
// so that the loop's backoff sleep can be cut short.
package cutctx

import (
	"context"
	"sync/atomic"
	"time"
)

// Context is its parent, but for a cut: from Arm on, its Done and Err are
// those of a context derived from the parent that Arm's cancel ends. A
// cancelled cut ends the Context, as any context's end does (its Done
// stays closed, its Err set): the owner gives the SDK a new Context for
// what follows, or, when it must give the same one, Resets it. Unlike a
// context of the context package's, its Done changes at Arm: a
// cancellable context derived from it before Arm (with context.WithCancel
// or WithTimeout) is bound to the parent's cancellation, and never sees
// the cut; one derived with WithValue asks it, and does. Init a Context
// before its first use; its Done, Err, Deadline and Value may then be
// called from any goroutine, and Arm, Reset and Close from the owner's.
// The zero Context has no parent: its methods but Reset and Close panic
// until Init gives it one.
type Context struct {
	parent context.Context
	cut    atomic.Pointer[cut]
}

type cut struct {
	context.Context
	cancel context.CancelFunc
}

// Init makes parent the parent of a Context not yet in use.
func (c *Context) Init(parent context.Context) { c.parent = parent }

// Deadline is the parent's.
func (c *Context) Deadline() (deadline time.Time, ok bool) { return c.parent.Deadline() }

// Done is the cut's, or before Arm the parent's.
func (c *Context) Done() <-chan struct{} {
	if k := c.cut.Load(); k != nil {
		return k.Done()
	}
	return c.parent.Done()
}

// Err goes with Done.
func (c *Context) Err() error {
	if k := c.cut.Load(); k != nil {
		return k.Err()
	}
	return c.parent.Err()
}

// Value is the parent's, asked through the cut from Arm on: the cut's
// values are the parent's, but for the context package's own, by which
// context.Cause reads the cut's cause (the cut ended the Context first,
// whatever ends its parent later) and context.WithCancel makes a context
// derived from it the cut's child, which follows it without a goroutine.
func (c *Context) Value(key any) any {
	if k := c.cut.Load(); k != nil {
		return k.Value(key)
	}
	return c.parent.Value(key)
}

// Arm makes the cut, unless there is one, and returns its cancel.
func (c *Context) Arm() context.CancelFunc {
	if k := c.cut.Load(); k != nil {
		return k.cancel
	}
	ctx, cancel := context.WithCancel(c.parent)
	c.cut.Store(&cut{ctx, cancel})
	return cancel
}

// Reset cancels the cut, if there is one, and forgets it: Done and Err are
// the parent's again, and the next Arm makes a new cut. It is for an owner
// that gives the SDK the same Context for what follows a cut, because the
// Context carries more than the cut (package cloudgaws's call state); a
// context derived from the cut stays ended.
func (c *Context) Reset() {
	if k := c.cut.Swap(nil); k != nil {
		k.cancel()
	}
}

// Close cancels the cut, if there is one, so that nothing derived from it
// is left behind.
func (c *Context) Close() {
	if k := c.cut.Load(); k != nil {
		k.cancel()
	}
}
