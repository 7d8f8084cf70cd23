//go:build go1.25

package budget

import (
	"math"
	"sync"
	"testing"
)

func TestTakeUntilEmpty(t *testing.T) {
	b := New(3)
	for i := range 3 {
		if !b.Take() {
			t.Fatalf("take %d refused", i+1)
		}
	}
	if b.Take() {
		t.Fatal("empty budget paid a retry")
	}
	if b.Remaining() != 0 {
		t.Fatalf("remaining %v", b.Remaining())
	}
}

func TestTenSuccessesRefundOneToken(t *testing.T) {
	b := New(2)
	b.Take()
	b.Take()
	for range 9 {
		b.Succeed()
	}
	if b.Take() {
		t.Fatal("0.9 token paid a retry")
	}
	b.Succeed()
	if !b.Take() {
		t.Fatal("1.0 token refused")
	}
}

func TestRefundStopsAtSize(t *testing.T) {
	b := New(500)
	for range 100 {
		b.Succeed()
	}
	if b.Remaining() != 500 {
		t.Fatalf("remaining %v, want 500", b.Remaining())
	}
	b.Take()
	for range 100 {
		b.Succeed()
	}
	if b.Remaining() != 500 {
		t.Fatalf("remaining %v, want 500", b.Remaining())
	}
}

func TestConcurrentTakesNeverOverspend(t *testing.T) {
	b := New(100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if b.Take() {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if n != 100 {
		t.Fatalf("%d retries paid from a budget of 100", n)
	}
}

func TestZeroSize(t *testing.T) {
	b := New(0)
	if b.Take() {
		t.Fatal("zero budget paid")
	}
	b.Succeed()
	if b.Take() || b.Size() != 0 {
		t.Fatal("zero budget grew")
	}
}

// A budget larger than its unit count can hold saturates instead of
// overflowing into a negative, empty budget.
func TestHugeBudgetSaturates(t *testing.T) {
	b := New(math.MaxInt64/5 + 7)
	if b.Remaining() <= 0 || b.Size() != MaxSize || !b.Take() {
		t.Fatalf("remaining %v, size %d", b.Remaining(), b.Size())
	}
	b.Succeed()
	if b.Remaining() <= 0 {
		t.Fatal("a refund overflowed the budget")
	}
}
