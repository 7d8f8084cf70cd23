//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
)

// A call waiting for a token when a Reset or Configure retires the buckets
// it waits on waits for the live ones' instead, within the instant: the
// wait it had was the forgotten state's. Buckets a Configure keeps (it
// changed other settings) keep the call's reservation and its place in
// their queue. Before, every waiting call waited out the retired bucket's
// time: a Reset 5 s into a 60 s pause left the call waiting until 60 s,
// and 20 calls queued at 1 rps ended at 19 s after a Configure to 100 rps
// at 1 s.

// waitingCalls starts n calls of scope that wait for tokens, and returns a
// function that waits for them and says when the last ended, counted from
// the start.
func waitingCalls(g *Governor, scope Scope, n int) func() time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var last time.Duration
	for range n {
		wg.Go(func() {
			if err := Do(context.Background(), scope, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
				panic(err)
			}
			mu.Lock()
			last = max(last, time.Since(start))
			mu.Unlock()
		})
	}
	synctest.Wait()
	return func() time.Duration {
		wg.Wait()
		return last
	}
}

func TestAWaitForAForgottenPauseEndsAtTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		once := RetryPolicy{MaxAttempts: 1}
		Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttleAfter(60 * time.Second) }, WithGovernor(g), WithPolicy(once))
		wait := waitingCalls(g, ec2Vpcs, 1)
		time.Sleep(5 * time.Second)
		g.Reset()
		if last := wait(); last != 5*time.Second {
			t.Fatalf("the call waiting out a 60 s pause went at %v after a Reset at 5s, want at 5s", last)
		}
		if s := g.Summary(nil).Totals; s.Calls != 1 || s.Waits != 1 {
			t.Errorf("the lifetime stats the Reset started: %d calls, %d waits; want the waiting call, and its wait", s.Calls, s.Waits)
		}
	})
}

func TestAQueueMovesToTheBucketConfigureMade(t *testing.T) {
	slow := Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want time.Duration // when the last of 20 calls queued at 1 rps goes, configured at 1.5 s
	}{
		// 20 calls: one at once, then 19 at 1 rps. From 1.5 s (no token
		// due then, so no call goes beside the Configure at the same
		// instant, in either order), 18 queued: the new bucket's burst,
		// and 17 at 100 rps.
		{"rate raised", Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 100, Burst: 1}}}}, 1500*time.Millisecond + 170*time.Millisecond},
		// Other settings: the bucket is kept, and the queue in it.
		{"breaker changed", Config{AWS: ProviderConfig{BreakerThreshold: 9, Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}}, 19 * time.Second},
		{"the same", slow, 19 * time.Second},
		// No longer governed: every waiting call goes at once.
		{"disabled", Config{Enabled: new(false)}, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, slow)
				wait := waitingCalls(g, ec2Vpcs, 20)
				time.Sleep(1500 * time.Millisecond)
				if err := g.Configure(tc.cfg); err != nil {
					t.Fatal(err)
				}
				if last := wait(); last != tc.want {
					t.Fatalf("the last of 20 calls queued at 1 rps went at %v, configured at 1.5s; want %v", last, tc.want)
				}
			})
		})
	}
}

// A call whose wait moves to a live bucket is held to its max wait there
// too: the live bucket's wait is a new one, refused as any. Here two calls
// wait 1 s and 2 s for tokens at 1 rps, each allowed 3 s; the bucket made
// at 0.2 rps, with a burst of 1, lets one go at once and refuses the other
// (5 s away).
func TestAWaitMovedByConfigureKeepsItsMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}})
		ok := func(context.Context) error { return nil }
		Do(context.Background(), ec2Vpcs, ok, WithGovernor(g)) // the burst
		ctx := WithMaxWait(context.Background(), 3*time.Second)
		done := make(chan error, 2)
		for range 2 {
			go func() { done <- Do(ctx, ec2Vpcs, ok, WithGovernor(g)) }()
		}
		synctest.Wait()
		if err := g.Configure(Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 0.2, Burst: 1}}}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var went, refused int
		for range 2 {
			var we *WouldWaitError
			switch err := <-done; {
			case err == nil:
				went++
			case errors.As(err, &we):
				refused++
			default:
				t.Errorf("a moved call: %v", err)
			}
		}
		if went != 1 || refused != 1 || time.Since(start) != 0 {
			t.Fatalf("%d went, %d refused, after %v; want one of each at once", went, refused, time.Since(start))
		}
	})
}

