//go:build go1.25

package resilience

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A watch of the slots (WatchSlots) is told of each slot a call gives
// back free, with the call's account, at that instant: not of one handed
// to a call waiting for it; of one kept for a nested call's loan, as the
// loan comes back, not as the enclosing call ends; of each account whose
// cap a Configure raised, as it is in force; and of nothing once stopped.
// Here an account with one slot.
func TestWatchSlotsIsToldOfEachSlotFreed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		acct := Scope{Provider: "aws", Account: ec2Vpcs.Account}
		var mu sync.Mutex
		var told []Scope
		stop := g.WatchSlots(func(s Scope) {
			mu.Lock()
			told = append(told, s)
			mu.Unlock()
		})
		take := func() []Scope {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			t := told
			told = nil
			return t
		}
		hold := func(d time.Duration) func(context.Context) error {
			return func(context.Context) error { time.Sleep(d); return nil }
		}

		// A call ends: its slot is free.
		if err := Do(context.Background(), ec2Vpcs, hold(time.Second), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if got := take(); !slices.Equal(got, []Scope{acct}) {
			t.Fatalf("a call ended: told %v; want %v", got, []Scope{acct})
		}

		// A call ends while another waits for its slot: handed over, not
		// free; free as the second ends.
		var wg sync.WaitGroup
		wg.Go(func() { Do(context.Background(), ec2Vpcs, hold(time.Second), WithGovernor(g)) })
		synctest.Wait()
		wg.Go(func() { Do(context.Background(), ec2Subnets, hold(time.Second), WithGovernor(g)) })
		time.Sleep(time.Second)
		if got := take(); len(got) != 0 {
			t.Errorf("a call ended, its slot handed to a call waiting for it: told %v; want nothing", got)
		}
		wg.Wait()
		if got := take(); !slices.Equal(got, []Scope{acct}) {
			t.Fatalf("the call the slot was handed to ended: told %v; want %v", got, []Scope{acct})
		}

		// A nested call borrows the slot and outlives the attempt: the
		// slot is kept for it, and free as it comes back.
		nested := make(chan error, 1)
		if err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			go func() { nested <- Do(ctx, ec2Subnets, hold(10*time.Second), WithGovernor(g)) }()
			time.Sleep(time.Second)
			return nil
		}, WithGovernor(g), WithNestedCalls()); err != nil {
			t.Fatal(err)
		}
		if got := take(); len(got) != 0 {
			t.Fatalf("the enclosing call ended, its slot kept for the nested call's loan: told %v; want nothing", got)
		}
		if err := <-nested; err != nil {
			t.Fatal(err)
		}
		if got := take(); !slices.Equal(got, []Scope{acct}) {
			t.Fatalf("the nested call gave its loan back: told %v; want %v", got, []Scope{acct})
		}

		// A Configure raising the account's cap: a slot is free.
		cfg := g.Config()
		cfg.AWS.MaxConcurrency = 2
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		if got := take(); !slices.Equal(got, []Scope{acct}) {
			t.Fatalf("a Configure raised the cap: told %v; want %v", got, []Scope{acct})
		}

		stop()
		stop()
		if err := Do(context.Background(), ec2Vpcs, hold(time.Second), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		if got := take(); len(got) != 0 {
			t.Fatalf("stopped: told %v; want nothing", got)
		}
		checkSlotsBack(t, g)
	})
}

