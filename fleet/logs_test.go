package fleet

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a buffer safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// lines returns the lines of b that contain s.
func (b *syncBuffer) lines(s string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// fakeNow makes redisLog read its time from the returned clock until the
// test ends.
func fakeNow(t *testing.T) *time.Time {
	t.Helper()
	now := time.Unix(1e9, 0)
	var mu sync.Mutex
	redisLog.mu.Lock()
	redisLog.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	redisLog.mu.Unlock()
	t.Cleanup(func() {
		redisLog.mu.Lock()
		redisLog.now = time.Now
		redisLog.mu.Unlock()
	})
	return &now
}

// go-redis's own lines about a store's client (each failed dial of a
// Redis that does not answer) go to the store's logger, not to standard
// error. (go-redis dials in a goroutine of its own, and logs when its
// retries are over.)
func TestTheRedisClientLogsThroughTheStore(t *testing.T) {
	var buf syncBuffer
	s, err := Open("redis://127.0.0.1:1", WithLogger(slog.New(slog.NewTextHandler(&buf, nil))), WithTimeout(50*time.Millisecond), WithHeartbeat(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const dial = `level=WARN msg="cloudg fleet: the Redis client logged" redis="redis: connection pool: failed to dial`
	for deadline := time.Now().Add(20 * time.Second); len(buf.lines(dial)) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no line of go-redis in the store's log:\n%s", buf.String())
		}
		s.heartbeat()
	}
}

// A message of go-redis repeats in a logger at most once per interval,
// with the times it was logged meanwhile, written by the next line or the
// store's heartbeat once the interval has passed.
func TestRedisLinesAreRateLimited(t *testing.T) {
	now := fakeNow(t)
	var buf syncBuffer
	s := &Store{}
	s.log.Store(slog.New(slog.NewTextHandler(&buf, nil)))
	redisLog.add(s)
	defer redisLog.remove(s)
	// A format of this test's own: go-redis's own lines, which a store
	// closed by another test may still log as its dials fail (to every
	// live store's logger, this one's too), are counted apart.
	for i := range 6 {
		redisLog.Printf(context.Background(), "redis: this test's pool: failed to dial after %d attempts: %v", 5, i)
	}
	const dial = `redis="redis: this test's pool: failed to dial`
	if l := buf.lines(dial); len(l) != 1 {
		t.Fatalf("%d lines for 6 failed dials at once, want 1:\n%s", len(l), buf.String())
	}
	redisLog.mu.Lock()
	*now = now.Add(redisLogEvery)
	redisLog.mu.Unlock()
	redisLog.flush() // as the store's heartbeat does
	l := buf.lines(dial)
	if len(l) != 2 || !strings.Contains(l[1], `5 attempts: 5" times=5`) {
		t.Fatalf("after the interval, want a line counting the other 5:\n%s", buf.String())
	}
	redisLog.flush()
	if l := buf.lines(dial); len(l) != 2 {
		t.Fatalf("a flush with nothing held back wrote:\n%s", buf.String())
	}
}

// A line about one store's operation goes to that store's logger; any
// other line to every live store's logger, once per logger, or to
// slog.Default when no store is live.
func TestRedisLinesGoToTheirStore(t *testing.T) {
	fakeNow(t)
	var a, b syncBuffer
	sa := &Store{}
	sa.log.Store(slog.New(slog.NewTextHandler(&a, nil)))
	sb := &Store{}
	sb.log.Store(slog.New(slog.NewTextHandler(&b, nil)))
	sc := &Store{}
	sc.log.Store(sb.logger()) // the same logger as sb's
	for _, s := range []*Store{sa, sb, sc} {
		redisLog.add(s)
		defer redisLog.remove(s)
	}
	redisLog.Printf(context.WithValue(context.Background(), storeKey{}, sa), "redis: about one %s", "a")
	redisLog.Printf(context.Background(), "redis: about %s", "all")
	if got := a.lines("redis="); len(got) != 2 {
		t.Errorf("store a's log:\n%s", a.String())
	}
	if got := b.lines("redis="); len(got) != 1 || !strings.Contains(got[0], `redis="redis: about all"`) {
		t.Errorf("stores b and c's log:\n%s", b.String())
	}
}
