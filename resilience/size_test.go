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
//
// So does a nesting call's allocation, which every governed call that
// may have calls nested in it makes, and a scheduler's task's admission.
func TestAScopesStateStaysInItsSizeClass(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, most uintptr
	}{
		{"entryBlock", unsafe.Sizeof(entryBlock{}), 288},
		{"entryWithAccount", unsafe.Sizeof(entryWithAccount{}), 416},
		// A governed call that may have calls nested in its attempts
		// (Do, Call) is one allocation: its Guard, its context and its
		// gate (BenchmarkCall/governed-nesting).
		{"nestingCall", unsafe.Sizeof(nestingCall{}), 480},
		// A task a scheduler runs with its first call held
		// (WithAdmission) is one allocation too: its context, its
		// binding and its admission, 96 bytes (BenchmarkPool/scope-pool's
		// B/op), not 112 as when binding's two flags each took a word.
		{"admittedCtx", unsafe.Sizeof(admittedCtx{}), 96},
	} {
		if c.size > c.most {
			t.Errorf("%s is %d bytes, over its size class's %d", c.name, c.size, c.most)
		}
	}
}
