package errread

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/cloudg/cloudg/internal/chaintest"
)

// As and Is read a bounded part of a chain: they ask MaxNodes errors at
// most for their causes. A chain an application or an SDK made may
// cycle, or be a DAG that is exponential as a tree, where errors.As and
// errors.Is never end (or overflow the stack), or be wider or deeper
// than is worth reading. The governor reads the errors its callers hand
// it on their behalf, and must end.
func TestAsAndIsReadABoundedPartOfAChain(t *testing.T) {
	for _, c := range chaintest.Chains() {
		t.Run(c.Name, func(t *testing.T) {
			c.Asks.Store(0)
			if found, _ := Is(c.Err, context.Canceled); found {
				t.Error("Is found context.Canceled, which the chain does not hold")
			}
			if n := c.Asks.Load(); n > MaxNodes {
				t.Errorf("Is asked the chain's errors for their causes %d times; want at most MaxNodes (%d)", n, MaxNodes)
			}
			c.Asks.Store(0)
			var target *fs.PathError
			if found, _ := As(c.Err, &target); found {
				t.Error("As found a *fs.PathError, which the chain does not hold")
			}
			if n := c.Asks.Load(); n > MaxNodes {
				t.Errorf("As asked the chain's errors for their causes %d times; want at most MaxNodes (%d)", n, MaxNodes)
			}
		})
	}
}

// A chain one of whose methods panics is read a second time, each
// method on its own: both reads are bounded, so that As and Is ask its
// errors for their causes at most twice MaxNodes times, and end with
// the panic's value.
func TestAsAndIsReadAPanickingChainWithinTwiceTheBound(t *testing.T) {
	broken := (*nilUnwrapper)(nil) // its Unwrap reads the nil
	for _, c := range chaintest.Chains() {
		t.Run(c.Name, func(t *testing.T) {
			err := errors.Join(broken, c.Err)
			c.Asks.Store(0)
			if found, p := Is(err, context.Canceled); found || p == nil {
				t.Errorf("Is = %v, %v; want false and the panic's value", found, p)
			}
			if n := c.Asks.Load(); n > 2*MaxNodes {
				t.Errorf("Is asked the chain's errors for their causes %d times; want at most twice MaxNodes (%d)", n, 2*MaxNodes)
			}
			c.Asks.Store(0)
			var target *fs.PathError
			if found, p := As(err, &target); found || p == nil {
				t.Errorf("As = %v, %v; want false and the panic's value", found, p)
			}
			if n := c.Asks.Load(); n > 2*MaxNodes {
				t.Errorf("As asked the chain's errors for their causes %d times; want at most twice MaxNodes (%d)", n, 2*MaxNodes)
			}
		})
	}
}
