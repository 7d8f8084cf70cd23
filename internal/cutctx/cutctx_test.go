package cutctx

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// A Context is its parent until Arm, then its cut's: a context derived
// from it ends with the cut, and the Context stays ended (Done closed, Err
// set) even once Close has released the cut.
func TestContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	var c Context
	c.Init(parent)
	if c.Done() != parent.Done() || c.Err() != nil {
		t.Fatal("not the parent's before Arm")
	}
	cancel := c.Arm()
	derived, stop := context.WithCancel(&c)
	defer stop()
	if c.Done() == parent.Done() {
		t.Fatal("no cut after Arm")
	}
	cancel()
	<-derived.Done()
	c.Close()
	if c.Err() != context.Canceled || parent.Err() != nil {
		t.Fatalf("cut: %v, parent: %v", c.Err(), parent.Err())
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done open again after the cut")
	}
}

// Reset makes a cut Context its parent's again, and the next Arm makes a
// new cut, while what was derived from the old cut stays ended.
func TestReset(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	var c Context
	c.Init(parent)
	c.Reset() // no cut: nothing to forget
	if c.Done() != parent.Done() {
		t.Fatal("Reset before Arm changed Done")
	}
	first := c.Arm()
	derived, stop := context.WithCancel(&c)
	defer stop()
	first()
	<-derived.Done()
	c.Reset()
	if c.Done() != parent.Done() || c.Err() != nil {
		t.Fatalf("after Reset: Err %v, Done the parent's: %v", c.Err(), c.Done() == parent.Done())
	}
	second := c.Arm()
	if c.Done() == parent.Done() || c.Err() != nil {
		t.Fatal("no new, live cut after Reset and Arm")
	}
	second()
	if c.Err() != context.Canceled || derived.Err() != context.Canceled {
		t.Fatalf("second cut: %v, derived from the first: %v", c.Err(), derived.Err())
	}
	c.Reset()
	c.Close() // no cut: nothing to cancel
	if c.Err() != nil {
		t.Fatalf("after the second Reset: %v", c.Err())
	}
}

// A cut Context's cause is its cut's (context.Canceled), as its Err is,
// however its parent ends later (with a cause of its own), since the cut
// ended it first; a context derived from it with WithCancel once it is
// armed is its cut's child, and takes no goroutine to follow it.
func TestACutsCauseIsTheCuts(t *testing.T) {
	errLater := errors.New("the parent's end, after the cut")
	parent, cancelParent := context.WithCancelCause(context.Background())
	defer cancelParent(nil)
	var c Context
	c.Init(parent)
	cut := c.Arm()
	before := runtime.NumGoroutine()
	derived, stop := context.WithCancel(&c)
	defer stop()
	if n := runtime.NumGoroutine() - before; n != 0 {
		t.Errorf("WithCancel of an armed Context started %d goroutines", n)
	}
	cut()
	cancelParent(errLater)
	if c.Err() != context.Canceled || context.Cause(&c) != context.Canceled || context.Cause(derived) != context.Canceled {
		t.Fatalf("Err %v, Cause %v, derived's Cause %v; want context.Canceled, the cut's", c.Err(), context.Cause(&c), context.Cause(derived))
	}
	c.Reset()
	if context.Cause(&c) != errLater || c.Err() != context.Canceled {
		t.Fatalf("after Reset: Err %v, Cause %v; want the parent's", c.Err(), context.Cause(&c))
	}
}
