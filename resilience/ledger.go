package resilience

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// maxLedgerReasons is how many distinct reasons Describe lists.
const maxLedgerReasons = 5

// Ledger counts the calls one task lost to throttling: calls that gave up
// after their retries, and calls skipped because a circuit was open. A
// collector that catches per-item errors checks Degraded before it reports
// SUCCESS, so a task whose calls were all throttled reports PARTIAL instead
// of a clean result with fewer assets. It is safe for concurrent use; the
// zero value is an empty ledger with no task name.
type Ledger struct {
	Task string

	mu      sync.Mutex
	gaveUp  int
	skipped int
	reasons []string
}

// WithLedger returns a context carrying a fresh ledger for task, and the
// ledger. Governed calls made with the context record their give-ups and
// skips in it (the run's stats binding, if any, is kept).
func WithLedger(ctx context.Context, task string) (context.Context, *Ledger) {
	l := &Ledger{Task: task}
	b := bindingOf(ctx)
	return context.WithValue(ctx, bindingKey{}, &binding{stats: b.stats, ledger: l}), l
}

// recordGaveUp records a call to scope that was sent, retried, and still
// failed with throttling (or stopped on an empty retry budget); desc is
// its error as DescribeError words it.
func (l *Ledger) recordGaveUp(scope Scope, desc string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.gaveUp++
	l.addReason(scope.String() + ": " + desc)
	l.mu.Unlock()
}

// recordSkipped records a call that an open circuit rejected before it was
// sent; reason is the rejection's message.
func (l *Ledger) recordSkipped(reason string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.skipped++
	l.addReason(reason)
	l.mu.Unlock()
}

func (l *Ledger) addReason(r string) {
	if len(l.reasons) >= maxLedgerReasons {
		return
	}
	for _, x := range l.reasons {
		if x == r {
			return
		}
	}
	l.reasons = append(l.reasons, r)
}

// Counts returns the calls that gave up and the calls skipped.
func (l *Ledger) Counts() (gaveUp, skipped int) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gaveUp, l.skipped
}

// Reasons returns up to five distinct reasons, in the order first seen.
func (l *Ledger) Reasons() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reasons...)
}

// Degraded reports whether any call was lost: the task's coverage record
// should be PARTIAL.
func (l *Ledger) Degraded() bool {
	g, s := l.Counts()
	return g > 0 || s > 0
}

// Describe returns the coverage message, or "" when nothing was lost:
//
//	throttled: 1 call(s) gave up after retries, 2 call(s) skipped (circuit open) (<up to five reasons>)
func (l *Ledger) Describe() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	if l.gaveUp > 0 {
		parts = append(parts, fmt.Sprintf("%d call(s) gave up after retries", l.gaveUp))
	}
	if l.skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d call(s) skipped (circuit open)", l.skipped))
	}
	if len(parts) == 0 {
		return ""
	}
	return "throttled: " + strings.Join(parts, ", ") + " (" + strings.Join(l.reasons, "; ") + ")"
}