// A half-open breaker's probe that waits for a token when a Configure
// changes its settings, and keeps the breaker, is still the probe: it is
// sent when the token it then waits for is due, and its success closes the
// breaker. Here the throttle that opened the breaker paused the scope 15 s
// and halved its rate, the cooldown is 10 s, and the Configure comes at
// 12 s:
//   - a new rate (2 rps) retires the bucket: the probe takes the live
//     bucket's token, at once (2 s after it began to wait);
//   - a new max_concurrency keeps the bucket too: the probe keeps its
//     place, its token 2 s after the pause's end (7 s), as without the
//     Configure. Before, the move to the live entry dropped the probe's
//     lease, and the half-open breaker, asked again, refused the call as
//     its probe was out (its own).
func TestAProbeIsStillTheProbeAcrossAConfigure(t *testing.T) {
	cfg := func(rps float64, conc int) Config {
		return Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 10, MaxConcurrency: conc,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: rps, Burst: 1}}}}
	}
	for _, c := range []struct {
		name string
		to   Config
		at   time.Duration // when the probe is sent, from when it began to wait
	}{
		{"the rate changed: the bucket retired", cfg(2, 10), 2 * time.Second},
		{"max_concurrency changed: the bucket kept", cfg(1, 20), 7 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, cfg(1, 10))
				once := RetryPolicy{MaxAttempts: 1}
				Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttleAfter(15 * time.Second) }, WithGovernor(g), WithPolicy(once))
				time.Sleep(10 * time.Second)
				start := time.Now()
				done := make(chan error)
				go func() {
					done <- Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g), WithPolicy(once))
				}()
				synctest.Wait() // the probe, waiting out the pause
				if st := g.Inspect(ec2Vpcs).Breaker.State.String(); st != "half_open" {
					t.Fatalf("the breaker is %s, want half-open with the probe out", st)
				}
				time.Sleep(2 * time.Second)
				if err := g.Configure(c.to); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil || time.Since(start) != c.at {
					t.Fatalf("the probe: %v after %v; want a success at %v", err, time.Since(start), c.at)
				}
				if st := g.Inspect(ec2Vpcs).Breaker.State.String(); st != "closed" {
					t.Errorf("after the probe's success the breaker is %s, want closed", st)
				}
			})
		})
	}
}

// A call waiting for a breaker's verdict (breaker_wait) when a Reset
// forgets the breaker asks the live one at once: the retired breaker's
// cooldown no longer holds it. Here a 60 s cooldown, reset at 5 s. Before,
// the call waited out the cooldown of the breaker the Reset forgot.
func TestAVerdictWaitEndsAtTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		zero := 0
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60, MaxRetries: &zero}})
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g))
		if st := g.Inspect(ec2Vpcs).Breaker.State.String(); st != "open" {
			t.Fatalf("the breaker is %s, want open", st)
		}
		wait := waitingCalls(g, ec2Vpcs, 1)
		time.Sleep(5 * time.Second)
		g.Reset()
		if last := wait(); last != 5*time.Second {
			t.Fatalf("the call waiting for the verdict of a breaker open for 60 s went at %v after a Reset at 5s, want at 5s", last)
		}
	})
}

