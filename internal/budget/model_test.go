package budget

import (
	"testing"

	"github.com/cloudg/cloudg/internal/modeltest"
	"pgregory.net/rapid"
)

// TestModel drives a budget with random sequences of Take and Succeed
// against a model counted in tenths of a token (spec 2.7: a paid retry
// costs one token, a success refunds 0.1, never past the size), and
// checks after every step that the budget answers as the model does and
// reads what it holds: never below zero, never above its size, nothing
// made from nothing nor lost.
func TestModel(t *testing.T) {
	modeltest.Budget(t, 200, 200)
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.IntRange(-2, 5).Draw(t, "size")
		b := New(size)
		full := max(0, size) * 10
		tenths := full

		t.Repeat(map[string]func(*rapid.T){
			"take": func(t *rapid.T) {
				want := tenths >= 10
				if want {
					tenths -= 10
				}
				if got := b.Take(); got != want {
					t.Fatalf("Take() = %v with %d tenths left; want %v", got, tenths, want)
				}
			},
			"succeed": func(t *rapid.T) {
				for range rapid.IntRange(1, 12).Draw(t, "successes") {
					b.Succeed()
					tenths = min(full, tenths+1)
				}
			},
			"": func(t *rapid.T) {
				if got, want := b.Remaining(), float64(tenths)/10; got != want {
					t.Fatalf("Remaining() = %v; want %v", got, want)
				}
				if got, want := b.Size(), max(0, size); got != want {
					t.Fatalf("Size() = %v; want %v", got, want)
				}
			},
		})
	})
}
