package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// oddBalance is the memory store whose buckets' snapshots answer the
// rate, balance and pause given: a Store of the user's, whose numbers
// may be far past what the governor's own buckets hold.
type oddBalance struct {
	state.Store
	rate, tokens float64
	paused       time.Duration
}

func (s oddBalance) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return oddBalanceBucket{s.Store.Bucket(key, spec, now), s}
}

type oddBalanceBucket struct {
	state.Bucket
	s oddBalance
}

func (b oddBalanceBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	snap := b.Bucket.Snapshot(now)
	snap.Rate, snap.Tokens, snap.Paused = b.s.rate, b.s.tokens, b.s.paused
	return snap
}

// A scope whose Store's bucket says a token is further away than a
// Duration holds (a balance far below zero at a tiny rate, -Inf, or a
// long pause and a queue after it, or -Inf at a rate of +Inf, a wait
// that is no number) is one whose calls wait, as Delay and
// a Survey's Look say: the longest wait a Duration holds, ErrNoToken.
// The wait, converted from a float64 past a Duration's range or added
// past it, wrapped around to a negative one, and Delay said the scope
// could go at once.
func TestDelayOfATokenFurtherThanADurationHoldsIsTheLongestWait(t *testing.T) {
	for _, c := range []oddBalance{
		{rate: 1e-300, tokens: -1},
		{rate: 10, tokens: math.Inf(-1)},
		{rate: 10, tokens: -1e300},
		{rate: 10, tokens: -1, paused: math.MaxInt64 - time.Millisecond},
		{rate: math.Inf(1), tokens: math.Inf(-1)},
	} {
		t.Run(fmt.Sprintf("rate=%v,tokens=%v,paused=%v", c.rate, c.tokens, c.paused), func(t *testing.T) {
			c.Store = MemoryStore()
			g := newGov(t, Config{}, WithStateStore(c))
			if err := Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g)); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal(err)
			}
			w, err := g.Delay(ec2Vpcs)
			if w != math.MaxInt64 || !errors.Is(err, ErrNoToken) {
				t.Errorf("Delay = %v, %v; want the longest wait a Duration holds, ErrNoToken", w, err)
			}
			if st := g.Survey().Look(ec2Vpcs); st.Wait != w || st.Why != err {
				t.Errorf("Look = %v, %v; want Delay's %v, %v", st.Wait, st.Why, w, err)
			}
		})
	}
}
