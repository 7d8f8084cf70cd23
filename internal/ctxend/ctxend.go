// Package ctxend is the governor's report that a call's context ended
// while the governor held the call before a retry: the context's error,
// with the provider's last answer, which the retry would have answered.
// Package resilience returns an *Error from Guard.Enter, Pace and Admit,
// and from Call and Do; the integrations read it with Of to end the call
// as their SDK ends one whose context ended (a canceled request, a retry
// stopped by its context), even when the governor read the deadline as
// come before the context's own timer ran and said so.
package ctxend

import "context"

// Error is a context's error with the provider's last answer: errors.Is
// finds the context's error (context.Canceled, context.DeadlineExceeded),
// errors.As the answer's types. Ctx and Last are never nil in the ones
// package resilience returns, which nothing changes once returned: several
// goroutines may read one at once. The zero Error is no error: its Error
// panics.
type Error struct {
	Ctx  error // the context's own error
	Last error // the provider's last answer
}

func (e *Error) Error() string   { return e.Ctx.Error() + " (last error: " + e.Last.Error() + ")" }
func (e *Error) Unwrap() []error { return []error{e.Ctx, e.Last} }

// Of returns the context's error err reports: err itself when it is a
// context's own error (context.Canceled, context.DeadlineExceeded), the
// Ctx of an *Error, and nil for any other error, one that matches a
// context's error with errors.Is included (a transport's timeout, which
// is the provider's answer, not the call's context's end).
func Of(err error) error {
	switch e := err.(type) {
	case *Error:
		return e.Ctx
	default:
		if err == context.Canceled || err == context.DeadlineExceeded {
			return err
		}
		return nil
	}
}
