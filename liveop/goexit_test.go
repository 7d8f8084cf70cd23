package liveop

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// An operation whose function calls runtime.Goexit (as testing.T.FailNow
// does) ends as a panic does, its callers getting a *PanicError that
// matches ErrPanicked; but they can tell it from a panic, even one with
// the value "runtime.Goexit".
func TestAGoexitIsToldFromAPanic(t *testing.T) {
	g := newGuard(t, Config{CooldownSeconds: ptr(0.0)})
	run := func(key string, fn func(context.Context) (string, error)) *PanicError {
		t.Helper()
		_, err := Run(context.Background(), g, req(key, "aws/1"), fn)
		var pe *PanicError
		if !errors.As(err, &pe) || !errors.Is(err, ErrPanicked) {
			t.Fatalf("%s: got %v, want a *PanicError matching ErrPanicked", key, err)
		}
		return pe
	}
	goexit := run("goexit", func(context.Context) (string, error) { runtime.Goexit(); return "", nil })
	panicked := run("panic", func(context.Context) (string, error) { panic("runtime.Goexit") })
	if goexit.Value == panicked.Value {
		t.Fatalf("runtime.Goexit and panic(\"runtime.Goexit\") both give a *PanicError with Value %#v; want them told apart", goexit.Value)
	}
	if goexit.Value != ErrGoexit || !errors.Is(goexit, ErrGoexit) || errors.Is(panicked, ErrGoexit) {
		t.Fatalf("runtime.Goexit's *PanicError: Value %#v, matches ErrGoexit %v; panic(\"runtime.Goexit\")'s matches it %v; want ErrGoexit, true, false",
			goexit.Value, errors.Is(goexit, ErrGoexit), errors.Is(panicked, ErrGoexit))
	}
}
