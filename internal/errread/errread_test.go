package errread

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// nilUnwrapper is an error type whose methods read their receiver, as the
// SDKs' do (*smithy.OperationError, *googleapi.Error).
type nilUnwrapper struct{ err error }

func (e *nilUnwrapper) Error() string { return e.err.Error() }
func (e *nilUnwrapper) Unwrap() error { return e.err }

// As and Is read a chain that holds a typed nil whose Unwrap panics
// without panicking: false, and the panic's value. A typed nil that
// matches As's target is no such error. Over a readable chain they are
// errors.As and errors.Is, within MaxDepth and MaxNodes.
func TestAsAndIsSurviveATypedNilInTheChain(t *testing.T) {
	broken := fmt.Errorf("wrapped: %w", (*nilUnwrapper)(nil))
	var target *nilUnwrapper
	if found, p := As(fmt.Errorf("x: %w", broken), new(*fs.PathError)); found || p == nil {
		// no error of the chain is a *fs.PathError: the walk reaches the nil's Unwrap
		t.Errorf("As past a nil *nilUnwrapper = %v, %v; want false and the panic", found, p)
	}
	if found, p := As(broken, &target); found || p != nil || target != nil {
		t.Errorf("As(a nil *nilUnwrapper) = %v, %v, target %v; want false, no panic, nil", found, p, target)
	}
	var iface interface{ Unwrap() error }
	if found, _ := As((*nilUnwrapper)(nil), &iface); found || iface != nil {
		t.Errorf("As(a nil *nilUnwrapper into an interface) = %v, %v; want false, nil", found, iface)
	}
	if found, p := Is(broken, context.Canceled); found || p == nil {
		t.Errorf("Is past a nil *nilUnwrapper = %v, %v; want false and the panic", found, p)
	}
	readable := fmt.Errorf("x: %w", &nilUnwrapper{err: context.Canceled})
	if found, p := As(readable, &target); !found || p != nil || target == nil {
		t.Errorf("As(readable) = %v, %v, %v; want the *nilUnwrapper", found, p, target)
	}
	if found, p := Is(readable, context.Canceled); !found || p != nil {
		t.Errorf("Is(readable) = %v, %v; want true", found, p)
	}
	if found, _ := Is(nil, nil); !found {
		t.Error("Is(nil, nil) = false, want errors.Is's true")
	}
	if msg, p := Message((*nilUnwrapper)(nil)); msg != "" || p == nil {
		t.Errorf("Message(a nil *nilUnwrapper) = %q, %v; want \"\" and the panic", msg, p)
	}
	if msg, p := Message(errors.New("m")); msg != "m" || p != nil {
		t.Errorf("Message = %q, %v", msg, p)
	}
}

// As, given a target errors.As refuses (a pointer to a type that is
// neither an interface nor an error), panics before reading err, as
// errors.As does: that is a bug of the caller's, not the error's, and
// must not read as "no match".
func TestAsPanicsOnATargetErrorsAsRefuses(t *testing.T) {
	for name, target := range map[string]any{
		"*int":    new(int),
		"*string": new(string),
		"nil":     nil,
		"**int":   new(*int),
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("As(err, %s) did not panic; errors.As does", name)
				}
			}()
			found, p := As(errors.New("e"), target)
			t.Errorf("As(err, %s) = %v, %v", name, found, p)
		})
	}
}

// As and Is read each branch of a join on its own: a branch whose
// methods panic (a typed nil whose Unwrap, Error and As read their
// receiver) ends the read of that branch only, and a match in a branch
// beside it, before or after, is found all the same, with the panic's
// value. A panic deeper in a chain ends the read of that chain's causes
// only: the errors above it are still read.
func TestAsAndIsReadTheBranchesOfAJoinBesideOneThatPanics(t *testing.T) {
	match := &fs.PathError{Op: "open", Path: "p", Err: context.Canceled}
	broken := fmt.Errorf("broken: %w", (*nilUnwrapper)(nil))
	for name, err := range map[string]error{
		"after":          errors.Join(broken, match),
		"after, wrapped": fmt.Errorf("outer: %w", errors.Join((*nilUnwrapper)(nil), fmt.Errorf("inner: %w", match))),
		"nested joins":   errors.Join(errors.Join(broken, errors.New("x")), errors.Join(broken, match)),
		"before":         errors.Join(match, broken),
	} {
		t.Run(name, func(t *testing.T) {
			var target *fs.PathError
			if found, _ := As(err, &target); !found || target != match {
				t.Errorf("As = %v, %v; want the *fs.PathError beside the panicking branch", found, target)
			}
			if found, _ := Is(err, context.Canceled); !found {
				t.Error("Is(context.Canceled) = false; want the cause of the *fs.PathError beside the panicking branch")
			}
		})
	}
	err := errors.Join(broken, errors.New("other"))
	var target *fs.PathError
	if found, p := As(err, &target); found || p == nil || target != nil {
		t.Errorf("As with no match = %v, %v, %v; want false and the panic", found, p, target)
	}
	if found, p := Is(err, context.Canceled); found || p == nil {
		t.Errorf("Is with no match = %v, %v; want false and the panic", found, p)
	}
	var nilTarget *nilUnwrapper
	if found, _ := As(errors.Join(broken, (*nilUnwrapper)(nil)), &nilTarget); found || nilTarget != nil {
		t.Errorf("As of a nil match beside a panic = %v, %v; want no match", found, nilTarget)
	}
}
