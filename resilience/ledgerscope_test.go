//go:build go1.25

package resilience

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Every line of a ledger names the call's scope once. A refusal's error
// (WouldWaitError, DeadlineExceededError) names its scope itself, as an
// open breaker's does for a skip, which the ledger lists as it is; the
// ledger used to put "<scope>: " before a refusal too, so that a reader
// read "<scope>: no rate token now for <scope>; retry in 1s" beside the
// skip's "circuit open for <scope>: ...". A give-up's answer, which names
// no scope, still comes after "<scope>: ".
func TestLedgerLinesNameTheScopeOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		r := newRun(context.Background())
		// A paused scope: a call whose deadline the pause outlasts is
		// refused (DeadlineExceededError).
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
		n := 0
		Do(ctx, ec2Vpcs, always(&n, nil), WithGovernor(g))
		cancel()
		// A call that may wait less than the pause (WouldWaitError).
		Do(WithMaxWait(r.ctx, time.Second), ec2Vpcs, always(&n, nil), WithGovernor(g))
		// A retry whose Retry-After is longer than the call may wait: a
		// refused retry, with the answer it would have retried.
		Do(WithMaxWait(r.ctx, 5*time.Second), iamUsers, always(&n, throttleAfter(30*time.Second)), WithGovernor(g))
		// A call given up: its answer after "<scope>: ".
		Do(r.ctx, ec2Subnets, always(&n, transientErr()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		reasons := r.ledger.Reasons()
		if len(reasons) != 4 {
			t.Fatalf("reasons %q, want 4", reasons)
		}
		for i, sc := range []Scope{ec2Vpcs, ec2Vpcs, iamUsers, ec2Subnets} {
			if c := strings.Count(reasons[i], sc.String()); c != 1 {
				t.Errorf("reason %q names %s %d times, want once", reasons[i], sc, c)
			}
		}
		if want := ec2Subnets.String() + ": "; !strings.HasPrefix(reasons[3], want) {
			t.Errorf("give-up reason %q, want it to start with %q", reasons[3], want)
		}
	})
}
