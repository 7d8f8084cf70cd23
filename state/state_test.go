package state

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSnapshotsMarshalSecondsAndNames(t *testing.T) {
	b, _ := json.Marshal(BreakerSnapshot{State: HalfOpen, Failures: 2, Cooldown: 2 * time.Minute, Wait: 1500 * time.Millisecond})
	if string(b) != `{"state":"half_open","failures":2,"cooldown_seconds":120,"retry_in_seconds":1.5}` {
		t.Fatalf("breaker %s", b)
	}
	b, _ = json.Marshal(BucketSnapshot{Rate: 5, Ceiling: 20, Tokens: -1, Paused: 3 * time.Second})
	if string(b) != `{"rate_rps":5,"ceiling_rps":20,"tokens":-1,"paused_seconds":3}` {
		t.Fatalf("bucket %s", b)
	}
	if Closed.String() != "closed" || Open.String() != "open" || HalfOpen != 1 || Open != 2 {
		t.Fatal("breaker states: closed 0, half_open 1, open 2")
	}
}

func TestCapacity(t *testing.T) {
	for _, c := range []struct {
		s    BucketSpec
		want float64
	}{{BucketSpec{Rate: 3}, 6}, {BucketSpec{Rate: 0.2}, 1}, {BucketSpec{Rate: 20, Burst: 100}, 100}} {
		if got := c.s.Capacity(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.s, got, c.want)
		}
	}
}
