package pool

import (
	"container/heap"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// where says where a queue is, among the pool's structures.
type where uint8

const (
	nowhere   where = iota // empty, or waiting to be put back
	inRing                 // its head may be ready: the workers look at it in turn
	parked                 // its scope cannot go before wakeAt
	slotted                // its scope waits for a concurrency slot
	admitting              // a task of it runs, its first call not decided yet
	asking                 // pick asks the governor about its scope, p.mu released (see Pool.ask)
)

// queue is one scope's tasks, first in first out.
type queue struct {
	p          *Pool // the pool it is a queue of, for its tasks (see task)
	scope      resilience.Scope
	head, tail *task
	n          int
	where      where
	noSlot     bool          // put back in turn by a task's end, its last answer no slot (see Pool.unslot)
	behind     bool          // parked behind a hold of a queue that lost its token (see Pool.loserHold): parked again, it keeps its turn
	lost       bool          // its head's first call was refused the token its scope was told free, not admitted since (see Pool.loserHold)
	heldBack   bool          // slotted: for the first calls of its account's tasks started, not for a slot found taken (see Pool.holdBack)
	leads      bool          // put back in turn to be asked for its account's queues held back, which wait behind it (see Pool.unholdBack)
	taskEnded  bool          // asking: a task of it ended meanwhile (see Pool.ask)
	parkedAt   uint32        // parked: its turn when it was parked, the pool's count of asks when it was asked about (see Pool.park)
	wakeAt     time.Duration // parked: when its scope may go
	heldUntil  time.Duration // the end of the wait the last refusal of its head gave
	heldGen    uint32        // the governor's Generation when the tasks whose refusals make the hold were started (truncated)
	turn       uint32        // its turn when it was last asked about, the pool's count of asks then (see Pool.ask, Pool.slot)
	holder     *task         // admitting: the task whose first call it waits for
	admitUntil time.Duration // admitting: when its hold ends, if not decided before
	heap       int           // its index in the parked heap; -1: not in it
	live       []*task       // its tasks running (started, not finished), for their contexts' deadlines (see Pool.Progress)
	// Its account's concurrency cap in the pool's caps, if there
	// (capKnown), copied when the pool's count of changes to its caps
	// was capsSeq (see Pool.capOf).
	capsSeq  uint64
	cap      int
	capKnown bool
	// Its tasks started to prove its scope dead or alive (see
	// Pool.proves) whose first calls are not decided yet. proved counts
	// the first calls such tasks sent in the streak of failures that
	// began at provedIn.
	proving  int
	proved   int
	provedIn time.Time
	// lookable: its scope's last answer was no token (ErrNoToken) or go;
	// lookedAt: when the pool last read its
	// scope's snapshot for a proof, if looked (see Pool.ask).
	lookable, looked bool
	lookedAt         time.Duration

	running, done, failed, deferred, dropped int
}

func (q *queue) push(t *task) {
	t.next = nil
	if q.tail == nil {
		q.head = t
	} else {
		q.tail.next = t
	}
	q.tail = t
	q.n++
}

func (q *queue) pushFront(t *task) {
	t.next = q.head
	q.head = t
	if q.tail == nil {
		q.tail = t
	}
	q.n++
}

func (q *queue) pop() *task {
	t := q.head
	if t == nil {
		return nil
	}
	q.head = t.next
	if q.head == nil {
		q.tail = nil
	}
	t.next = nil
	q.n--
	return t
}

// ring is the queues the workers look at in turn: a FIFO of queues.
type ring struct{ fifo[*queue] }

func (r *ring) push(q *queue) {
	q.where = inRing
	r.fifo.push(q)
}

// fifo is a first-in first-out list that reuses its array: emptied, it
// starts again at the array's start, and once the front that was popped
// holds most of it, what is left moves down.
type fifo[T any] struct {
	s    []T
	head int
}

func (f *fifo[T]) len() int { return len(f.s) - f.head }

// all returns the elements, front first.
func (f *fifo[T]) all() []T { return f.s[f.head:] }

func (f *fifo[T]) push(v T) {
	if f.head > 0 && f.head == len(f.s) {
		f.s, f.head = f.s[:0], 0
	} else if f.head > 64 && f.head*2 > len(f.s) {
		n := copy(f.s, f.s[f.head:])
		clear(f.s[n:])
		f.s, f.head = f.s[:n], 0
	}
	f.s = append(f.s, v)
}

// front returns the first element; the list must not be empty.
func (f *fifo[T]) front() T { return f.s[f.head] }

func (f *fifo[T]) pop() T {
	v := f.s[f.head]
	var zero T
	f.s[f.head] = zero
	f.head++
	return v
}

// parkedHeap is the parked queues, soonest first, and of those due at the
// same time (scopes waiting for the same token of a bucket they share)
// the one whose turn came first: the others then take the token in turn.
type parkedHeap []*queue

func (h parkedHeap) Len() int { return len(h) }
func (h parkedHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return a.wakeAt < b.wakeAt || a.wakeAt == b.wakeAt && int32(a.parkedAt-b.parkedAt) < 0 // wraps around
}
func (h parkedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heap, h[j].heap = i, j
}
func (h *parkedHeap) Push(x any) {
	q := x.(*queue)
	q.heap = len(*h)
	*h = append(*h, q)
}
func (h *parkedHeap) Pop() any {
	old := *h
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	q.heap = -1
	return q
}

func (h *parkedHeap) push(q *queue)  { heap.Push(h, q) }
func (h *parkedHeap) popMin() *queue { return heap.Pop(h).(*queue) }
func (h parkedHeap) min() *queue     { return h[0] }
