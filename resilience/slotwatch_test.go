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
// loan comes back, not as the enclosing call ends; of any account (the
// zero Scope) as a Configure is in force; and of nothing once stopped.
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

		// A Configure: any account's slots may have changed.
		cfg := g.Config()
		cfg.AWS.MaxConcurrency = 2
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		if got := take(); !slices.Equal(got, []Scope{{}}) {
			t.Fatalf("a Configure: told %v; want the zero Scope", got)
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
