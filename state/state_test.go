package state

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
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

// ParseScope reads back every scope's Key, odd parts included; a Scope
// keys a JSON map by its Key and encodes as a value by its parts.
func TestScopeKeyRoundTrip(t *testing.T) {
	for _, s := range []Scope{
		{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"},
		{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"},
		{Provider: "gcp", Account: "a/b", Region: "c"},
		{Provider: "gcp", Account: "a", Region: "b/c"},
		{Provider: "x", Account: "100%*/", Operation: "op"},
		{Provider: "github"},
	} {
		got, err := ParseScope(s.Key())
		if err != nil || got != s {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", s.Key(), got, err, s)
		}
		if s.ServiceScope().Operation != "" || s.ServiceScope().Service != s.Service {
			t.Errorf("ServiceScope of %v", s)
		}
	}
	for _, bad := range []string{"", "aws", "aws/a/b", "*/a/b/c", "aws/a%2/b/c", "aws/a%41/b/c", "aws/a/b/c/d/e"} {
		if _, err := ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) accepted", bad)
		}
	}
	gcp := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"}
	b, err := json.Marshal(map[Scope]int{gcp: 1})
	if err != nil || string(b) != `{"gcp/projects%2Fp1/*/cloudasset":1}` {
		t.Fatalf("map key: %s, %v", b, err)
	}
	var back map[Scope]int
	if err := json.Unmarshal(b, &back); err != nil || back[gcp] != 1 {
		t.Fatalf("map back: %v, %v", back, err)
	}
	v, _ := json.Marshal(gcp)
	if string(v) != `{"provider":"gcp","account":"projects/p1","service":"cloudasset"}` {
		t.Fatalf("value: %s", v)
	}
	var sv Scope
	if err := json.Unmarshal(v, &sv); err != nil || sv != gcp {
		t.Fatalf("value back: %v, %v", sv, err)
	}
}

// A bucket's balance below zero holds its queued callers, in whole tokens.
func TestBucketSnapshotQueued(t *testing.T) {
	for _, c := range []struct {
		tokens float64
		want   int
	}{{-2.5, 3}, {-3.0000000001, 3}, {-1, 1}, {0, 0}, {0.5, 0}} {
		if got := (BucketSnapshot{Tokens: c.tokens}).Queued(); got != c.want {
			t.Errorf("balance %v: %d queued, want %d", c.tokens, got, c.want)
		}
	}
}

// Queued counts callers, never fewer than none: a balance too far below
// zero for an int (a corrupt or hand-made snapshot, -Inf) saturates, and a
// balance that is no number (NaN) shows nobody queued.
func TestBucketSnapshotQueuedSaturates(t *testing.T) {
	for _, c := range []struct {
		tokens float64
		want   int
	}{{-1e300, math.MaxInt}, {math.Inf(-1), math.MaxInt}, {-0x1p63, math.MaxInt}, {math.NaN(), 0}, {math.Inf(1), 0}} {
		if got := (BucketSnapshot{Tokens: c.tokens}).Queued(); got != c.want {
			t.Errorf("balance %v: %d queued, want %d", c.tokens, got, c.want)
		}
	}
}

// A JSON null leaves a Scope as it is, as encoding/json leaves any value
// it reads null into (the convention its Unmarshaler documentation asks
// for), as a field and as the whole document.
func TestScopeUnmarshalNullIsANoOp(t *testing.T) {
	set := Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2"}
	v := struct {
		Scope Scope `json:"scope"`
	}{Scope: set}
	if err := json.Unmarshal([]byte(`{"scope":null}`), &v); err != nil || v.Scope != set {
		t.Errorf(`{"scope":null} into a set field: %+v, %v; want it left as %+v`, v.Scope, err, set)
	}
	s := set
	if err := json.Unmarshal([]byte(`null`), &s); err != nil || s != set {
		t.Errorf("null into a set Scope: %+v, %v; want it left as %+v", s, err, set)
	}
}

// A BreakerState that is none of the three (a hand-made value, or one a
// Store decoded from a corrupt record) says what it is, as observe.Kind
// does, in String and in JSON: written "closed", it would pass for a
// breaker that lets calls through.
func TestAnUnknownBreakerStateSaysWhatItIs(t *testing.T) {
	for _, s := range []BreakerState{-1, 3, 7} {
		want := fmt.Sprintf("state.BreakerState(%d)", int32(s))
		if got := s.String(); got != want {
			t.Errorf("BreakerState(%d).String() = %q, want %q", int32(s), got, want)
		}
		if b, err := json.Marshal(BreakerSnapshot{State: s}); err != nil || !strings.Contains(string(b), `"state":"`+want+`"`) {
			t.Errorf("BreakerSnapshot{State: %d} marshals to %s, %v; want its state %q", int32(s), b, err, want)
		}
	}
}
