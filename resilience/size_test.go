package resilience

import (
	"testing"
	"unsafe"
)

// A live scope's state is one allocation (an entryBlock: the entry, its
// bucket and its breaker, with its account's in an entryWithAccount), and
// its size sets what a million scopes cost (BenchmarkScopeBytes). Each
// stays within the size class it is in: a field that pushes one into the
// next class costs every live scope that class's step, as a second flag
// word once did (32 bytes a scope). Growing one is a decision to make with
// the benchmark's figures, and this test's bounds, updated together.
func TestAScopesStateStaysInItsSizeClass(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, most uintptr
	}{
		{"entryBlock", unsafe.Sizeof(entryBlock{}), 288},
		{"entryWithAccount", unsafe.Sizeof(entryWithAccount{}), 416},
	} {
		if c.size > c.most {
			t.Errorf("%s is %d bytes, over its size class's %d", c.name, c.size, c.most)
		}
	}
}
