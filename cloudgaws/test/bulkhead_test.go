package test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/cloudg/cloudg/resilience"
)

// Sixty-four goroutines sharing one config never have more requests in
// flight than the account's bulkhead allows, and all of them get through.
func TestConcurrencyCapShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.hold = func(*http.Request) { time.Sleep(100 * time.Millisecond) }
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 8}})
		ctx, stats := resilience.WithStats(context.Background())
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Clients of every kind, all from the one config.
				switch i % 3 {
				case 0:
					errs <- describeVpcs(ctx, ec2.NewFromConfig(cfg))
				case 1:
					errs <- getCallerIdentity(ctx, sts.NewFromConfig(cfg))
				default:
					errs <- getSecret(ctx, secretsmanager.NewFromConfig(cfg))
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := f.maxInFlight(); got != 8 {
			t.Fatalf("max in flight %d, want the cap of 8", got)
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 64 {
			t.Fatalf("totals %+v", tot)
		}
	})
}

// freeSlots returns the free slots of the account's bulkhead: its cap
// less the slots held.
func freeSlots(g *resilience.Governor) int {
	s := g.Inspect(resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "probe"})
	return s.MaxInFlight - s.InFlight
}

// holdSlot takes a slot of the account's bulkhead (and a token of scope
// service's leaf) with a guard of its own, as a call of another client
// would; End gives it back.
func holdSlot(t *testing.T, g *resilience.Governor, service string) *resilience.Guard {
	t.Helper()
	gd, err := g.Begin(context.Background(), resilience.Scope{Provider: "aws", Account: testAccount, Service: service})
	if err != nil {
		t.Fatal(err)
	}
	if err := gd.TryEnter(); err != nil {
		t.Fatalf("no slot: %v", err)
	}
	return gd
}

// The slot a call holds across the SDK's retries is released exactly once,
// whether the call succeeds, fails or is cancelled in flight or while
// waiting for a slot: with one slot held by someone else, the slots free
// after the call are the cap minus one, never fewer (a leak) nor more (a
// double release).
func TestSlotReleasedExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, f *fakeAWS, c *ec2.Client, cap int, g *resilience.Governor)
	}{
		{"success after retries", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			f.script("DescribeVpcs", ec2Throttle, ec2Internal, ok)
			if err := describeVpcs(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}},
		{"provider error", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			f.always("DescribeVpcs", ec2Unauthorized)
			if err := describeVpcs(context.Background(), c); err == nil {
				t.Fatal("no error")
			}
		}},
		{"given up", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			f.always("DescribeVpcs", ec2Throttle)
			if err := describeVpcs(context.Background(), c); err == nil {
				t.Fatal("no error")
			}
		}},
		{"cancelled in flight", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			ctx, cancel := context.WithCancel(context.Background())
			f.hold = func(r *http.Request) { cancel(); <-r.Context().Done() }
			err := describeVpcs(ctx, c)
			f.hold = nil
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
		}},
		{"cancelled waiting for a slot", func(t *testing.T, f *fakeAWS, c *ec2.Client, cap int, g *resilience.Governor) {
			// Fill the bulkhead, then give up waiting.
			var held []*resilience.Guard
			for range cap - 1 {
				held = append(held, holdSlot(t, g, "filler"))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := describeVpcs(ctx, c)
			for _, gd := range held {
				gd.End(nil)
			}
			if !errors.Is(err, context.DeadlineExceeded) || f.count("DescribeVpcs") != 0 {
				t.Fatalf("err = %v, sent %d", err, f.count("DescribeVpcs"))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const cap = 3
				f := newFake(t)
				cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: cap}})
				other := holdSlot(t, g, "other")
				tc.run(t, f, ec2.NewFromConfig(cfg), cap, g)
				if got := freeSlots(g); got != cap-1 {
					t.Fatalf("%d slots free after the call, want %d", got, cap-1)
				}
				other.End(nil)
				if got := freeSlots(g); got != cap {
					t.Fatalf("%d slots free at the end, want %d", got, cap)
				}
			})
		})
	}
}
