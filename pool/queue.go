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
)

// queue is one scope's tasks, first in first out.
type queue struct {
	scope      resilience.Scope
	head, tail *task
	n          int
	where      where
	wakeAt     time.Duration // parked: when its scope may go
	heldUntil  time.Duration // the end of the wait the last refusal of its head gave
	heap       int           // its index in the parked heap; -1: not in it

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
type ring struct {
	qs   []*queue
	head int
}

func (r *ring) len() int { return len(r.qs) - r.head }

func (r *ring) push(q *queue) {
	q.where = inRing
	if r.head > 0 && r.head == len(r.qs) {
		r.qs, r.head = r.qs[:0], 0
	} else if r.head > 64 && r.head*2 > len(r.qs) {
		n := copy(r.qs, r.qs[r.head:])
		clear(r.qs[n:])
		r.qs, r.head = r.qs[:n], 0
	}
	r.qs = append(r.qs, q)
}

func (r *ring) pop() *queue {
	q := r.qs[r.head]
	r.qs[r.head] = nil
	r.head++
	return q
}

// parkedHeap is the parked queues, soonest first.
type parkedHeap []*queue

func (h parkedHeap) Len() int           { return len(h) }
func (h parkedHeap) Less(i, j int) bool { return h[i].wakeAt < h[j].wakeAt }
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
