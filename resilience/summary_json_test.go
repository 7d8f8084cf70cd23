package resilience

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A Summary reads back in Go from the JSON it writes, as a program that
// stores a run's summary and reads it later expects: its totals and
// each scope's counters with their durations (wait_seconds and the
// others, written in seconds), its slowed buckets of every level (a
// leaf's under its scope's key, an account's and a provider's under
// theirs, all in slowed_buckets) and its breakers.
func TestASummaryReadsBackFromItsJSON(t *testing.T) {
	ec2 := Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2"}
	gcp := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
	c := Counters{Scope: ec2, Calls: 9, Throttled: 2, Retries: 2, Waits: 3, Pauses: 1, Wait: 5 * time.Second, MaxWait: 2500 * time.Millisecond,
		WaitElapsed: 3 * time.Second, Backoff: 1200 * time.Millisecond, Paused: 60 * time.Second, MaxPause: 60 * time.Second, LastError: "Throttling"}
	want := Summary{
		Totals:          Counters{Calls: 9, Throttled: 2, Retries: 2, Wait: 5 * time.Second, MaxWait: 2500 * time.Millisecond, WaitElapsed: 3 * time.Second},
		Messages:        []string{"aws/123456789012/us-east-1/ec2: throttled 2 times"},
		Skipped:         map[Scope]string{gcp: "down"},
		Scopes:          map[Scope]Counters{ec2: c},
		SlowedBuckets:   map[Scope]state.BucketSnapshot{ec2: {Rate: 1, Ceiling: 20, Tokens: -3, Paused: 1500 * time.Millisecond}, gcp: {Rate: 0.5, Ceiling: 1.5}},
		Breakers:        map[Scope]state.BreakerSnapshot{gcp: {State: state.Open, Cooldown: 30 * time.Second, Wait: 12 * time.Second}},
		SlowedAccounts:  map[Scope]state.BucketSnapshot{{Provider: "azure", Account: "sub-1"}: {Rate: 2, Ceiling: 4, Paused: time.Second}, {Provider: "gcp", Account: "projects/p1"}: {Rate: 1, Ceiling: 2}},
		SlowedProviders: map[string]state.BucketSnapshot{"azure": {Rate: 10, Ceiling: 20}, "a/b": {Rate: 1, Ceiling: 2}},
	}
	for _, s := range []Summary{want, {}, {Totals: Counters{Calls: 1}, Messages: []string{}, Skipped: map[Scope]string{}, Scopes: map[Scope]Counters{},
		SlowedBuckets: map[Scope]state.BucketSnapshot{}, Breakers: map[Scope]state.BreakerSnapshot{},
		SlowedAccounts: map[Scope]state.BucketSnapshot{}, SlowedProviders: map[string]state.BucketSnapshot{}}} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got Summary
		if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, s) {
			t.Errorf("%s read back as\n %#v, %v\nwant\n %#v", b, got, err, s)
		}
	}
	// A key of slowed_buckets that is none of the three forms is a
	// *state.ScopeKeyError.
	var got Summary
	err := json.Unmarshal([]byte(`{"slowed_buckets": {"aws/1/2": {"rate_rps": 1}}}`), &got)
	var ke *state.ScopeKeyError
	if !errors.As(err, &ke) || ke.Key != "aws/1/2" {
		t.Errorf("a slowed bucket's key of three parts: %T %v; want a *state.ScopeKeyError of it", err, err)
	}
}
