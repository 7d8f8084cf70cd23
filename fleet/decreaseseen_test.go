//go:build go1.25

package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// Local limits made from the fleet's rate take a throttle within
// bucket.DecreaseInterval of the fleet's last decrease as of that
// congestion event only when the process saw the rate go down within that
// time: a rate lower than the ceiling that Redis reports first, or after
// the process heard none for longer, may have been set by an event long
// past, and a throttle on the local limits is a new event, which halves
// their rate. (Both were taken for a decrease made as Redis reported
// them: the local limits did not slow on a new event, and their
// write-back told the fleet the rate before it, undoing the decrease
// Redis made for it.) In virtual time.
func TestALocalBucketTakesOnlyADecreaseItSawAsOfTheSameEvent(t *testing.T) {
	for _, c := range []struct {
		name   string
		before bool          // Redis reported the ceiling before the lower rate
		gap    time.Duration // between the two reports
		want   float64       // the local rate after a throttle at once
	}{
		{"first report", false, 0, 25},
		{"after a long silence", true, 10 * time.Second, 25},
		{"seen going down", true, 10 * time.Millisecond, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := answeredStore(t, time.Second, &syncBuffer{})
				defer s.Close()
				b := s.Bucket("aws/1/us-east-1/ec2/DescribeVpcs", state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}, 0).(*sharedBucket)
				if c.before {
					b.setRate("100")
				}
				time.Sleep(c.gap)
				b.setRate("50")
				l := b.fromRate(0, 1)
				if got, _ := l.Throttle(0, 0); got != c.want {
					t.Errorf("a throttle on local limits made from 50 rps: %v rps, want %v", got, c.want)
				}
			})
		})
	}
}
