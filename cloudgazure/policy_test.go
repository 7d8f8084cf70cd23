//go:build go1.25

package cloudgazure

import (
	"context"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// longestSleep bounds azcore's backoff after its attempt try, (2^try − 1)
// × RetryDelay × a jitter below 1.3, at most MaxRetryDelay, with azcore's
// defaults for zero and negative options; it is the bound, not the mean
// (a 10 s delay's first sleep may last up to 13 s). A negative
// RetryDelay, which azcore's documentation calls no delay, is azcore's
// MaxRetryDelay: its calcDelay reads the product 0 as an overflow and
// sleeps the cap (TestAzcoreSleepsTheCapForNoRetryDelay).
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
		{policy.RetryOptions{RetryDelay: -1}, 4, 60 * time.Second}, // azcore's cap (see below)
		{policy.RetryOptions{RetryDelay: -1, MaxRetryDelay: 20 * time.Second}, 1, 20 * time.Second},
		{policy.RetryOptions{MaxRetryDelay: -1}, 70, math.MaxInt64}, // no cap
	} {
		if got := newShared(config{}, &tc.retry).longestSleep(tc.try); got != tc.want {
			t.Errorf("%+v, try %d: %v, want %v", tc.retry, tc.try, got, tc.want)
		}
	}
}

// fails503Once answers 503, then 200.
type fails503Once struct{ n int }

func (f *fails503Once) Do(req *http.Request) (*http.Response, error) {
	f.n++
	status := http.StatusOK
	if f.n == 1 {
		status = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// azcore's own retry policy, with a negative RetryDelay (its
// documentation: no delay), sleeps MaxRetryDelay before its retry, as
// longestSleep says, not no time.
func TestAzcoreSleepsTheCapForNoRetryDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		retry := policy.RetryOptions{RetryDelay: -1, MaxRetryDelay: 20 * time.Second}
		pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{}, &policy.ClientOptions{
			Retry: retry, Transport: &fails503Once{},
		})
		req, err := runtime.NewRequest(context.Background(), http.MethodGet, "https://example.com/x")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := pl.Do(req); err != nil {
			t.Fatal(err)
		}
		slept := time.Since(start)
		if slept != 20*time.Second {
			t.Errorf("azcore slept %v before its retry, want MaxRetryDelay, 20s", slept)
		}
		if got := newShared(config{}, &retry).longestSleep(1); got < slept {
			t.Errorf("longestSleep(1) = %v, below azcore's sleep of %v", got, slept)
		}
	})
}
