// Package bulkhead caps the calls in flight: a counting semaphore whose
// waiters are served in arrival order and give up with their context.
package bulkhead

import (
	"context"
	"sync"
)

// Bulkhead is safe for concurrent use. The zero value is not usable; call New.
type Bulkhead struct {
	mu      sync.Mutex
	limit   int
	used    int
	waiters []*waiter // FIFO; head at index 0
}

type waiter struct {
	ready   chan struct{} // closed when the slot is handed over
	granted bool          // set under mu before ready is closed
}

// New returns a bulkhead with limit slots (at least one).
func New(limit int) *Bulkhead {
	return &Bulkhead{limit: max(1, limit)}
}

// TryAcquire takes a slot if one is free and nobody is queued before us.
func (b *Bulkhead) TryAcquire() bool {
	b.mu.Lock()
	ok := b.used < b.limit && len(b.waiters) == 0
	if ok {
		b.used++
	}
	b.mu.Unlock()
	return ok
}

// Acquire takes a slot, waiting in line while none is free. It returns
// ctx.Err() if the context ends first, and then holds no slot.
func (b *Bulkhead) Acquire(ctx context.Context) error {
	b.mu.Lock()
	if b.used < b.limit && len(b.waiters) == 0 {
		b.used++
		b.mu.Unlock()
		return nil
	}
	if err := ctx.Err(); err != nil {
		b.mu.Unlock()
		return err
	}
	w := &waiter{ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	err := ctx.Err()
	b.mu.Lock()
	if w.granted {
		// The slot arrived as we gave up: pass it on, exactly once.
		b.mu.Unlock()
		b.Release()
		return err
	}
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
			break
		}
	}
	b.mu.Unlock()
	return err
}

// Release gives a slot back, handing it to the first waiter if any. Each
// successful Acquire or TryAcquire must be matched by exactly one Release.
func (b *Bulkhead) Release() {
	b.mu.Lock()
	if len(b.waiters) > 0 {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		w.granted = true
		close(w.ready)
	} else if b.used > 0 {
		b.used--
	}
	b.mu.Unlock()
}

// InUse returns the number of slots held and the number of waiters.
func (b *Bulkhead) InUse() (used, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, len(b.waiters)
}

// Limit returns the number of slots.
func (b *Bulkhead) Limit() int { return b.limit }
