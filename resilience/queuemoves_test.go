//go:build go1.26

package resilience

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A call queued for the account's token (the subscription's bucket, one
// token every 5 s, burst 1, its leaves far above it) follows that queue
// when it moves: B, queued for 5 s, is cancelled at 1 s, and C, queued
// for 10 s, moves to 5 s, as a call queued in a leaf does; D comes at 2 s
// and goes at 10 s. Before, C's place moved but C slept on until 10 s,
// where D, given 10 s by the moved queue, went with it: two calls at once
// through a bucket of burst 1, and the 5 s left unused.
func TestACallQueuedForTheAccountsTokenFollowsTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fifth := 0.2
		azure := Scope{Provider: "azure", Account: "sub-1", Service: "compute"}
		g := newGov(t, Config{Azure: ProviderConfig{MaxRPS: 1000, Burst: 1000, AccountMaxRPS: &fifth, AccountBurst: 1}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		l := &sendLog{start: time.Now()}
		var wg sync.WaitGroup
		do := func(ctx context.Context) {
			wg.Go(func() { Do(ctx, azure, l.send, WithGovernor(g), once) })
			synctest.Wait() // its token taken, in this order
		}
		do(context.Background()) // A, at once
		b, cancelB := context.WithCancel(context.Background())
		do(b)                    // B, for 5 s
		do(context.Background()) // C, for 10 s
		time.Sleep(time.Second)
		cancelB()
		time.Sleep(time.Second)
		do(context.Background()) // D
		wg.Wait()
		if want := []time.Duration{0, 5 * time.Second, 10 * time.Second}; !slices.Equal(l.at, want) {
			t.Fatalf("A, C and D (B cancelled) sent at %v, want at %v", l.at, want)
		}
	})
}

// A call queued for the provider's token (global_max_rps: one token every
// 5 s, burst 1, the leaves far above it) gives its place up when it is
// cancelled, as one queued in a leaf or an account does: B, queued for
// 5 s, is cancelled at 1 s, C, queued for 10 s, moves to 5 s, and D, who
// comes at 2 s, goes at 10 s. Before, B's token stayed spent: C went at
// 10 s and D at 15 s, and callers giving up their places pushed the
// provider's queue later each time.
func TestACallCancelledInTheProvidersQueueGivesItsPlaceUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fifth := 0.2
		g := newGov(t, Config{AWS: ProviderConfig{MaxRPS: 1000, Burst: 1000, GlobalMaxRPS: &fifth, GlobalBurst: 1}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		l := &sendLog{start: time.Now()}
		var wg sync.WaitGroup
		do := func(ctx context.Context, s Scope) {
			wg.Go(func() { Do(ctx, s, l.send, WithGovernor(g), once) })
			synctest.Wait() // its token taken, in this order
		}
		do(context.Background(), ec2Vpcs) // A, at once
		b, cancelB := context.WithCancel(context.Background())
		do(b, iamUsers)                      // B, for 5 s
		do(context.Background(), ec2Subnets) // C, for 10 s
		time.Sleep(time.Second)
		cancelB()
		time.Sleep(time.Second)
		do(context.Background(), iamUsers) // D
		wg.Wait()
		if want := []time.Duration{0, 5 * time.Second, 10 * time.Second}; !slices.Equal(l.at, want) {
			t.Fatalf("A, C and D (B cancelled) sent at %v, want at %v", l.at, want)
		}
	})
}
