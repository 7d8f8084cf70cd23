package cutctx

import (
	"context"
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
