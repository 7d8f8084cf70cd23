//go:build go1.25

package bulkhead

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/internal/modeltest"
	"pgregory.net/rapid"
)

// waiterOf is a caller of Acquire in the model test: its goroutine, its
// context's cancel, and Acquire's answer once it returned.
type waiterOf struct {
	id     int
	cancel context.CancelFunc
	done   chan error
}

// TestModel drives a bulkhead with random sequences of TryAcquire,
// Acquire (each on a goroutine of its own, in a synctest bubble, so that
// a step ends once every goroutine it woke is done or blocked), Release,
// the cancellation of a waiter and SetLimit, against a model of a slot
// pool served in arrival order (spec 2.5), and checks after every step:
// exactly the callers the model admits hold a slot, in the model's order;
// a cancelled waiter returns its context's error and holds nothing; and
// InUse, Idle, Free and Limit read what the model holds. Every sequence
// ends by releasing and cancelling everything, after which the bulkhead
// is idle: no slot leaked.
func TestModel(t *testing.T) {
	modeltest.Budget(t, 100, 60)
	rapid.Check(t, func(t *rapid.T) {
		rapid.SyncTest(t, func(t *rapid.T) {
			limit := rapid.IntRange(1, 4).Draw(t, "limit")
			b := New(limit)
			held := 0             // slots held, by TryAcquire or a returned Acquire
			var queue []*waiterOf // the model's line, in arrival order
			var waiting []*waiterOf
			next := 0
			t.Cleanup(func() { // a failed sequence leaves no goroutine blocked in the bubble
				for _, w := range waiting {
					w.cancel()
				}
			})

			// settle waits for the goroutines, then checks that the
			// waiters the model says were served are exactly those whose
			// Acquire returned nil.
			dispatch := func() {
				for len(queue) > 0 && held < limit {
					queue = queue[1:]
					held++
				}
			}
			settle := func(t *rapid.T) {
				synctest.Wait()
				for _, w := range slices.Clone(waiting) {
					queued := slices.Contains(queue, w)
					select {
					case err := <-w.done:
						if queued {
							t.Fatalf("waiter %d returned (%v) while the model has it queued at %d", w.id, err, slices.Index(queue, w))
						}
						if err != nil {
							t.Fatalf("waiter %d was served by the model, but Acquire returned %v", w.id, err)
						}
						waiting = slices.DeleteFunc(waiting, func(x *waiterOf) bool { return x == w })
					default:
						if !queued {
							t.Fatalf("waiter %d still waits; the model served it", w.id)
						}
					}
				}
			}
			acquire := func(t *rapid.T) {
				ctx, cancel := context.WithCancel(context.Background())
				w := &waiterOf{id: next, cancel: cancel, done: make(chan error, 1)}
				next++
				go func() { w.done <- b.Acquire(ctx) }()
				waiting = append(waiting, w)
				queue = append(queue, w)
				dispatch()
				settle(t)
			}
			release := func(t *rapid.T) {
				b.Release()
				held--
				dispatch()
				settle(t)
			}
			cancelWaiter := func(t *rapid.T, w *waiterOf) {
				w.cancel()
				synctest.Wait()
				if err := <-w.done; err != context.Canceled {
					t.Fatalf("cancelled waiter %d: Acquire returned %v, want context.Canceled", w.id, err)
				}
				queue = slices.DeleteFunc(queue, func(x *waiterOf) bool { return x == w })
				waiting = slices.DeleteFunc(waiting, func(x *waiterOf) bool { return x == w })
				settle(t)
			}

			t.Repeat(map[string]func(*rapid.T){
				"tryAcquire": func(t *rapid.T) {
					want := len(queue) == 0 && held < limit
					if got := b.TryAcquire(); got != want {
						t.Fatalf("TryAcquire() = %v with %d held of %d, %d queued; want %v", got, held, limit, len(queue), want)
					}
					if want {
						held++
					}
				},
				"acquire": acquire,
				"release": func(t *rapid.T) {
					if held == 0 {
						t.Skip("no slot held")
					}
					release(t)
				},
				"cancel": func(t *rapid.T) {
					if len(queue) == 0 {
						t.Skip("nobody waits")
					}
					cancelWaiter(t, queue[rapid.IntRange(0, len(queue)-1).Draw(t, "waiter")])
				},
				"setLimit": func(t *rapid.T) {
					limit = rapid.IntRange(1, 5).Draw(t, "new limit")
					b.SetLimit(limit)
					dispatch()
					settle(t)
				},
				"": func(t *rapid.T) {
					if used, w := b.InUse(); used != held || w != len(queue) {
						t.Fatalf("InUse() = %d, %d; want %d, %d", used, w, held, len(queue))
					}
					if got, want := b.Idle(), held == 0 && len(queue) == 0; got != want {
						t.Fatalf("Idle() = %v with %d held, %d queued", got, held, len(queue))
					}
					if got, want := b.Free(), len(queue) == 0 && held < limit; got != want {
						t.Fatalf("Free() = %v with %d held of %d, %d queued", got, held, limit, len(queue))
					}
					if b.Limit() != limit {
						t.Fatalf("Limit() = %d; want %d", b.Limit(), limit)
					}
				},
			})

			// The end: every waiter cancelled, every slot released.
			for len(queue) > 0 {
				cancelWaiter(t, queue[0])
			}
			for held > 0 {
				release(t)
			}
			if !b.Idle() {
				used, w := b.InUse()
				t.Fatalf("not idle once everything was released and cancelled: %d used, %d waiting", used, w)
			}
		})
	})
}
