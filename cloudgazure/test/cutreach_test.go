package test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// openScope makes n calls of the scope give up: five open its breaker.
func openScope(g *resilience.Governor, n int) {
	for range n {
		resilience.Do(context.Background(), networkA, func(context.Context) error { return tooMany{} },
			resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	}
}

// sleepingVnetGet starts a GET of a vnet that the fake throttles first,
// and returns the channel of its error and a function that reports when
// it ended, since start.
func sleepingVnetGet(c *armnetwork.VirtualNetworksClient) (done chan error, at func() time.Duration) {
	start := time.Now()
	var mu sync.Mutex
	var end time.Duration
	done = make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), "rg", "vnet", nil)
		mu.Lock()
		end = time.Since(start)
		mu.Unlock()
		done <- err
	}()
	return done, func() time.Duration { mu.Lock(); defer mu.Unlock(); return end }
}

type replacedKey struct{}

// replacing is a per-call policy of the caller's, after the package's:
// it sends a new request, with a context of its own derived from the
// request's.
type replacing struct{}

func (replacing) Do(req *policy.Request) (*http.Response, error) {
	return req.WithContext(context.WithValue(req.Raw().Context(), replacedKey{}, true)).Next()
}

// A per-call policy of the caller's placed after the package's (appended
// to the options ClientOptions returned) that replaces the request: azcore
// sleeps on the new request's context, derived from the request's, and
// the breaker's opening still ends the sleep then, with a
// CircuitOpenError.
func TestACutReachesARequestAPolicyReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 20, MaxBackoffSeconds: 20}})
		e.srv.forever(routeVnetGet, throttled(""))
		o := cloudgazure.ClientOptions(e.base, e.opts()...)
		o.PerCallPolicies = append(o.PerCallPolicies, replacing{})
		c, err := cloudgazure.NewSubscriptionClient(armnetwork.NewVirtualNetworksClient, subA, fakeCred{}, o, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		done, at := sleepingVnetGet(c)
		synctest.Wait() // throttled once, asleep in azcore's backoff
		time.Sleep(time.Second)
		openScope(e.gov, 5)
		opened := time.Since(start)
		err = <-done
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || at() != opened {
			t.Fatalf("the request ended at %v with %v; want a CircuitOpenError as the breaker opened at %v", at(), err, opened)
		}
	})
}

// flatCred is a credential that, once its first token has expired, hangs
// until the request's context ends and then fails with an error of its
// own, which does not wrap the context's.
type flatCred struct{ calls *atomic.Int32 }

func (c flatCred) GetToken(ctx context.Context, _ policy.TokenRequestOptions) (azcore.AccessToken, error) {
	if c.calls.Add(1) == 1 {
		return azcore.AccessToken{Token: "t", ExpiresOn: time.Now().Add(time.Second)}, nil
	}
	<-ctx.Done()
	return azcore.AccessToken{}, errors.New("flatCred: no token")
}

// The breaker opens while the retry, its sleep over, waits in the bearer
// token policy (before the package's per-retry policy) for a credential
// that flattens the cut context's cancellation into an error of its own:
// the request still ends then with a CircuitOpenError, not the
// credential's error nor a context.Canceled of a live context.
func TestACutSeenByACredentialThatFlattensItIsTheBreakers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 20, MaxBackoffSeconds: 20}})
		e.srv.forever(routeVnetGet, throttled(""))
		var calls atomic.Int32
		c, err := cloudgazure.NewSubscriptionClient(armnetwork.NewVirtualNetworksClient, subA, flatCred{&calls}, e.base, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		done, at := sleepingVnetGet(c)
		time.Sleep(21 * time.Second) // azcore's sleep (16 to 20 s) is over: the retry waits for a token
		if calls.Load() != 2 || e.srv.count(routeVnetGet) != 1 {
			t.Fatalf("%d tokens asked, %d requests; want the retry waiting for its token", calls.Load(), e.srv.count(routeVnetGet))
		}
		openScope(e.gov, 5)
		opened := time.Since(start)
		err = <-done
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || errors.Is(err, context.Canceled) || at() != opened {
			t.Fatalf("the request ended at %v with %v; want a CircuitOpenError as the breaker opened at %v", at(), err, opened)
		}
	})
}

// The breaker opens at the very moment azcore's sleep before a retry ends
// (its second sleep, 3 × 10 s × [0.8, 1.3) capped at 10 s, is 10 s
// exactly), so that azcore's loop may see the cut in its sleep, or after
// it, in the next attempt's context, or the package's policy may see it
// first; with reset, the breaker is also reset at that moment, so that the
// retry may go after all. Whichever comes first, the request ends with
// the breaker's refusal or the retry's answer (the retry may be sent
// before the breaker opens), never with a context.Canceled of a live
// context.
func TestACutAsAzcoresSleepEndsIsNeverACancellation(t *testing.T) {
	for _, tc := range []struct {
		reset      bool
		tryTimeout time.Duration // azcore's per-try context
		runs       int
	}{
		{false, 0, 40},
		{true, 0, 1500}, // the orders that failed came in about one run in 200
		{true, time.Minute, 1500},
	} {
		reset := tc.reset
		for i := range tc.runs {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 10, MaxBackoffSeconds: 10}})
				e.base.Retry.TryTimeout = tc.tryTimeout
				e.srv.script(routeVnetGet, throttled(""), throttled(""), reply{})
				done, _ := sleepingVnetGet(e.vnets(subA))
				openScope(e.gov, 4) // one failure short of opening
				for e.srv.count(routeVnetGet) < 2 {
					time.Sleep(100 * time.Millisecond)
					synctest.Wait()
				}
				time.Sleep(time.Until(e.srv.hitsOf(routeVnetGet)[1].at.Add(10 * time.Second)))
				openScope(e.gov, 1) // as the sleep ends
				if reset {
					e.gov.Reset()
				}
				err := <-done
				var coe *resilience.CircuitOpenError
				if errors.Is(err, context.Canceled) || err != nil && !errors.As(err, &coe) {
					t.Errorf("run %d, reset %v, try timeout %v: %v; want the breaker's refusal, or the answer to a retry sent first", i, reset, tc.tryTimeout, err)
				}
				if testing.Verbose() {
					t.Logf("reset %v: %v", reset, err)
				}
			})
		}
	}
}
