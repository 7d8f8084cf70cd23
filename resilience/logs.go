package resilience

import (
	"sync"
	"time"

	"github.com/cloudg/cloudg/observe"
)

// logKey is what the log rate-limits its lines by: a scope, what happened
// to it, and for a lost call how it was lost (or for a pause, the bucket).
type logKey struct {
	scope Scope
	kind  observe.Kind
	loss  string
}

// logWindow is what the log keeps of one key: the events since its last
// line, and when that line was written.
type logWindow struct {
	n           int64         // events since the last line
	first, last time.Duration // the first and last of them
	lined       time.Duration // when the last line was written
	err, reason string        // the last event's, for a line written later
	hint        time.Duration
	hasHint     bool
	until       time.Duration // a pause's: the end of the last pause the log said
}

// logWindows are the governor's log windows. It is made and used only when
// the governor has a logger, on the events the log shows (none is on a
// call's success path), and is safe for concurrent use.
type logWindows struct {
	mu    sync.Mutex
	m     map[logKey]*logWindow
	sweep time.Duration // when due next looks for lines held back
}

// note counts ev, of key k, at now; it reports whether a line is due (the
// key's first event, or the first after every has passed since its last
// line), with the events it covers and the time between the first and
// the last of them. The event's error is read before the lock is taken:
// its Error method is the SDK's or the caller's code.
func (l *logWindows) note(k logKey, now time.Duration, ev *observe.Event, every time.Duration) (n int64, over time.Duration, line bool) {
	var errText string
	if ev.Err != nil {
		errText = errorText(ev.Err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w, seen := l.m[k]
	if !seen {
		if l.m == nil {
			l.m = map[logKey]*logWindow{}
			l.sweep = now + every
		}
		w = new(logWindow)
		l.m[k] = w
	}
	if w.n == 0 {
		w.first = now
	}
	w.n++
	w.last = now
	if ev.Err != nil {
		w.err = errText
	}
	w.reason, w.hint, w.hasHint = ev.Reason, ev.Hint, ev.HasHint
	if seen && now-w.lined < every {
		return 0, 0, false
	}
	n, over = w.n, w.last-w.first
	w.n, w.lined = 0, now
	return n, over, true
}

// heldLine is a line that rate limiting held back, now due.
type heldLine struct {
	key         logKey
	n           int64
	over        time.Duration
	err, reason string
	hint        time.Duration
	hasHint     bool
}

// due returns the lines held back whose interval has passed at now, and
// forgets the keys with nothing to say for an interval. It looks once
// per interval.
func (l *logWindows) due(now, every time.Duration) []heldLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || now < l.sweep {
		return nil
	}
	l.sweep = now + every
	var out []heldLine
	for k, w := range l.m {
		switch {
		case k.kind == observe.Pause:
			if w.until < now-every {
				delete(l.m, k)
			}
		case now-w.lined < every:
		case w.n > 0:
			out = append(out, heldLine{k, w.n, w.last - w.first, w.err, w.reason, w.hint, w.hasHint})
			w.n, w.lined = 0, now
		default:
			delete(l.m, k)
		}
	}
	return out
}

// extends reports whether the pause ev, of d set at now, holds its scope's
// bucket at least minLoggedPause past the end of the last pause the log
// said, and notes it if so: concurrent throttled calls set one pause
// each, and the log says it once.
func (l *logWindows) extends(ev *observe.Event, now, d, every time.Duration) bool {
	k := logKey{scope: ev.Scope, kind: observe.Pause, loss: ev.Level}
	until := now + d
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[logKey]*logWindow{}
		l.sweep = now + every
	}
	w, seen := l.m[k]
	if seen && until < w.until+minLoggedPause {
		return false
	}
	if !seen {
		w = new(logWindow)
		l.m[k] = w
	}
	w.until = until
	return true
}