// A call waiting for its token when its breaker opens (another call's
// failure) and, in the same instant, a Configure retires its buckets but
// keeps the breaker (only the rate changed) is refused by the open
// breaker, as the verdict alone would have it refused: the move to the
// live buckets asks the breaker again even when their tokens are to be
// had at once. Before, a move that found a token at once went before the
// breaker was asked, and the call was sent through the open breaker.
func TestACallMovedAsItsBreakerOpensIsRefused(t *testing.T) {
	// One P: the test goroutine runs on from the verdict to the Configure
	// before the woken call does (the interleaving that, on several Ps,
	// happens whenever the call is scheduled after the Configure).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		cfg := func(rps float64) Config {
			return Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60,
				Services: map[string]ServiceConfig{"ec2": {MaxRPS: rps, Burst: 1}}}}
		}
		g := newGov(t, cfg(0.2))
		ctx := context.Background()
		x, _ := g.Begin(ctx, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
		if err := x.Enter(ctx); err != nil { // the burst's token, sent
			t.Fatal(err)
		}
		x.Release()
		sent := false
		done := make(chan error)
		go func() {
			done <- Do(ctx, ec2Vpcs, func(context.Context) error { sent = true; return nil }, WithGovernor(g))
		}()
		synctest.Wait() // waiting 5 s for its token
		time.Sleep(time.Second)
		x.End(transientErr()) // the breaker opens: a verdict
		if st := g.Inspect(ec2Vpcs).Breaker.State.String(); st != "open" {
			t.Fatalf("setup: the breaker is %s, want open", st)
		}
		if err := g.Configure(cfg(100)); err != nil { // buckets retired, breaker kept
			t.Fatal(err)
		}
		err := <-done
		var coe *CircuitOpenError
		if sent || !errors.As(err, &coe) {
			t.Errorf("the waiting call: sent %v, err %v; want it refused by the open breaker (CircuitOpenError), not sent", sent, err)
		}
	})
}

// The Wait event of a call whose wait a Reset ended names the level of
// the bucket it waited for, not that of the fresh reservation it took on
// the live buckets. Here a 60 s pause of the leaf bucket, reset at 5 s:
// the live buckets have a token at once. Before, the event named
// "provider", the level of that fresh reservation, which had no wait.
func TestAWaitEndedByAResetNamesTheLevelItWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var levels []string
		obs := observe.Func(func(ev observe.Event) {
			if ev.Kind == observe.Wait {
				mu.Lock()
				levels = append(levels, ev.Level)
				mu.Unlock()
			}
		})
		g := newGov(t, Config{}, WithObserver(obs))
		once := RetryPolicy{MaxAttempts: 1}
		Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttleAfter(60 * time.Second) }, WithGovernor(g), WithPolicy(once))
		wait := waitingCalls(g, ec2Vpcs, 1)
		time.Sleep(5 * time.Second)
		g.Reset()
		if last := wait(); last != 5*time.Second {
			t.Fatalf("the call went at %v, want at 5s (the Reset)", last)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(levels) != 1 || levels[0] != "leaf" {
			t.Errorf("Wait events' levels %q; want one, \"leaf\" (the 60 s pause of the leaf bucket)", levels)
		}
	})
}

// A call waiting for its account bucket's token keeps its place in that
// bucket's queue when it follows the live entry of its scope after a
// sweep reclaimed its own (the leaf full and idle, the breaker pristine):
// the account bucket, kept and shared with the account's other scopes,
// keeps the call's token, and only the leaf the sweep dropped is taken
// afresh. Here the account lets a call through every 5 s, A waits for 5 s
// and B, of another scope of the account, for 10 s; the sweep (and a
// Configure with the same configuration at 3 s) wakes A. Before, A's
// whole reservation was taken afresh: the token it gave back was the
// queue's last (B's), and A and B both went at 10 s through an account
// bucket of burst 1.
func TestACallMovedOffASweptEntryKeepsItsPlaceInTheAccountQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acct := 0.2
		cfg := Config{AWS: ProviderConfig{AccountMaxRPS: &acct, AccountBurst: 1}}
		g := newGov(t, cfg, WithReclaimAfter(time.Second))
		ok := func(context.Context) error { return nil }
		if err := Do(context.Background(), ec2Vpcs, ok, WithGovernor(g)); err != nil { // the account's burst
			t.Fatal(err)
		}
		start := time.Now()
		doneA := make(chan time.Duration, 1)
		go func() {
			if err := Do(context.Background(), ec2Vpcs, ok, WithGovernor(g)); err != nil {
				t.Error(err)
			}
			doneA <- time.Since(start)
		}()
		synctest.Wait() // A waits 5 s for the account's token
		watched, _ := g.configured().aws.scopes.peek(ec2Vpcs)
		doneB := make(chan time.Duration, 1)
		go func() {
			if err := Do(context.Background(), iamUsers, ok, WithGovernor(g)); err != nil {
				t.Error(err)
			}
			doneB <- time.Since(start)
		}()
		synctest.Wait() // B, another scope of the account, waits 10 s
		other := Scope{Provider: "gcp", Account: "proj", Service: "compute", Operation: "list"}
		for range 3 { // calls of another provider take the reclaimer's steps
			time.Sleep(time.Second)
			Do(context.Background(), other, ok, WithGovernor(g))
		}
		if !watched.flags.dead() {
			t.Fatal("setup: A's scope entry was not reclaimed")
		}
		if err := g.Configure(cfg); err != nil { // the same configuration: nothing retired
			t.Fatal(err)
		}
		a, b := <-doneA, <-doneB
		if a != 5*time.Second || b != 10*time.Second {
			t.Errorf("A went at %v, B at %v; want A at 5s and B at 10s (their places in the account's queue)", a, b)
		}
	})
}

