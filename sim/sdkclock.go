package sim

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"sync"
	"time"
	_ "unsafe" // go:linkname

	_ "github.com/aws/aws-sdk-go-v2/aws/retry" // links the SDK's internal/sdk
)

// The AWS SDK reads the time and sleeps through package variables of its
// internal/sdk package, which it documents as overridable for tests. The
// adaptive mode's rate limiter reads NowTime; the retry middleware and the
// adaptive mode sleep with SleepWithContext. A run on any clock but the time
// package (a ScaledClock) must point them at that clock, or the SDK's
// strategies would run on the wall clock while everything else runs faster.

//go:linkname sdkNowTime github.com/aws/aws-sdk-go-v2/internal/sdk.NowTime
var sdkNowTime func() time.Time

//go:linkname sdkSleepWithContext github.com/aws/aws-sdk-go-v2/internal/sdk.SleepWithContext
var sdkSleepWithContext func(context.Context, time.Duration) error

// The SDK draws its backoff jitter from crypto/rand through its
// internal/rand.Reader, which it documents as resettable for tests.
//
//go:linkname sdkRandReader github.com/aws/aws-sdk-go-v2/internal/rand.Reader
var sdkRandReader io.Reader

var sdkClockMu sync.Mutex

// seededReader is a deterministic io.Reader, safe for concurrent use.
type seededReader struct {
	mu sync.Mutex
	r  *rand.PCG
}

func (s *seededReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b [8]byte
	for i := 0; i < len(p); i += 8 {
		binary.LittleEndian.PutUint64(b[:], s.r.Uint64())
		copy(p[i:], b[:])
	}
	return len(p), nil
}

// minSDKSleep is the shortest sleep of the SDK. A real timer never fires in
// zero time, but a zero sleep in virtual time takes none: the adaptive
// mode's token loop, which sleeps (1 - tokens) / rate truncated to whole
// nanoseconds, would then spin forever at one instant with a deficit of a
// few nanotokens.
const minSDKSleep = time.Microsecond

// callKey is the context key of a logical call's index in the workload.
type callKey struct{}

// sdkGrid is the grid the SDK's sleeps end on in a simulation.
const sdkGrid = 10 * time.Microsecond

// sdkWake returns how long a sleep of d started at now lasts: d, rounded
// up to the next point of a 10 microsecond grid, plus a few nanoseconds
// that differ from call to call. The SDK's adaptive mode computes when its
// client-side bucket will next have a token, and the callers waiting for
// it compute the same instant up to rounding; waking them on the grid, a
// nanosecond apart in the order of their calls, makes a run in virtual
// time independent of the scheduler.
func sdkWake(ctx context.Context, now time.Time, d time.Duration) time.Duration {
	i, ok := ctx.Value(callKey{}).(int)
	if !ok {
		return d
	}
	end := now.Add(d)
	grid := end.Truncate(sdkGrid)
	if grid.Before(end) {
		grid = grid.Add(sdkGrid)
	}
	return grid.Sub(now) + time.Duration(i%10_000)*time.Nanosecond
}

// UseSDKClock makes the AWS SDK read the time from c and sleep on it (at
// least a microsecond), and draw its jitter from a stream seeded with seed,
// for the whole process, until restore is called.
// Every run of the SDK strategies needs it, with SystemClock inside a
// synctest bubble: call it before creating the runs (the adaptive mode reads
// the time when it is made) and run no SDK code that expects the real clock
// meanwhile.
func UseSDKClock(c Clock, seed uint64) (restore func()) {
	sdkClockMu.Lock()
	defer sdkClockMu.Unlock()
	now, sleep, rnd := sdkNowTime, sdkSleepWithContext, sdkRandReader
	sdkRandReader = &seededReader{r: rand.NewPCG(seed, 0x5eed)}
	sdkNowTime = c.Now
	sdkSleepWithContext = func(ctx context.Context, d time.Duration) error {
		return c.Sleep(ctx, sdkWake(ctx, c.Now(), max(d, minSDKSleep)))
	}
	return func() {
		sdkClockMu.Lock()
		defer sdkClockMu.Unlock()
		sdkNowTime, sdkSleepWithContext, sdkRandReader = now, sleep, rnd
	}
}
