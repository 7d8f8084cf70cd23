package resilience

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// noNumberRates is the memory store whose buckets answer v as the rate
// a throttle or a success left them at: a Store of the user's that
// answers garbage.
type noNumberRates struct {
	state.Store
	v float64
}

func (s noNumberRates) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return noNumberRate{s.Store.Bucket(key, spec, now), s.v}
}

type noNumberRate struct {
	state.Bucket
	v float64
}

func (b noNumberRate) Throttle(now, pause time.Duration) (float64, bool) {
	_, decreased := b.Bucket.Throttle(now, pause)
	return b.v, decreased
}

func (b noNumberRate) Success(now time.Duration) (float64, bool) {
	_, increased := b.Bucket.Success(now)
	return b.v, increased
}

// A rate a Store answered that is no number (NaN, +Inf, -Inf) is
// counted as the scope's rate, and the counters still have a JSON form,
// alone and in a Summary: the rate is null there, which no rate is, and
// reads back as NaN.
func TestCountersOfARateThatIsNoNumberHaveAJSONForm(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			g := newGov(t, Config{}, WithStateStore(noNumberRates{MemoryStore(), v}))
			err := Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttle() }, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
			if err == nil {
				t.Fatal("a throttled call with one attempt succeeded")
			}
			_, scopes := g.Lifetime(ec2Vpcs.ServiceScope())
			b, err := json.Marshal(scopes[0])
			if err != nil {
				t.Fatalf("the counters of a rate of %v: %v", v, err)
			}
			if !strings.Contains(string(b), `"rate_rps":null`) || !strings.Contains(string(b), `"min_rate_rps":null`) {
				t.Errorf("the counters of a rate of %v are %s: want the rates null", v, b)
			}
			var c Counters
			if err := json.Unmarshal(b, &c); err != nil || !math.IsNaN(c.Rate) || !math.IsNaN(c.MinRate) || c.Throttled != 1 {
				t.Errorf("%s read back as %+v, %v; want the rates NaN, the throttle counted", b, c, err)
			}
			if b, err := json.Marshal(g.Summary(nil)); err != nil || !strings.Contains(string(b), `"rate_rps":null`) {
				t.Errorf("the summary of a rate of %v: %s, %v; want the scope's rate null", v, b, err)
			}
		})
	}
}