// A retry's Backoff whose scope entry a sweep reclaims meanwhile (its
// breaker pristine during the retries, its bucket full and idle) watches
// the live entry's breaker: the sweep wakes the watch, which then sees
// the live breaker open, for longer than the pause, and cuts the pause.
// Here a 30 s pause, the entry reclaimed within 6 s, and another call of
// the scope opening the live breaker for 60 s at 6 s. Before, a sweep woke
// no one (only a Reset or Configure did, since the watch's 1 s recheck
// was removed), and the pause ran its 30 s.
func TestABackoffWatchesTheLiveBreakerAfterASweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// No dead scopes: a streak of failures where they are found keeps
		// its scope from the reclaimer.
		noDead := 0.0
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60, BreakerDeadSeconds: &noDead}}, WithReclaimAfter(time.Second))
		gd, err := g.Begin(context.Background(), ec2Vpcs)
		if err != nil {
			t.Fatal(err)
		}
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		gd.After(transientErr())
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		watched := gd.e
		type res struct {
			cut bool
			err error
			at  time.Duration
		}
		start := time.Now()
		done := make(chan res, 1)
		go func() {
			cut, err := gd.Backoff(context.Background(), 30*time.Second)
			done <- res{cut, err, time.Since(start)}
		}()
		// Another scope's calls take the reclaimer's steps.
		ok := func(context.Context) error { return nil }
		for range 6 {
			time.Sleep(time.Second)
			Do(context.Background(), ec2Subnets, ok, WithGovernor(g))
		}
		if !watched.flags.dead() {
			t.Fatal("setup: the watched entry was not reclaimed")
		}
		// Another call of the scope fails: the live breaker opens for 60 s,
		// past the pause's end (30 s).
		Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttle() }, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		if st := g.Inspect(ec2Vpcs).Breaker.State.String(); st != "open" {
			t.Fatalf("setup: the live breaker is %s, want open", st)
		}
		opened := time.Since(start)
		r := <-done
		if !r.cut || r.err != nil || r.at != opened {
			t.Errorf("Backoff: cut %v at %v (%v); want cut at %v, when the live breaker opened", r.cut, r.at, r.err, opened)
		}
		gd.End(errors.New("x"))
	})
}

