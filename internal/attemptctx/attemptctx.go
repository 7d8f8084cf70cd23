// Package attemptctx is the context an integration sends an attempt of a
// governed call with, so that a governed call made with it (a credential's
// token fetch while the request is signed or sent, a transport below the
// integration's) is known to be nested in the attempt: the core looks for
// the enclosing call by asking the context for Value(gov), and such a call
// borrows the slot the attempt holds instead of waiting for it, and goes
// as the probe the attempt holds (see resilience.Guard.Enter). It is what
// resilience.WithNestedCalls gives a Do's function, for the integrations
// that drive a resilience.Guard themselves.
package attemptctx

import (
	"context"

	"github.com/cloudg/cloudg/resilience"
)

// Context is a context that answers Value(Gov) with Guard, and asks the
// embedded context for every other key. It is safe for concurrent use as
// its embedded context is; its fields are set once, before it is used.
type Context struct {
	context.Context
	Gov   *resilience.Governor
	Guard *resilience.Guard
}

// Value returns Guard for Gov, and the embedded context's value otherwise.
func (c *Context) Value(key any) any { return Value(c.Context, c.Gov, c.Guard, key) }

// Value answers key as a context carrying gd, the call of gov, does: gd
// for gov, and parent's value for any other key. It is for an integration
// whose attempt context is a type of its own (one that also cuts a
// sleep, say).
func Value(parent context.Context, gov *resilience.Governor, gd *resilience.Guard, key any) any {
	if g, ok := key.(*resilience.Governor); ok && g == gov {
		return gd
	}
	return parent.Value(key)
}
