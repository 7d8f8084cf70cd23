//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sendLog records when the requests of a test were sent, from its start.
type sendLog struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func (l *sendLog) send(context.Context) error {
	l.mu.Lock()
	l.at = append(l.at, time.Since(l.start))
	l.mu.Unlock()
	return nil
}

// overBound reports the first time at which more requests had gone since
// from (a pause's end) than a bucket of rate and capacity allows: rate x
// the time since from + capacity.
func (l *sendLog) overBound(from time.Duration, rate, capacity float64) (to time.Duration, n int, over bool) {
	at := slices.Clone(l.at)
	slices.Sort(at)
	for _, a := range at {
		if a < from {
			continue
		}
		if n++; float64(n) > rate*(a-from).Seconds()+capacity+1e-9 {
			return a, n, true
		}
	}
	return 0, 0, false
}

// Calls waiting for the scope's concurrency slot took their tokens before
// a pause began (the slot's holder paused the scope for 60 s); cancelled
// during the pause, they give back no leaf token: the pause counted those
// as spent, and given back they were tokens stored at the pause's end, or
// a queue of calls after it moved sooner, so that more calls went from
// the pause's end than the bucket allows (a rate of 1 rps, a burst of 1:
// 3 calls from its end to 1 s after it, 5 by 2 s after it). Calls queued
// for tokens after the pause and cancelled give theirs back, and the
// calls after them take the times they leave.
func TestCallsCancelledDuringAPauseLeaveNoBurstAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		l := &sendLog{start: time.Now()}
		var wg sync.WaitGroup
		// The slot's holder: its token at 0, the scope paused from 3.5 s
		// to 63.5 s, the slot held until 30 s.
		holdSlotPausing(t, g, &wg, 30*time.Second)
		synctest.Wait()
		do := func(ctx context.Context) {
			wg.Go(func() { Do(ctx, ec2Vpcs, l.send, WithGovernor(g), once) })
			synctest.Wait() // its tokens taken, in this order
		}
		// Three calls whose tokens come at 1, 2 and 3 s, waiting for the
		// slot until they are cancelled at 20 s.
		slotCtx, cancelSlot := context.WithCancel(context.Background())
		for range 3 {
			do(slotCtx)
		}
		// Two calls queued for tokens after the pause, at 10 s, and two
		// more cancelled at 20 s.
		time.Sleep(10 * time.Second)
		do(context.Background())
		do(context.Background())
		queuedCtx, cancelQueued := context.WithCancel(context.Background())
		do(queuedCtx)
		do(queuedCtx)
		time.Sleep(10 * time.Second)
		cancelSlot()
		cancelQueued()
		// Three calls at 40 s.
		time.Sleep(20 * time.Second)
		for range 3 {
			do(context.Background())
		}
		wg.Wait()
		if len(l.at) != 5 {
			t.Fatalf("%d calls sent, want 5: %v", len(l.at), l.at)
		}
		end := 63500 * time.Millisecond
		if to, n, over := l.overBound(end, 1, 1); over {
			t.Fatalf("%d calls went in the %v from the pause's end at %v (1 rps, burst 1): sent at %v", n, to-end, end, l.at)
		}
	})
}

// So do calls waiting for their leaf's token whose account token was due
// at once, before their account was paused (PauseAccount, for 60 s from
// 3.5 s): cancelled during the pause, they give back no account token.
// Before, the two given back moved the calls queued at the account after
// the pause sooner, and the calls after those went beside them: 4 calls
// of the account (1 rps, burst 1) by 2 s after the pause's end.
func TestCallsCancelledDuringAnAccountPauseLeaveNoBurstAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: new(1.0), AccountBurst: 1,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 100, Burst: 100}, "ec2.DescribeVpcs": {MaxRPS: 0.1, MinRPS: 0.1, Burst: 1}}}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		l := &sendLog{start: time.Now()}
		var wg sync.WaitGroup
		do := func(ctx context.Context, s Scope, fn func(context.Context) error) {
			wg.Go(func() { Do(ctx, s, fn, WithGovernor(g), once) })
			synctest.Wait() // its tokens taken, in this order
		}
		nop := func(context.Context) error { return nil }
		// DescribeVpcs's token taken at 0: the next ones at 10 and 20 s,
		// for two calls whose account tokens come at once, at 2 and 3 s.
		do(context.Background(), ec2Vpcs, nop)
		waiting, cancel := context.WithCancel(context.Background())
		time.Sleep(2 * time.Second)
		do(waiting, ec2Vpcs, nop)
		time.Sleep(time.Second)
		do(waiting, ec2Vpcs, nop)
		// The account paused from 3.5 s to 63.5 s; two calls queued at it
		// at 4 s; the waiting calls cancelled at 5 s; two calls at 6 s.
		time.Sleep(500 * time.Millisecond)
		gd, _ := g.Begin(context.Background(), ec2Subnets)
		gd.PauseAccount(60 * time.Second)
		gd.End(nil)
		time.Sleep(500 * time.Millisecond)
		do(context.Background(), ec2Subnets, l.send)
		do(context.Background(), ec2Subnets, l.send)
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		time.Sleep(time.Second)
		do(context.Background(), ec2Subnets, l.send)
		do(context.Background(), ec2Subnets, l.send)
		wg.Wait()
		if len(l.at) != 4 {
			t.Fatalf("%d calls sent, want 4: %v", len(l.at), l.at)
		}
		end := 63500 * time.Millisecond
		if to, n, over := l.overBound(end, 1, 1); over {
			t.Fatalf("%d calls of the account went in the %v from the pause's end at %v (1 rps, burst 1): sent at %v", n, to-end, end, l.at)
		}
	})
}

