//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/storetest"
)

// A call waiting for its account's token when its scope is throttled with
// a Retry-After sends nothing until the pause ends, though its leaf token
// was due before the pause began (at once, or queued): a paused scope
// sends nothing. It queues for a leaf token after the pause, at the
// halved rate. Before, only the leaf's queued reservations due after the
// pause began moved with it, and the call went when its account token
// was due, during the pause. A scheduler's first call (WithAdmission)
// that may not wait that long is deferred instead of sent.
func TestACallWaitingAtItsAccountIsHeldByALeafPause(t *testing.T) {
	for _, tc := range []struct {
		name      string
		leaf      ServiceConfig
		acct      float64       // the account's rate (burst 1)
		throttled time.Duration // when the first call is throttled, for 60 s
		want      time.Duration // when the waiting call goes
	}{
		// Leaf token at once, account's at 1 s; paused from 0.5 s to
		// 60.5 s, the leaf halved to 50 rps.
		{"leaf token at once", ServiceConfig{MaxRPS: 100, Burst: 100}, 1, 500 * time.Millisecond, 60*time.Second + 520*time.Millisecond},
		// Leaf token at 1 s, account's at 4 s; paused from 2 s to 62 s,
		// the leaf halved to 0.5 rps.
		{"leaf token queued", ServiceConfig{MaxRPS: 1, Burst: 1}, 0.25, 2 * time.Second, 64 * time.Second},
	} {
		for _, via := range []string{"Do", "Guard.Enter", "admission"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: new(tc.acct), AccountBurst: 1,
						Services: map[string]ServiceConfig{"ec2": tc.leaf}}})
					once := WithPolicy(RetryPolicy{MaxAttempts: 1})
					start := time.Now()
					go Do(context.Background(), ec2Vpcs, func(context.Context) error {
						time.Sleep(tc.throttled)
						return throttleAfter(60 * time.Second)
					}, WithGovernor(g), once)
					synctest.Wait()
					var a admissionRec
					sent, err := sendOnceVia(g, via, &a, start)
					if via == "admission" {
						var ww *WouldWaitError
						if !errors.As(err, &ww) || sent >= 0 || len(a.deferred) != 1 {
							t.Fatalf("a first call allowed 10 s, its scope paused for 60 s while it waited: sent at %v, %v, deferred %v", sent, err, a.deferred)
						}
						return
					}
					if err != nil || sent != tc.want {
						t.Fatalf("the call waiting for its account's token, its scope paused from %v for 60s: sent at %v (%v), want at %v", tc.throttled, sent, err, tc.want)
					}
				})
			})
		}
	}
}

// So does a call waiting for its account's concurrency slot: it took its
// tokens before the pause, and gets the slot when the call throttled with
// a Retry-After gives it back, once its answer is recorded. It then waits for tokens again, which the
// pause holds: it goes at the pause's end, at the halved rate (20 rps
// halved: 0.1 s later). Before, it was sent as it got the slot, at once
// into a 60 s pause.
func TestACallWaitingForItsSlotIsHeldByAPause(t *testing.T) {
	for _, via := range []string{"Do", "Guard.Enter", "admission"} {
		t.Run(via, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				once := WithPolicy(RetryPolicy{MaxAttempts: 1})
				start := time.Now()
				// A call that holds its slot until End, after its answer
				// is recorded (an integration holding it per call).
				go func() {
					gd, _ := g.Begin(context.Background(), ec2Vpcs, once)
					gd.Enter(context.Background())
					time.Sleep(500 * time.Millisecond)
					err := throttleAfter(60 * time.Second)
					gd.After(err)
					gd.End(err)
				}()
				synctest.Wait()
				var a admissionRec
				sent, err := sendOnceVia(g, via, &a, start)
				if via == "admission" {
					var ww *WouldWaitError
					if !errors.As(err, &ww) || sent >= 0 || len(a.deferred) != 1 {
						t.Fatalf("a first call allowed 10 s, its scope paused for 60 s while it waited for its slot: sent at %v, %v, deferred %v", sent, err, a.deferred)
					}
				} else if want := 60*time.Second + 600*time.Millisecond; err != nil || sent != want {
					t.Fatalf("the call waiting for its slot, its scope paused from 500ms for 60s: sent at %v (%v), want at %v", sent, err, want)
				}
				if in := g.Inspect(ec2Vpcs).InFlight; in != 0 {
					t.Fatalf("%d slots held after the calls ended", in)
				}
			})
		})
	}
}

