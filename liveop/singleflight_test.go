//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

func TestJoinersShareOneRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := &counted{d: 10 * time.Second, val: "dataset-1"}
		ctx := context.Background()
		key := Key("scan", []string{"aws/1"})
		var chs []<-chan outcome
		for range 3 {
			chs = append(chs, goRun(ctx, g, req(key, "aws/1"), op.run))
			synctest.Wait()
		}
		st := g.Status()
		if st.Started != 1 || st.Joined != 2 || len(st.InFlight) != 1 || st.InFlight[0].Callers != 3 ||
			st.InFlight[0].Key != key || st.Active != 1 {
			t.Fatalf("status %+v", st)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		for i, ch := range chs {
			if o, ok := received(ch); !ok || o.val != "dataset-1" || o.err != nil {
				t.Fatalf("caller %d: %+v %v", i, o, ok)
			}
		}
		if op.calls.Load() != 1 {
			t.Fatalf("the operation ran %d times", op.calls.Load())
		}
	})
}

func TestJoinersShareTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		failed := errors.New("AccessDenied")
		op := &counted{d: 5 * time.Second, err: failed}
		a := goRun(context.Background(), g, req("k", "aws/1"), op.run)
		synctest.Wait()
		b := goRun(context.Background(), g, req("k", "aws/1"), op.run)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		for _, ch := range []<-chan outcome{a, b} {
			if o, ok := received(ch); !ok || o.err != failed {
				t.Fatalf("%+v %v", o, ok)
			}
		}
		if op.calls.Load() != 1 || g.Status().Joined != 1 {
			t.Fatalf("calls %d, status %+v", op.calls.Load(), g.Status())
		}
	})
}

func TestEmptyKeyNeverJoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := &counted{d: time.Second, val: "x"}
		a := goRun(context.Background(), g, req("", "aws/1"), op.run)
		b := goRun(context.Background(), g, req("", "aws/2"), op.run)
		synctest.Wait()
		if st := g.Status(); st.Started != 2 || st.Joined != 0 {
			t.Fatalf("status %+v", st)
		}
		// The same scope is busy: an empty key joins nothing.
		_, err := Run(context.Background(), g, req("", "aws/1"), op.run)
		refused(t, err, ReasonBusy, "a live operation is already running for aws/1; retry when it finishes or use the cached dataset")
		time.Sleep(time.Second)
		<-a
		<-b
	})
}

// Joining is free: a caller past its quota, or whose scopes are at their
// cap, still joins the identical operation.
func TestJoiningUsesNoQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CallerMaxOperations: 1})
		op := &counted{d: time.Minute, val: "x"}
		a := goRun(context.Background(), g, req("k", "aws/1"), op.run)
		synctest.Wait()
		if err := g.Check(req("k", "aws/1")); err != nil {
			t.Fatalf("Check of a join: %v", err)
		}
		refused(t, g.Check(req("other", "aws/2")), ReasonQuota,
			"caller 'agent' reached its quota of 1 live operations per 3600s; retry in 3600s or use the cached dataset")
		b := goRun(context.Background(), g, req("k", "aws/1"), op.run)
		time.Sleep(time.Minute)
		if oa, ob := <-a, <-b; oa.err != nil || ob.err != nil || g.Status().Started != 1 {
			t.Fatalf("%+v %+v", oa, ob)
		}
	})
}

