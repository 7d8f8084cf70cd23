package pool

import (
	"testing"
	"unsafe"
)

// A queued task costs its allocation: 80 bytes, the size class it fits
// (the README's scan section and BenchmarkPoolQueued's 104 B a queued task
// count on it). A field added where padding cannot take it moves every task
// to the 96-byte class: proving, put after proveWait, did (the pool, once
// each task's, is its queue's since).
func TestATaskStaysInItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(task{}); n > 80 {
		t.Fatalf("a task is %d bytes; want at most 80, its size class", n)
	}
}