// A watch keyed by account, the natural one (a scheduler's queues waiting
// for their account's slot), is told by a Configure of each account whose
// slots it may have freed, as a call's end tells it: each account of a
// provider whose cap was raised or that was turned off (its calls take
// no slot), with the account's Scope, never a Scope that names no
// account; and of none whose cap is unchanged, lowered, or full still.
func TestWatchSlotsConfigureTellsEachAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{MaxConcurrency: 1}, Azure: ProviderConfig{MaxConcurrency: 1}}
		g := newGov(t, cfg)
		awsA, awsB := ec2Vpcs, ec2Vpcs
		awsB.Account = "210987654321"
		az := Scope{Provider: "azure", Account: "00000000-0000-0000-0000-000000000001", Service: "compute", Operation: "ListVMs"}
		acctOf := func(s Scope) Scope { return Scope{Provider: s.Provider, Account: s.Account} }

		// Each account full: a call holds its one slot; a scheduler
		// waits on each.
		release := make(chan struct{})
		var wg sync.WaitGroup
		for _, s := range []Scope{awsA, awsB, az} {
			wg.Go(func() {
				Do(context.Background(), s, func(context.Context) error { <-release; return nil }, WithGovernor(g))
			})
		}
		synctest.Wait()
		var mu sync.Mutex
		waiting := map[Scope]int{acctOf(awsA): 0, acctOf(awsB): 0, acctOf(az): 0}
		var unknown []Scope
		stop := g.WatchSlots(func(s Scope) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := waiting[s]; !ok {
				unknown = append(unknown, s)
				return
			}
			waiting[s]++
		})
		defer stop()
		check := func(what string, want map[Scope]int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(unknown) > 0 {
				t.Errorf("%s: told %v, no account the watch waits on; want each account told", what, unknown)
			}
			for a, n := range waiting {
				if n != want[a] {
					t.Errorf("%s: %v told %d times; want %d", what, a, n, want[a])
				}
				waiting[a] = 0
			}
			unknown = nil
		}

		// Nothing of the caps changed: nobody is told.
		cfg.AWS.MaxRPS = 5
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		check("a Configure of aws's rate", nil)

		// aws's cap raised: each aws account has a slot free.
		cfg.AWS.MaxConcurrency = 2
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		check("a Configure raising aws's cap", map[Scope]int{acctOf(awsA): 1, acctOf(awsB): 1})

		// azure turned off: its calls take no slot.
		off := false
		cfg.Azure.Enabled = &off
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		check("a Configure turning azure off", map[Scope]int{acctOf(az): 1})

		// aws's cap lowered: no slot freed.
		cfg.AWS.MaxConcurrency = 1
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		check("a Configure lowering aws's cap", nil)

		close(release)
		wg.Wait()
	})
}

// A call waiting for a slot whose context ends at the instant the slot
// is handed to it gives the slot back free, and a watch of the slots
// (WatchSlots) is told of it, as of any slot given back: the call that
// ended and handed it over told nobody (the slot was not free), so that
// a scheduler waiting for the account's slot (package pool) would
// otherwise wait for its next recheck. The two ends at one instant run in
// either order (synctest runs the goroutines runnable at an instant in
// any), the wait's select seeing both its slot and its context's end:
// the instant is played 64 times, and the give-up path is taken in about
// a quarter of them.
func TestWatchSlotsIsToldOfASlotAWaitGaveUp(t *testing.T) {
	const plays = 64
	missed := 0
	for range plays {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
			var mu sync.Mutex
			told := 0
			stop := g.WatchSlots(func(Scope) {
				mu.Lock()
				told++
				mu.Unlock()
			})
			defer stop()
			var wg sync.WaitGroup
			wg.Go(func() {
				Do(context.Background(), ec2Vpcs, func(context.Context) error { time.Sleep(time.Second); return nil }, WithGovernor(g))
			})
			synctest.Wait()
			// Waits for the slot until the instant the first call ends.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var err error
			wg.Go(func() {
				err = Do(ctx, ec2Subnets, func(context.Context) error { return nil }, WithGovernor(g))
			})
			wg.Wait()
			synctest.Wait()
			_, why := g.Delay(ec2Vpcs)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && why == nil && told == 0 {
				missed++
			}
			checkSlotsBack(t, g)
		})
	}
	if missed > 0 {
		t.Fatalf("a wait for a slot gave it up as it was handed over, the slot free: the watch told nothing in %d of %d plays; want told each time", missed, plays)
	}
}
