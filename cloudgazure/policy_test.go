package cloudgazure

import (
	"math"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// longestSleep bounds azcore's backoff after its attempt try, (2^try − 1)
// × RetryDelay × a jitter below 1.3, at most MaxRetryDelay, with azcore's
// defaults for zero and negative options; it is the bound, not the mean
// (a 10 s delay's first sleep may last up to 13 s).
func TestLongestSleepBoundsAzcoresBackoff(t *testing.T) {
	for _, tc := range []struct {
		retry policy.RetryOptions
		try   int32
		want  time.Duration
	}{
		{policy.RetryOptions{}, 1, 1040*time.Millisecond + 1}, // 0.8 s × 1.3
		{policy.RetryOptions{}, 3, 7280*time.Millisecond + 1}, // 7 × 0.8 s × 1.3
		{policy.RetryOptions{}, 8, 60 * time.Second},          // capped at the default 60 s
		{policy.RetryOptions{RetryDelay: 10 * time.Second, MaxRetryDelay: time.Minute}, 1, 13*time.Second + 1},
		{policy.RetryOptions{RetryDelay: 20 * time.Second, MaxRetryDelay: 20 * time.Second}, 1, 20 * time.Second},
		{policy.RetryOptions{RetryDelay: -1}, 4, 1},                 // no delay
		{policy.RetryOptions{MaxRetryDelay: -1}, 70, math.MaxInt64}, // no cap
	} {
		if got := newShared(config{}, &tc.retry).longestSleep(tc.try); got != tc.want {
			t.Errorf("%+v, try %d: %v, want %v", tc.retry, tc.try, got, tc.want)
		}
	}
}
