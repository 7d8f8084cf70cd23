package resilience

import (
	"testing"

	"github.com/cloudg/cloudg/internal/doctest"
)

// Every exported type of the package whose values a caller makes or
// keeps (a struct, or a named number) says in its godoc what its zero
// value is or does, and every exported struct type says whether its
// values may be used from several goroutines at once, so that neither
// has to be found out from the source.
func TestEveryTypeSaysItsZeroValueAndItsConcurrency(t *testing.T) {
	doctest.TypesSayZeroAndConcurrency(t, ".")
}
