package pool

import (
	"testing"
	"unsafe"
)

// A queued task costs its allocation: 96 bytes, the size class it fits
// (the README's scan section and BenchmarkPoolQueued's 120 B a queued task
// count on it). A field added where padding cannot take it moves every task
// to the 112-byte class: proving, put after proveWait, did.
func TestATaskStaysInItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(task{}); n > 96 {
		t.Fatalf("a task is %d bytes; want at most 96, its size class", n)
	}
}
