package resilience

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestDeadlineExceededErrorMessage(t *testing.T) {
	if got := (&DeadlineExceededError{Scope: iamUsers}).Error(); got != "deadline exceeded for aws/123456789012/*/iam/ListUsers" {
		t.Fatal(got)
	}
	e := &DeadlineExceededError{Scope: iamUsers, Wait: 2500 * time.Millisecond, Err: context.DeadlineExceeded}
	if e.Error() != "deadline exceeded for aws/123456789012/*/iam/ListUsers: a wait of 2.5s would overrun it" || !errors.Is(e, context.DeadlineExceeded) {
		t.Fatal(e.Error())
	}
}

// A governor's option and a call's are different types: WithLogger given
// to Do, or WithPolicy given to NewGovernor, does not compile (it was an
// Option, silently ignored).
func TestGovernorAndCallOptionsAreDistinct(t *testing.T) {
	gov := reflect.TypeFor[GovernorOption]()
	call := reflect.TypeFor[CallOption]()
	if gov.Implements(call) || call.Implements(gov) {
		t.Fatal("an option of one kind is accepted as the other")
	}
	for _, o := range []any{WithClock(nil), WithRandom(nil), WithLogger(nil), WithReclaimAfter(0), WithObserver(nil), WithStateStore(nil)} {
		if _, ok := o.(CallOption); ok {
			t.Errorf("%T is a call option", o)
		}
	}
	for _, o := range []any{WithGovernor(nil), WithPolicy(RetryPolicy{})} {
		if _, ok := o.(GovernorOption); ok {
			t.Errorf("%T is a governor option", o)
		}
	}
}

// A configuration's mistake is a *ConfigError with its key path, found by
// errors.As through the join of every mistake.
func TestConfigErrorIsExported(t *testing.T) {
	_, err := ParseConfig([]byte("aws: {max_rps: -1, burst: fast}"))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Path != "ratelimit.aws.max_rps" && ce.Path != "ratelimit.aws.burst" {
		t.Fatalf("%v: %+v", err, ce)
	}
}
