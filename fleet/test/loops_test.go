package test

import (
	"sync/atomic"
	"testing"
	"time"
)

// The goroutines inLoops starts end with the test that started them, even
// when it ends before calling stop (a t.Fatal between the start and the
// stop).
func TestLoopsEndWithTheirTest(t *testing.T) {
	var calls atomic.Int64
	t.Run("ends before stop", func(t *testing.T) {
		inLoops(t, 4, func() bool {
			calls.Add(1)
			time.Sleep(time.Millisecond)
			return true
		})
		time.Sleep(20 * time.Millisecond)
	})
	ended := calls.Load()
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load() - ended; n != 0 {
		t.Fatalf("%d calls from the loops after their test ended", n)
	}
}
