// Package bulkhead caps the calls in flight: a counting semaphore whose
// waiters are served in arrival order and give up with their context.
package bulkhead

import (
	"context"
	"sync"
	"sync/atomic"
)

// Bulkhead is safe for concurrent use. The zero value is not usable; call
// New or Init.
//
// Free slots are an atomic count, so a call that finds one takes it with a
// compare-and-swap and no lock. Only when slots run out do callers queue
// under the mutex; a release that sees waiters hands its slot to the first.
// A caller on the fast path does not jump a queue that has formed.
type Bulkhead struct {
	limit   atomic.Int64 // slots; changed by SetLimit under mu
	avail   atomic.Int64 // free slots
	waiting atomic.Int64 // callers queued, or about to queue under mu

	mu         sync.Mutex
	head, tail *waiter // the line, served from head in arrival order
	queued     int     // waiters in the line
}

// waiter is a caller in the line: a doubly linked list, so that a caller
// that gives up leaves it in constant time, however long it is (a linear
// removal made the cancellation of n waiters at once, under mu, cost n²).
type waiter struct {
	ready      chan struct{} // closed when the slot is handed over
	granted    bool          // set under mu before ready is closed
	prev, next *waiter
}

// push adds w at the line's end. mu must be held.
func (b *Bulkhead) push(w *waiter) {
	w.prev = b.tail
	if b.tail != nil {
		b.tail.next = w
	} else {
		b.head = w
	}
	b.tail = w
	b.queued++
}

// unlink takes w, which is in the line, out of it. mu must be held.
func (b *Bulkhead) unlink(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		b.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		b.tail = w.prev
	}
	w.prev, w.next = nil, nil
	b.queued--
}

// New returns a bulkhead with limit slots (at least one).
func New(limit int) *Bulkhead {
	b := new(Bulkhead)
	b.Init(limit)
	return b
}

// Init makes b, a zero Bulkhead (one embedded in a larger allocation, say),
// a bulkhead with limit slots. It must not be called on a bulkhead in use.
func (b *Bulkhead) Init(limit int) {
	b.limit.Store(int64(max(1, limit)))
	b.avail.Store(b.limit.Load())
}

// TryAcquire takes a slot if one is free and nobody is queued.
func (b *Bulkhead) TryAcquire() bool {
	if b.waiting.Load() > 0 {
		return false
	}
	return b.take()
}

func (b *Bulkhead) take() bool {
	for {
		a := b.avail.Load()
		if a <= 0 {
			return false
		}
		if b.avail.CompareAndSwap(a, a-1) {
			return true
		}
	}
}

// Acquire takes a slot, waiting in line while none is free. It returns
// ctx.Err() if the context ends first, and then holds no slot. A free
// slot is taken even when ctx is done already, as x/sync/semaphore's
// Acquire does: the caller checks its context before, if it must.
func (b *Bulkhead) Acquire(ctx context.Context) error {
	if b.TryAcquire() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	// Announce the wait before looking at the free count again: a release
	// that adds a slot after this sees the waiter and dispatches under mu.
	b.waiting.Add(1)
	if b.queued == 0 && b.take() {
		b.waiting.Add(-1)
		b.mu.Unlock()
		return nil
	}
	w := &waiter{ready: make(chan struct{})}
	b.push(w)
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
	b.unlink(w)
	b.waiting.Add(-1)
	b.mu.Unlock()
	return err
}

// Release gives a slot back, handing it to the first waiter if any. Each
// successful Acquire or TryAcquire must be matched by exactly one Release;
// releasing a slot nobody holds panics, as x/sync/semaphore does, since it
// would silently raise the cap.
func (b *Bulkhead) Release() {
	if b.avail.Add(1) > b.limit.Load() && b.overReleased() {
		panic("bulkhead: released more slots than held")
	}
	if b.waiting.Load() > 0 {
		b.mu.Lock()
		b.dispatch()
		b.mu.Unlock()
	}
}

// overReleased reports whether a release left more free slots than the
// limit, and if so takes the extra slot back. It looks again under mu,
// where SetLimit moves the limit and the free count together: the limit a
// release first compares with may have been lowered since its free count
// was read, and a release that raced a lowered limit is not one too many.
func (b *Bulkhead) overReleased() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.avail.Load() <= b.limit.Load() {
		return false
	}
	b.avail.Add(-1)
	return true
}

// dispatch hands free slots to waiters in order. mu must be held.
func (b *Bulkhead) dispatch() {
	for b.head != nil && b.take() {
		w := b.head
		b.unlink(w)
		b.waiting.Add(-1)
		w.granted = true
		close(w.ready)
	}
}

// InUse returns the number of slots held and the number of waiters. A
// slot released while callers wait is theirs, handed over as soon as the
// releaser takes mu: it counts as held, and its waiter no longer waits, so
// that a reading never shows free slots and callers waiting at once.
func (b *Bulkhead) InUse() (used, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	used, waiting = int(b.limit.Load()-b.avail.Load()), b.queued
	if free := int(b.avail.Load()); free > 0 && waiting > 0 {
		handed := min(free, waiting)
		used, waiting = used+handed, waiting-handed
	}
	return used, waiting
}

// Idle reports whether no slot is held and nobody waits for one. The
// reclaimer asks it of a million bulkheads: a busy one answers false
// without the lock; an idle reading is confirmed under mu, where SetLimit
// moves the limit and the free count together, since a reading of the
// two atomics taken across a SetLimit can match while slots are held
// (2 of 4 held, the limit lowered to 2: a free count of 2 read before,
// a limit of 2 after).
func (b *Bulkhead) Idle() bool {
	if b.waiting.Load() != 0 || b.avail.Load() != b.limit.Load() {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting.Load() == 0 && b.avail.Load() == b.limit.Load()
}

// Free reports whether a slot could be taken now without waiting (one is
// free and nobody is queued), without taking the lock.
func (b *Bulkhead) Free() bool { return b.waiting.Load() == 0 && b.avail.Load() > 0 }

// Limit returns the number of slots.
func (b *Bulkhead) Limit() int { return int(b.limit.Load()) }

// SetLimit changes the number of slots (at least one). Slots already held
// still count: lowered below the slots held, the bulkhead admits nobody
// until enough are released; raised, it hands the new slots to waiters.
func (b *Bulkhead) SetLimit(n int) {
	limit := int64(max(1, n))
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.limit.Load()
	switch {
	case limit > old:
		// The limit first, so that a release never sees more free slots
		// than the limit.
		b.limit.Store(limit)
		b.avail.Add(limit - old)
		b.dispatch()
	case limit < old:
		b.avail.Add(limit - old) // may go negative: slots held past the cap
		b.limit.Store(limit)
	}
}
