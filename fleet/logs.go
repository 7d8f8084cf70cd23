package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis logs through a logger of its package (redis.SetLogger), by
// default to standard error: each failed dial of a Redis that does not
// answer is a line of its own, beside the store's one line saying that it
// went on with local limits. The first Store made sets that logger to
// redisLog, which writes go-redis's lines to the loggers of the stores
// (WithLogger, or the governor's), rate-limited. A program that calls
// redis.SetLogger after it has its logger back.

// redisLogEvery is how often, at most, one message of go-redis is written
// to one logger; the repeats between are counted in the next line.
const redisLogEvery = 10 * time.Second

// redisLog is go-redis's logger once a Store is made.
var redisLog = &redisLogger{now: time.Now, stores: map[*Store]struct{}{}, windows: map[redisLogKey]*redisWindow{}}

var redisLogOnce sync.Once

// routeRedisLog makes go-redis log through the stores, once per process.
func routeRedisLog() { redisLogOnce.Do(func() { redis.SetLogger(redisLog) }) }

// storeKey is the key of the Store a context of its Redis operations
// carries, so that go-redis's lines about them go to that store's logger.
type storeKey struct{}

// redisLogger writes go-redis's lines to the stores' loggers: a line about
// one store's operation to that store's logger, any other to the logger of
// every live store (slog.Default when there is none). Each message (its
// format) is written to a logger at most once per redisLogEvery, with the
// times it was logged since its last line; the store's heartbeat writes
// the counts held back once their interval has passed.
type redisLogger struct {
	mu      sync.Mutex
	now     func() time.Time
	stores  map[*Store]struct{} // live
	windows map[redisLogKey]*redisWindow
}

type redisLogKey struct {
	to     *slog.Logger
	format string
}

type redisWindow struct {
	n                  int       // times logged since the last line
	first, last, lined time.Time // the first and last of them, and the last line
	text               string    // the last one
}

// redisLine is a line to write.
type redisLine struct {
	to   *slog.Logger
	text string
	n    int
	over time.Duration
}

// add and remove register a live store.
func (r *redisLogger) add(s *Store) {
	r.mu.Lock()
	r.stores[s] = struct{}{}
	r.mu.Unlock()
}

func (r *redisLogger) remove(s *Store) {
	r.mu.Lock()
	delete(r.stores, s)
	r.mu.Unlock()
}

// Printf is go-redis's Logging interface.
func (r *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	text := fmt.Sprintf(format, v...)
	var lines []redisLine
	r.mu.Lock()
	now := r.now()
	for _, to := range r.targets(ctx) {
		k := redisLogKey{to, format}
		w := r.windows[k]
		if w == nil {
			w = new(redisWindow)
			r.windows[k] = w
		}
		if w.n == 0 {
			w.first = now
		}
		w.n++
		w.text, w.last = text, now
		if w.lined.IsZero() || now.Sub(w.lined) >= redisLogEvery {
			lines = append(lines, redisLine{to, text, w.n, now.Sub(w.first)})
			w.n, w.lined = 0, now
		}
	}
	r.mu.Unlock()
	write(lines)
}

// targets returns the loggers a line logged with ctx goes to.
func (r *redisLogger) targets(ctx context.Context) []*slog.Logger {
	if s, ok := ctx.Value(storeKey{}).(*Store); ok && s != nil {
		return []*slog.Logger{s.logger()}
	}
	var to []*slog.Logger
	for s := range r.stores {
		l := s.logger()
		if !containsLogger(to, l) {
			to = append(to, l)
		}
	}
	if len(to) == 0 {
		to = append(to, slog.Default())
	}
	return to
}

func containsLogger(ls []*slog.Logger, l *slog.Logger) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// flush writes the counts held back whose interval has passed, and
// forgets the messages quiet for an interval.
func (r *redisLogger) flush() {
	var lines []redisLine
	r.mu.Lock()
	now := r.now()
	for k, w := range r.windows {
		if now.Sub(w.lined) < redisLogEvery {
			continue
		}
		if w.n == 0 {
			delete(r.windows, k)
			continue
		}
		lines = append(lines, redisLine{k.to, w.text, w.n, w.last.Sub(w.first)})
		w.n, w.lined = 0, now
	}
	r.mu.Unlock()
	write(lines)
}

// write writes lines, outside the logger's lock.
func write(lines []redisLine) {
	for _, l := range lines {
		attrs := []slog.Attr{slog.String("redis", l.text)}
		if l.n > 1 {
			attrs = append(attrs, slog.Int("times", l.n))
		}
		if l.over > 0 {
			attrs = append(attrs, slog.Duration("over", l.over.Round(time.Millisecond)))
		}
		l.to.LogAttrs(context.Background(), slog.LevelWarn, "cloudg fleet: the Redis client logged", attrs...)
	}
}