func TestJoinWithAnotherResultType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := &counted{d: time.Second, val: "x"}
		a := goRun(context.Background(), g, req("k", "aws/1"), op.run)
		synctest.Wait()
		// An interface type is named too, not as a nil value's "<nil>".
		stringer := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), g, req("k", "aws/1"), func(context.Context) (fmt.Stringer, error) { return nil, nil })
			stringer <- err
		}()
		n, err := Run(context.Background(), g, req("k", "aws/1"), func(context.Context) (int, error) { return 1, nil })
		if n != 0 || err == nil || err.Error() != `liveop: operation "k" returned string, not int` || !errors.Is(err, ErrResultType) {
			t.Fatalf("got %d, %v (matches ErrResultType: %v); want the type's error", n, err, errors.Is(err, ErrResultType))
		}
		if err := <-stringer; err == nil || err.Error() != `liveop: operation "k" returned string, not fmt.Stringer` || !errors.Is(err, ErrResultType) {
			t.Fatal(err)
		}
		<-a

		// The operation's own error, returned with its value, is not lost.
		partial := errors.New("partial")
		b := goRun(context.Background(), g, req("p", "aws/2"), func(context.Context) (string, error) {
			time.Sleep(time.Second)
			return "some", partial
		})
		synctest.Wait()
		n, err = Run(context.Background(), g, req("p", "aws/2"), func(context.Context) (int, error) { return 1, nil })
		if !errors.Is(err, ErrResultType) || !errors.Is(err, partial) ||
			err.Error() != `liveop: operation "p" returned string, not int (and the error: partial)` {
			t.Fatalf("%d %v", n, err)
		}
		<-b
	})
}

// A caller of a type that cannot be nil (int) that joins an operation
// whose function, of an interface type, returned a nil value and no error
// gets the type's error, not a zero it could take for the result.
func TestJoinNilInterfaceResultWithAnotherType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		a := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), g, req("n", "aws/1"), func(context.Context) (any, error) {
				time.Sleep(time.Second)
				return nil, nil
			})
			a <- err
		}()
		synctest.Wait()
		// Another interface type takes the nil value as its own nil.
		other := make(chan error, 1)
		go func() {
			v, err := Run(context.Background(), g, req("n", "aws/1"), func(context.Context) (fmt.Stringer, error) { return nil, nil })
			if v != nil {
				err = fmt.Errorf("got %v", v)
			}
			other <- err
		}()
		n, err := Run(context.Background(), g, req("n", "aws/1"), func(context.Context) (int, error) { return 1, nil })
		if n != 0 || !errors.Is(err, ErrResultType) || err.Error() != `liveop: operation "n" returned nil, not int` {
			t.Fatalf("got %d, %v; want the type's error", n, err)
		}
		if err := <-a; err != nil {
			t.Fatal(err)
		}
		if err := <-other; err != nil {
			t.Fatal(err)
		}
	})
}

// As with a value of another type, the operation's own error that came
// with a nil value of an interface type is not all a caller of a type
// that cannot be nil gets: the type's error wraps it. A timeout or a
// panic, which no function's value came with, is the caller's error
// whatever its type.
func TestJoinNilInterfaceResultAndErrorWithAnotherType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		partial := errors.New("partial")
		a := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), g, req("n", "aws/1"), func(context.Context) (any, error) {
				time.Sleep(time.Second)
				return nil, partial
			})
			a <- err
		}()
		synctest.Wait()
		n, err := Run(context.Background(), g, req("n", "aws/1"), func(context.Context) (int, error) { return 1, nil })
		if n != 0 || !errors.Is(err, ErrResultType) || !errors.Is(err, partial) ||
			err.Error() != `liveop: operation "n" returned nil, not int (and the error: partial)` {
			t.Fatalf("got %d, %v; want the type's error with the operation's", n, err)
		}
		if err := <-a; err != partial {
			t.Fatal(err)
		}

		b := make(chan error, 1)
		go func() {
			_, err := Run(context.Background(), g, Request{Key: "t", Scopes: []string{"aws/2"}, Timeout: time.Second}, func(ctx context.Context) (any, error) {
				<-ctx.Done()
				return nil, nil
			})
			b <- err
		}()
		synctest.Wait()
		if _, err := Run(context.Background(), g, req("t", "aws/2"), func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, ErrTimeout) || errors.Is(err, ErrResultType) {
			t.Fatalf("%v; want the timeout refusal alone", err)
		}
		if err := <-b; !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
	})
}
