package sim

import (
	"testing"
	"time"
)

// A report's seconds keep three significant figures however they round:
// a time that rounds up across 10 s or 100 s is printed as the larger
// ones are ("10.0s", "100s"), not with a figure more ("10.00s", "100.0s")
// than its column's other rows.
func TestSecsRoundsAcrossItsSteps(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{{9.994, "9.99s"}, {9.996, "10.0s"}, {99.94, "99.9s"}, {99.96, "100s"}, {0.05, "0.05s"}, {110, "110s"}} {
		if got := secs(time.Duration(c.s * float64(time.Second))); got != c.want {
			t.Errorf("secs(%vs) = %q, want %q", c.s, got, c.want)
		}
	}
}
