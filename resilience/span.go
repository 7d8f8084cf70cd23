package resilience

import (
	"sync"
	"sync/atomic"
	"time"
)

// spanKept is how many disjoint intervals a span keeps of its union: the
// recent ones, enough for the waits of one scope, which end nearly in the
// order they began.
const spanKept = 8

// span is the time covered by a set of intervals on the governor's clock,
// each counted once however many overlap: the wall-clock time during which
// at least one call waited, or a scope was paused. Intervals come in any
// order; the union is exact for those that reach back no further than the
// oldest of the last spanKept disjoint intervals kept, and time before that
// counts as covered (an interval reaching further back adds only what
// follows). It is safe for concurrent use; the zero span is empty.
type span struct {
	mu    sync.Mutex
	total time.Duration
	n     int
	iv    [spanKept][2]time.Duration // disjoint, in order
	floor time.Duration              // the time before it counts as covered
}

// add adds the interval [start, end).
func (s *span) add(start, end time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start = max(start, s.floor)
	if end <= start {
		return
	}
	// The kept intervals from i on end at or after start; those from i to
	// j also begin at or before end: they overlap, and merge with it.
	i := s.n
	for i > 0 && s.iv[i-1][1] >= start {
		i--
	}
	lo, hi, covered := start, end, time.Duration(0)
	j := i
	for ; j < s.n && s.iv[j][0] <= end; j++ {
		a, b := s.iv[j][0], s.iv[j][1]
		covered += min(b, end) - max(a, start)
		lo, hi = min(lo, a), max(hi, b)
	}
	s.total += end - start - covered
	// iv[i:j] become [lo, hi].
	merged := [2]time.Duration{lo, hi}
	switch {
	case j > i:
		s.iv[i] = merged
		copy(s.iv[i+1:], s.iv[j:s.n])
		s.n -= j - i - 1
	case s.n < spanKept:
		copy(s.iv[i+1:s.n+1], s.iv[i:s.n])
		s.iv[i] = merged
		s.n++
	case i == 0:
		// Full, and older than every interval kept: it is before the
		// floor's next step, and counted.
		s.floor = hi
	default:
		// Full: the oldest interval leaves, and its time counts as covered.
		s.floor = s.iv[0][1]
		copy(s.iv[:i-1], s.iv[1:i])
		s.iv[i-1] = merged
	}
}

// covered returns the time the intervals cover.
func (s *span) covered() time.Duration {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// reset empties the span.
func (s *span) reset() {
	s.mu.Lock()
	s.total, s.n, s.floor = 0, 0, 0
	s.mu.Unlock()
}

// spans are what a scope's counters keep of its waits and pauses in
// wall-clock time, made at its first wait or pause.
type spans struct {
	waited, paused span
}

// spansOf returns the spans of c, making them on first use.
func spansOf(p *atomic.Pointer[spans]) *spans {
	if s := p.Load(); s != nil {
		return s
	}
	s := new(spans)
	if p.CompareAndSwap(nil, s) {
		return s
	}
	return p.Load()
}
