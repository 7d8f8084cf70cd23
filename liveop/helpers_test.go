package liveop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// outcome is what one Run returned.
type outcome struct {
	val string
	err error
}

// goRun starts Run on its own goroutine; its outcome arrives on the
// channel.
func goRun(ctx context.Context, g *Guard, req Request, fn func(context.Context) (string, error)) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		v, err := Run(ctx, g, req, fn)
		ch <- outcome{v, err}
	}()
	return ch
}

// received returns the outcome if one has arrived, without waiting.
func received(ch <-chan outcome) (outcome, bool) {
	select {
	case o := <-ch:
		return o, true
	default:
		return outcome{}, false
	}
}

// counted is an operation that takes d (or until its context ends, when
// it returns the context's cause) and returns val; calls counts its runs.
type counted struct {
	calls atomic.Int32
	d     time.Duration
	val   string
	err   error
}

func (c *counted) run(ctx context.Context) (string, error) {
	c.calls.Add(1)
	select {
	case <-time.After(c.d):
		return c.val, c.err
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

func newGuard(t *testing.T, cfg Config) *Guard {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func req(key string, scopes ...string) Request {
	return Request{Key: key, Scopes: scopes, Caller: "agent"}
}

func ptr[T any](v T) *T { return &v }

// refused asserts that err is a *RefusedError with reason and message.
func refused(t *testing.T, err error, reason Reason, msg string) *RefusedError {
	t.Helper()
	r, ok := err.(*RefusedError)
	if !ok {
		t.Fatalf("got %T %v, want a %s refusal", err, err, reason)
	}
	if r.Reason != reason || r.Error() != msg {
		t.Fatalf("got %s %q\nwant %s %q", r.Reason, r.Error(), reason, msg)
	}
	return r
}