// A call waiting for its tokens when its account is paused (PauseAccount:
// ARM's remaining reads spent) sends nothing until the pause ends, its
// account token due before the pause began (at once, or queued): the
// pause holds every call of the account. A queued token follows its
// reservation, which the pause moved; one due before the pause began is
// spent, and the call queues for an account token after the pause.
// Before, the call went when its tokens were due, during the pause.
func TestACallWaitingForItsTokensIsHeldByAnAccountPause(t *testing.T) {
	for _, tc := range []struct {
		name string
		leaf ServiceConfig
		acct float64 // the account's rate (burst 1)
		want time.Duration
	}{
		// The leaf's token at 1 s, the account's at once; paused from
		// 0.1 s to 60.1 s, then one account token later (0.01 s).
		{"waiting for the leaf", ServiceConfig{MaxRPS: 1, Burst: 1}, 100, 60*time.Second + 110*time.Millisecond},
		// The account's token at 1 s, queued: the pause moves it by 60 s.
		{"queued at the account", ServiceConfig{MaxRPS: 100, Burst: 100}, 1, 61 * time.Second},
	} {
		for _, via := range []string{"Do", "Guard.Enter"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: new(tc.acct), AccountBurst: 1,
						Services: map[string]ServiceConfig{"ec2": tc.leaf}}})
					once := WithPolicy(RetryPolicy{MaxAttempts: 1})
					start := time.Now()
					Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g), once)
					go func() {
						time.Sleep(100 * time.Millisecond)
						gd, _ := g.Begin(context.Background(), ec2Subnets)
						gd.PauseAccount(60 * time.Second)
						gd.End(nil)
					}()
					sent, err := sendOnceVia(g, via, nil, start)
					if err != nil || sent != tc.want {
						t.Fatalf("the call waiting for its tokens, its account paused from 100ms for 60s: sent at %v (%v), want at %v", sent, err, tc.want)
					}
				})
			})
		}
	}
}

// sendOnceVia makes one call of ec2Vpcs through g, attempted once, by
// way of via: "Do", "Guard.Enter" (Begin, Enter, After, End), or
// "admission" (Do as a scheduler's first call, held by a, allowed 10 s).
// It returns when the request was sent, from start, or -1 when it was not.
func sendOnceVia(g *Governor, via string, a *admissionRec, start time.Time) (sent time.Duration, err error) {
	sent = -1
	send := func(context.Context) error {
		sent = time.Since(start)
		return nil
	}
	once := WithPolicy(RetryPolicy{MaxAttempts: 1})
	switch via {
	case "Guard.Enter":
		gd, _ := g.Begin(context.Background(), ec2Vpcs, once)
		if err = gd.Enter(context.Background()); err == nil {
			err = send(nil)
			gd.After(err)
		}
		gd.End(err)
	case "admission":
		ctx := WithAdmission(context.Background(), a, 10*time.Second)
		err = Do(ctx, ec2Vpcs, send, WithGovernor(g), once)
	default:
		err = Do(context.Background(), ec2Vpcs, send, WithGovernor(g), once)
	}
	return sent, err
}

// Do gives a failed attempt's slot back once its answer is recorded, so
// that a call waiting for the slot sees the pause a throttle's Retry-After
// set, and is held by it. Before, Do gave the slot back as fn returned:
// with a store whose throttle takes a round trip (fleet mode's), the call
// waiting for the slot got it, found the scope not paused yet, and was
// sent at once into the 60 s pause (0.5 s).
func TestACallWaitingForTheSlotOfAThrottledDoIsHeldByItsPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithStateStore(storetest.SlowPauses(MemoryStore(), 5*time.Millisecond)))
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		start := time.Now()
		go Do(context.Background(), ec2Vpcs, func(context.Context) error {
			time.Sleep(500 * time.Millisecond)
			return throttleAfter(60 * time.Second)
		}, WithGovernor(g), once)
		synctest.Wait()
		sent, err := sendOnceVia(g, "Do", nil, start)
		if err != nil || sent < 60*time.Second+505*time.Millisecond {
			t.Fatalf("the call waiting for the slot of a Do throttled at 500ms for 60s: sent at %v (%v), want after the pause", sent, err)
		}
		if in := g.Inspect(ec2Vpcs).InFlight; in != 0 {
			t.Fatalf("%d slots held after the calls ended", in)
		}
	})
}
