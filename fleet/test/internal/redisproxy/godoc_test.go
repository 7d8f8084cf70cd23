package redisproxy

import (
	"testing"

	"github.com/cloudg/cloudg/internal/doctest"
)

// Every exported type of the package says in its godoc what its zero
// value is or does, and whether its values may be used from several
// goroutines at once, so that a test driving a Proxy from one goroutine
// while fleet's goroutines go through it need not find out from the
// source.
func TestEveryTypeSaysItsZeroValueAndItsConcurrency(t *testing.T) {
	doctest.TypesSayZeroAndConcurrency(t, ".")
}
