//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// An operation whose function runs the same request again would join
// itself and wait for its own result: the nested Run is refused at once
// instead, and the operation, left by its last caller, is cancelled and
// frees its slots.
func TestANestedRunOfTheSameKeyDoesNotWaitForItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		var inner error
		var op func(ctx context.Context) (string, error)
		op = func(ctx context.Context) (string, error) {
			_, inner = Run(ctx, g, req("k", "aws/1"), op)
			return "outer", inner
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := Run(ctx, g, req("k", "aws/1"), op)
		synctest.Wait()
		if !errors.Is(inner, ErrNested) || !errors.Is(err, ErrNested) {
			t.Fatalf("the nested Run got %v, the caller %v; want ErrNested", inner, err)
		}
		if st := g.Status(); st.Active != 0 || len(st.InFlight) != 0 || st.Joined != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}