// A retry after its provider was disabled is no longer governed: it asks
// no breaker and takes no token, as a call that begins after the
// Configure does (the backoff its retry policy gave it still applies).
// Each case disables the provider at 5 s, while the call waits or before
// its retry. Before, a call waiting for an open breaker's verdict, or
// for a verdict or one cooldown after its retries ran out
// (breaker_wait), waited out the cooldown of the ungoverned provider's
// breaker (60 s); once that wait ended at the Configure, the retry still waited
// out another call's 50 s pause of the leaf; and a retry whose breaker
// another call's failure opened was refused by it.
func TestARetryAfterItsProviderWasDisabledIsNotPaced(t *testing.T) {
	disable := func(t *testing.T, g *Governor, cfg Config) {
		t.Helper()
		off, no := cfg, false
		off.AWS.Enabled = &no
		if err := g.Configure(off); err != nil {
			t.Fatal(err)
		}
	}
	once := WithPolicy(RetryPolicy{MaxAttempts: 1})
	zero := 0
	pause := func(g *Governor) { // another call's throttle pauses the leaf for 50 s
		Do(context.Background(), ec2Vpcs, func(context.Context) error { return throttleAfter(50 * time.Second) }, WithGovernor(g), once)
	}
	// recovery makes a call whose retries ran out on a transient error,
	// waiting for a verdict or one cooldown before it tries again
	// (breaker_wait, its breaker still closed: a 60 s cooldown), has
	// another call's throttle pause the leaf for 50 s if paused, and
	// disables the provider at 5 s.
	recoverable := Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 5, BreakerCooldownSeconds: 60}}
	recovery := func(paused bool) func(t *testing.T, g *Governor, cfg Config) (error, time.Duration) {
		return func(t *testing.T, g *Governor, cfg Config) (error, time.Duration) {
			start := time.Now()
			var again time.Duration
			attempts := 0
			done := make(chan error)
			go func() {
				done <- Do(context.Background(), ec2Vpcs, func(context.Context) error {
					if attempts++; attempts == 1 {
						return transientErr()
					}
					again = time.Since(start)
					return nil
				}, WithGovernor(g), once)
			}()
			synctest.Wait() // its retries ran out: waiting for a verdict
			if paused {
				pause(g)
			}
			time.Sleep(5 * time.Second)
			disable(t, g, cfg)
			return <-done, again
		}
	}
	// retryOpened makes a call whose first attempt fails, has another
	// call's failure open the breaker (threshold 1), disables the
	// provider at 5 s and sends the retry with enter.
	open1 := Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60}}
	retryOpened := func(enter func(*Guard) error) func(t *testing.T, g *Governor, cfg Config) (error, time.Duration) {
		return func(t *testing.T, g *Governor, cfg Config) (error, time.Duration) {
			start := time.Now()
			gd, err := g.Begin(context.Background(), ec2Vpcs)
			if err != nil {
				t.Fatal(err)
			}
			defer gd.End(nil)
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			gd.Release()
			gd.After(transientErr())
			if _, err := gd.Retry(0); err != nil {
				t.Fatal(err)
			}
			Do(context.Background(), ec2Vpcs, func(context.Context) error { return transientErr() }, WithGovernor(g), once)
			if st := g.Inspect(ec2Vpcs).Breaker.State.String(); st != "open" {
				t.Fatalf("the breaker is %s, want open", st)
			}
			time.Sleep(5 * time.Second)
			disable(t, g, cfg)
			err = enter(gd)
			return err, time.Since(start)
		}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		// run makes the call, disabling the provider at 5 s, and returns
		// its error and when its retry was sent (0: never).
		run func(t *testing.T, g *Governor, cfg Config) (error, time.Duration)
	}{
		{"a verdict wait, the breaker open", Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60, MaxRetries: &zero}},
			func(t *testing.T, g *Governor, cfg Config) (error, time.Duration) {
				n := 0
				Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g))
				if st := g.Inspect(ec2Vpcs).Breaker.State.String(); st != "open" {
					t.Fatalf("the breaker is %s, want open", st)
				}
				wait := waitingCalls(g, ec2Vpcs, 1) // a new call, sent once the breaker lets it through
				time.Sleep(5 * time.Second)
				disable(t, g, cfg)
				return nil, wait()
			}},
		{"a recovery wait", recoverable, recovery(false)},
		{"a recovery wait, the leaf paused", recoverable, recovery(true)},
		{"Enter, the breaker opened by another call's failure", open1, retryOpened(func(gd *Guard) error { return gd.Enter(context.Background()) })},
		{"TryEnter, the breaker opened by another call's failure", open1, retryOpened((*Guard).TryEnter)},
		{"Pace after a throttle, the leaf paused", Config{},
			func(t *testing.T, g *Governor, cfg Config) (error, time.Duration) {
				gd := throttledRetry(t, g, context.Background(), ec2Vpcs)
				defer gd.End(nil)
				pause(g)
				start := time.Now() // the pause's call waited for its token
				time.Sleep(5 * time.Second)
				disable(t, g, cfg)
				err := gd.Pace(context.Background())
				return err, time.Since(start)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, tc.cfg)
				if err, at := tc.run(t, g, tc.cfg); err != nil || at != 5*time.Second {
					t.Errorf("the retry: %v, sent at %v; want it sent at 5s, when its provider was disabled", err, at)
				}
			})
		})
	}
}
