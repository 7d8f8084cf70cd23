package modeltest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Watch records the steps of the sequence a model test runs, and watches
// that they go on (Start): a goroutine spinning at one instant of a
// testing/synctest bubble's clock stops virtual time, so that
// synctest.Wait never returns, and would hang the run until go test's
// -timeout, with no sequence to replay. Its zero value records steps and
// watches nothing; it is safe for concurrent use.
type Watch struct {
	mu    sync.Mutex
	steps []string // of the sequence running
	moves int      // steps of every sequence
}

// Begin records the first step of a new sequence, forgetting the steps of
// the one before.
func (w *Watch) Begin(format string, args ...any) {
	w.mu.Lock()
	w.steps = nil
	w.mu.Unlock()
	w.Step(format, args...)
}

// Step records a step of the sequence running.
func (w *Watch) Step(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	w.mu.Lock()
	w.steps = append(w.steps, s)
	w.moves++
	w.mu.Unlock()
}

// Start starts the watchdog of the test named test: it ends the process
// with a panic that names the test and lists the steps of the sequence
// running when no step has begun within limit of real time. It returns
// the function that stops it.
func (w *Watch) Start(test string, limit time.Duration) (stop func()) {
	return w.start(test, limit, func(msg string) { panic(msg) })
}

// start is Start with what is done when no step begins in time.
func (w *Watch) start(test string, limit time.Duration, fail func(msg string)) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(limit / 4)
		defer tick.Stop()
		last, since := -1, time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			w.mu.Lock()
			moves, steps := w.moves, slices.Clone(w.steps)
			w.mu.Unlock()
			if moves != last {
				last, since = moves, time.Now()
				continue
			}
			if time.Since(since) >= limit {
				fail(fmt.Sprintf("%s: no step began in %v of real time: a goroutine spins at one instant of the bubble's clock. The sequence:\n  %s",
					test, limit, strings.Join(steps, "\n  ")))
				return
			}
		}
	}()
	return func() { close(done) }
}
