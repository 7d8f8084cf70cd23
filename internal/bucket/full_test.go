package bucket

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cloudg/cloudg/state"
)

// Full is the snapshot a new bucket of the spec reads, at any time, for
// every spec a configuration makes: rates and bursts from the absurdly
// small to past a float64's range, adaptive or not.
func TestFullIsANewBucketsSnapshot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := state.BucketSpec{
			Rate:     rapid.OneOf(rapid.Float64Range(1e-9, 1e12), rapid.SampledFrom([]float64{1e308, math.MaxFloat64, 1e9, 2e9, 5e-324})).Draw(t, "rate"),
			Burst:    rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(1, 1e15), rapid.SampledFrom([]float64{1e308, math.MaxFloat64})).Draw(t, "burst"),
			Floor:    rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(1e-6, 10)).Draw(t, "floor"),
			Adaptive: rapid.Bool().Draw(t, "adaptive"),
			Goodput:  rapid.Bool().Draw(t, "goodput"),
		}
		now := time.Duration(rapid.Int64Range(0, 1<<50).Draw(t, "now"))
		if got, want := Full(s), New(s, now).Snapshot(now); got != want {
			t.Fatalf("Full(%+v) = %+v, a new bucket reads %+v", s, got, want)
		}
		if f := Full(s); math.IsInf(f.Tokens, 0) || math.IsNaN(f.Tokens) {
			t.Fatalf("Full(%+v) = %+v: tokens no number JSON writes", s, f)
		}
	})
}
