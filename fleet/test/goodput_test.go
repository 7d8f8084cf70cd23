package test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The goodput controller in fleet mode counts the successes of the whole
// fleet, per slot, in the bucket's Redis state: a throttle moves the shared
// rate to bucket.GoodputShare of what the fleet was served (never above
// bucket.GoodputCap of the rate), and it climbs by bucket.GoodputStep of
// the ceiling.

var goodputCfg = resilience.Config{AWS: resilience.ProviderConfig{
	Controller: "goodput",
	Services:   map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 100}},
}}

func TestGoodputIsMeasuredAcrossTheFleet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be, prefix, goodputCfg)
		b := newProcess(t, be, prefix, goodputCfg)
		for _, p := range []*process{a, b} {
			for range 20 {
				if err := p.do(t, vpcs, ok); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(3 * bucket.GoodputSlot) // B's counts reach Redis within a slot
		a.do(t, vpcs, throttl, once)
		// 40 successes within the first second (the controller divides by
		// at least a second).
		want := math.Min(bucket.GoodputCap*100, bucket.GoodputShare*40)
		if r := b.gov.Inspect(vpcs).Leaf.Rate; math.Abs(r-want) > 1e-9 {
			t.Fatalf("the fleet's rate %v after the throttle, want %v (%v of the fleet's 40 successes; one process's 20 give %v)",
				r, want, bucket.GoodputShare, bucket.GoodputShare*20)
		}
	})
}

// With nothing served, a throttle multiplies the rate by
// bucket.DecreaseFactor; the rate then climbs by bucket.GoodputStep of the
// ceiling after bucket.IncreaseInterval without a throttle.
func TestSharedGoodputRateClimbsByItsStep(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{})
		b := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 100, Burst: 100, Floor: 1, Adaptive: true, Goodput: true}, 0)
		if r, _ := b.Throttle(0, 0); r != 100*bucket.DecreaseFactor {
			t.Fatalf("rate %v after a throttle with nothing served, want %v", r, 100*bucket.DecreaseFactor)
		}
		key := prefix + ":{" + vpcsKey + "}:bucket"
		if err := p.rdb.HSet(context.Background(), key, "lthr", 0, "linc", 0).Err(); err != nil {
			t.Fatal(err)
		}
		want := 100*bucket.DecreaseFactor + bucket.GoodputStep*100
		if r, up := b.Success(3 * time.Second); !up || math.Abs(r-want) > 1e-9 {
			t.Fatalf("rate %v (increased %v) after a quiet interval, want %v", r, up, want)
		}
	})
}
