package estate

import (
	"testing"

	"github.com/cloudg/cloudg/internal/doctest"
)

// Every exported type of the package says in its godoc what its zero
// value is or does (a struct, or a named number), and whether its values
// may be used from several goroutines at once (a struct, or an
// interface), so that a test that builds an estate need not find out
// from the source.
func TestEveryTypeSaysItsZeroValueAndItsConcurrency(t *testing.T) {
	doctest.TypesSayZeroAndConcurrency(t, ".")
}