// A call waiting for its account's token, its leaf token due at once, is
// refused when a throttle with a Retry-After pauses its scope and opens
// its breaker: it gives back its account token, not the leaf's, which the
// pause counted as spent. Before, the leaf token given back was stored
// for the pause's end, where a pause leaves none (the leaf read 1 token
// for then), so that the calls waiting out the pause would leave it at
// once rather than at the leaf's rate.
func TestACallRefusedByABreakerThePauseOpenedLeavesNoTokenAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: new(1.0), AccountBurst: 1, BreakerThreshold: 1,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 100, Burst: 100}}}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		go Do(context.Background(), ec2Vpcs, func(context.Context) error {
			time.Sleep(500 * time.Millisecond)
			return throttleAfter(60 * time.Second)
		}, WithGovernor(g), once)
		synctest.Wait()
		err := Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g), once)
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("the call waiting for its account's token when its breaker opened: %v, want a *CircuitOpenError", err)
		}
		if s := g.Inspect(ec2Vpcs); s.Leaf.Paused <= 0 || s.Leaf.Tokens != 0 {
			t.Fatalf("the leaf, paused for %v: %v tokens at the pause's end, want 0", s.Leaf.Paused, s.Leaf.Tokens)
		}
	})
}

// A call cancelled while queued for its token gives its place up: the
// calls queued after it move a token earlier and follow it, and no call
// goes beside another; in a leaf's queue, an account's (the
// subscription's bucket, its leaves far above it) and the provider's
// (global_max_rps), each one token every 5 s, burst 1. B, queued for
// 5 s, is cancelled at 1 s, and C, queued for 10 s, moves to 5 s; D comes
// at 2 s and goes at 10 s. The queue's last call, cancelled, gives its
// token back: E, cancelled at 3 s, leaves its time to F. Once, B's token
// went back to the end of the queue while C kept its time, and D went at
// 10 s with C, two calls at once through a bucket of burst 1; then B's
// token stayed spent, and D went at 15 s: callers that gave up their
// places pushed the queue later each time, for good under a load above
// the rate. In the account's queue, C's place moved but nothing woke C,
// which went at 10 s with D.
func TestACallCancelledInTheQueueLetsNoCallGoBesideAnother(t *testing.T) {
	fifth := 0.2
	azure := Scope{Provider: "azure", Account: "sub-1", Service: "compute"}
	for _, c := range []struct {
		level  string
		cfg    Config
		scopes [6]Scope // of A to F
	}{
		{"leaf", Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 0.2, MinRPS: 0.2, Burst: 1}}}},
			[6]Scope{ec2Vpcs, ec2Vpcs, ec2Vpcs, ec2Vpcs, ec2Vpcs, ec2Vpcs}},
		{"account", Config{Azure: ProviderConfig{MaxRPS: 1000, Burst: 1000, AccountMaxRPS: &fifth, AccountBurst: 1}},
			[6]Scope{azure, azure, azure, azure, azure, azure}},
		{"provider", Config{AWS: ProviderConfig{MaxRPS: 1000, Burst: 1000, GlobalMaxRPS: &fifth, GlobalBurst: 1}},
			[6]Scope{ec2Vpcs, iamUsers, ec2Subnets, iamUsers, ec2Vpcs, ec2Subnets}},
	} {
		t.Run(c.level, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, c.cfg)
				once := WithPolicy(RetryPolicy{MaxAttempts: 1})
				l := &sendLog{start: time.Now()}
				var wg sync.WaitGroup
				next := 0
				do := func(ctx context.Context) {
					sc := c.scopes[next]
					next++
					wg.Go(func() { Do(ctx, sc, l.send, WithGovernor(g), once) })
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
				e, cancelE := context.WithCancel(context.Background())
				do(e) // E, the queue's last
				time.Sleep(time.Second)
				cancelE()
				synctest.Wait()
				do(context.Background()) // F
				wg.Wait()
				want := []time.Duration{0, 5 * time.Second, 10 * time.Second, 15 * time.Second}
				if !slices.Equal(l.at, want) {
					t.Fatalf("A, C, D and F (B and E cancelled) sent at %v, want at %v", l.at, want)
				}
			})
		})
	}
}

