//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// farToken is the memory store whose buckets' Reserve answers the wait
// given: a Store of the user's that holds a scope for good may answer one
// as long as a Duration holds.
type farToken struct {
	state.Store
	wait time.Duration
}

func (s farToken) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return farTokenBucket{s.Store.Bucket(key, spec, now), s.wait}
}

type farTokenBucket struct {
	state.Bucket
	wait time.Duration
}

func (b farTokenBucket) Reserve(now time.Duration) time.Duration {
	b.Bucket.Reserve(now)
	return b.wait
}

// A call whose Store's bucket gives its token a wait near a Duration's
// largest is refused at once, its function never called, as one whose
// wait passes its deadline is: the wait added to the time wrapped around
// to a token due long ago, and the call was sent at once, the bucket's
// leaf alone or behind an account's.
func TestATokenAsFarAsADurationHoldsRefusesTheCall(t *testing.T) {
	for _, w := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Second} {
		for _, account := range []bool{false, true} {
			t.Run(fmt.Sprintf("wait=%d,account=%v", w, account), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := Config{}
					if account {
						rps := 100.0
						cfg.AWS.AccountMaxRPS = &rps
					}
					g := newGov(t, cfg, WithStateStore(farToken{MemoryStore(), w}))
					time.Sleep(time.Hour) // the governor's clock past its epoch
					for _, ctx := range []context.Context{context.Background(), WithMaxWait(context.Background(), time.Second)} {
						start := time.Now()
						sent := false
						err := Do(ctx, ec2Vpcs, func(context.Context) error { sent = true; return nil }, WithGovernor(g))
						if sent || err == nil {
							t.Fatalf("a call whose token is %v away was sent (err %v)", w, err)
						}
						var ww *WouldWaitError
						if !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &ww) {
							t.Errorf("the call ended with %v, want its wait refused", err)
						}
						if took := time.Since(start); took != 0 {
							t.Errorf("the call was refused after %v, want at once", took)
						}
					}
				})
			})
		}
	}
}