// Calls waiting for the scope's concurrency slot took their tokens before
// a pause began; the slot comes back as the pause ends (its holder paused
// the scope for 60 s, from 3.5 s, and held the slot that long). They wait
// for tokens again, which the bucket gives at its rate from the pause's
// end. Before, only a pause still in force when the slot came held them:
// the three went at once with the tokens the pause had counted as spent,
// as the pause ended (a rate of 1 rps, a burst of 1).
func TestCallsGettingTheirSlotAsAPauseEndsGoAtTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		l := &sendLog{start: time.Now()}
		var wg sync.WaitGroup
		holdSlotPausing(t, g, &wg, 63500*time.Millisecond)
		synctest.Wait()
		for range 3 { // their tokens at 1, 2 and 3 s
			wg.Go(func() { Do(context.Background(), ec2Vpcs, l.send, WithGovernor(g), once) })
		}
		wg.Wait()
		end := 63500 * time.Millisecond
		if len(l.at) != 3 {
			t.Fatalf("%d calls sent, want 3: %v", len(l.at), l.at)
		}
		if to, n, over := l.overBound(end, 1, 1); over {
			t.Fatalf("%d calls went in the %v from the pause's end at %v (1 rps, burst 1): sent at %v", n, to-end, end, l.at)
		}
	})
}

// holdSlotPausing starts, in wg, a call of ec2Vpcs that takes the account's
// slot at once, pauses the scope for 60 s from 3.5 s, and holds the slot
// until until, from now.
func holdSlotPausing(t *testing.T, g *Governor, wg *sync.WaitGroup, until time.Duration) {
	wg.Go(func() {
		gd, _ := g.Begin(context.Background(), ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
		if err := gd.Enter(context.Background()); err != nil {
			t.Error(err)
		}
		time.Sleep(3500 * time.Millisecond)
		gd.Pause(60 * time.Second)
		time.Sleep(until - 3500*time.Millisecond)
		gd.End(nil)
	})
}

// Callers that give up their places in a queue, the first queued first
// (contexts cancelled as their clients give up), leave it as if they had
// never queued: the leaf gives a token a second, ten callers queue for
// 1 s to 10 s, the first nine are cancelled, and the tenth moves to 1 s; a
// call that comes then waits for the second after it. Before, each token
// given up with a call queued after it stayed spent: the tenth went at
// 10 s, the next at 11 s, and under a load above the rate, with callers
// giving up, the queue grew without end.
func TestCallersGivingUpTheirPlacesLeaveTheQueueAsItWas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, MinRPS: 1, Burst: 1}}}})
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		l := &sendLog{start: time.Now()}
		var wg sync.WaitGroup
		Do(context.Background(), ec2Vpcs, l.send, WithGovernor(g), once) // the stored token
		var cancels []context.CancelFunc
		for i := range 10 {
			ctx := context.Background()
			if i < 9 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancels = append(cancels, cancel)
			}
			wg.Go(func() { Do(ctx, ec2Vpcs, l.send, WithGovernor(g), once) })
			synctest.Wait() // queued, in this order
		}
		time.Sleep(500 * time.Millisecond)
		for _, cancel := range cancels {
			cancel()
			synctest.Wait()
		}
		if d, _ := g.Delay(ec2Vpcs); d != 1500*time.Millisecond {
			t.Errorf("at 0.5 s, after nine of ten queued callers gave up their places, the next call would wait %v, want 1.5s (the tenth goes at 1 s)", d)
		}
		Do(context.Background(), ec2Vpcs, l.send, WithGovernor(g), once)
		wg.Wait()
		if want := []time.Duration{0, time.Second, 2 * time.Second}; !slices.Equal(l.at, want) {
			t.Errorf("the stored token's call, the tenth and the next sent at %v, want %v", l.at, want)
		}
	})
}
