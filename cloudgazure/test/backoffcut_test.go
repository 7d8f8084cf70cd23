package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// tooMany is an answer the core classifies as throttling.
type tooMany struct{}

func (tooMany) Error() string       { return "429" }
func (tooMany) HTTPStatusCode() int { return 429 }

// A request asleep in azcore's backoff when its scope's breaker opens ends
// then, not when the backoff would have: its retry is refused, as a retry
// the breaker refuses after the sleep is, and sends nothing. The request's
// context is its own again afterwards.
func TestBreakerOpeningEndsAzcoresBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 20, MaxBackoffSeconds: 20}})
		e.srv.forever(routeVnetGet, throttled(""))
		slow := e.vnets(subA)
		ctx, ledger := resilience.WithLedger(context.Background(), "network")
		start := time.Now()
		var at time.Duration
		done := make(chan error)
		go func() {
			_, err := slow.Get(ctx, "rg", "vnet", nil)
			at = time.Since(start)
			done <- err
		}()
		synctest.Wait() // throttled once, asleep in azcore's 20 s backoff
		time.Sleep(time.Second)
		for range 5 { // five calls of the scope give up: the breaker opens
			resilience.Do(context.Background(), networkA, func(context.Context) error { return tooMany{} },
				resilience.WithGovernor(e.gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		}
		opened := time.Since(start)
		if s := e.gov.Inspect(networkA).Breaker.State; s != state.Open {
			t.Fatalf("the breaker is %v, want open", s)
		}
		err := <-done
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || at != opened {
			t.Fatalf("the request ended at %v with %v; the breaker opened at %v: want a CircuitOpenError then", at, err, opened)
		}
		if n := e.srv.count(routeVnetGet); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
			t.Fatalf("ledger: %d gave up, %d skipped; want 1, 0 (%s)", gu, sk, ledger.Describe())
		}
	})
}

// azcore's backoff sleep is cut only when the breaker that opened during
// it would still refuse the retry when the sleep ends, however long
// azcore's jitter makes it: here the sleep is 16 to 20 s (20 s × [0.8,
// 1.3), at most MaxRetryDelay, 20 s), and the breaker opens 1 s in. With
// the default 60 s cooldown it is cut then; with a 5 s cooldown the
// breaker is half-open when the sleep ends, the sleep is left whole, and
// the retry goes as the breaker's probe (here it succeeds, and closes the
// breaker). Before, the sleep was cut as the breaker opened, whatever was
// left of it, and the retry refused.
func TestAzcoresSleepIsCutOnlyWhenTheRetryWouldBeRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cooldown float64 // 0: the default, 60 s
		cut      bool
	}{
		{name: "a cooldown past the sleep", cut: true},
		{name: "a cooldown that ends first", cooldown: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 20,
					MaxBackoffSeconds: 20, BreakerCooldownSeconds: tc.cooldown}})
				e.srv.script(routeVnetGet, throttled(""), reply{})
				start := time.Now()
				done, at := sleepingVnetGet(e.vnets(subA))
				synctest.Wait() // throttled once, asleep in azcore's backoff
				time.Sleep(time.Second)
				openScope(e.gov, 5)
				opened := time.Since(start)
				if s := e.gov.Inspect(networkA).Breaker.State; s != state.Open {
					t.Fatalf("the breaker is %v, want open", s)
				}
				err := <-done
				n := e.srv.count(routeVnetGet)
				var coe *resilience.CircuitOpenError
				switch {
				case tc.cut && (!errors.As(err, &coe) || at() != opened || n != 1):
					t.Errorf("ended at %v with %v after %d requests; want a CircuitOpenError as the breaker opened at %v, 1 request", at(), err, n, opened)
				case !tc.cut && (err != nil || n != 2 || at() < 16*time.Second || at() > 20*time.Second):
					t.Errorf("ended at %v with %v after %d requests; want the retry sent as the probe after the whole sleep (16 to 20 s), answered", at(), err, n)
				case !tc.cut:
					if s := e.gov.Inspect(networkA).Breaker.State; s != state.Closed {
						t.Errorf("the breaker is %v after the probe's success, want closed", s)
					}
				}
			})
		})
	}
}

// A call whose own retry options give a negative RetryDelay, which
// azcore's documentation calls no delay, sleeps MaxRetryDelay before a
// retry (azcore's backoff reads the delay of 0 as an overflow): the
// breaker's opening 1 s into that 20 s sleep, with a 5 s cooldown that
// ends first, leaves the sleep whole, and the retry goes as the probe, as
// for any sleep the cooldown outlives; the policies weigh the sleep as
// azcore sleeps it.
func TestASleepOfNoRetryDelayIsAzcoresCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{BreakerCooldownSeconds: 5}})
		e.srv.script(routeVnetGet, throttled(""), reply{})
		start := time.Now()
		done := make(chan error, 1)
		var end time.Duration
		go func() {
			ctx := policy.WithRetryOptions(context.Background(),
				policy.RetryOptions{RetryDelay: -1, MaxRetryDelay: 20 * time.Second, MaxRetries: 2})
			_, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil)
			end = time.Since(start)
			done <- err
		}()
		synctest.Wait() // throttled once, asleep in azcore's backoff
		time.Sleep(time.Second)
		openScope(e.gov, 5)
		err := <-done
		if n := e.srv.count(routeVnetGet); err != nil || n != 2 || end != 20*time.Second {
			t.Errorf("ended at %v with %v after %d requests; want the retry sent as the probe after azcore's whole sleep of 20 s, answered", end, err, n)
		}
		if s := e.gov.Inspect(networkA).Breaker.State; s != state.Closed {
			t.Errorf("the breaker is %v after the probe's success, want closed", s)
		}
	})
}

// A request whose azcore loop slept before a retry leaves nothing behind
// once it returns: the context its sleep watched is cancelled with it.
func TestAWatchedAzcoreSleepLeavesNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.script(routeVnetGet, throttled(""), reply{})
		c := e.vnets(subA)
		ctx := endlessContext{context.Background(), make(chan struct{})}
		if _, err := c.Get(ctx, "rg", "vnet", nil); err != nil || e.srv.count(routeVnetGet) != 2 {
			t.Fatalf("%v after %d requests, want a success after 2", err, e.srv.count(routeVnetGet))
		}
	})
}

// endlessContext can be cancelled, but never is: a context derived from
// it (not a type the context package knows) that is never cancelled
// leaves a goroutine behind, blocked on both, which the bubble reports.
type endlessContext struct {
	context.Context
	done chan struct{}
}

func (c endlessContext) Done() <-chan struct{} { return c.done }

// panicAfter is a per-retry policy of the caller's, outside the
// package's: it panics once the attempt returned, after the package began
// to watch azcore's sleep before the retry.
type panicAfter struct{}

func (panicAfter) Do(req *policy.Request) (*http.Response, error) {
	_, _ = req.Next()
	panic("after the attempt")
}

// A panic out of azcore's loop leaves no watch of its sleep behind.
func TestAPanicInAzcoresLoopLeavesNoWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.forever(routeVnetGet, throttled(""))
		o := *e.base
		o.PerRetryPolicies = []policy.Policy{panicAfter{}}
		c, err := cloudgazure.NewSubscriptionClient(armnetwork.NewVirtualNetworksClient, subA, fakeCred{}, &o, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the policy's panic did not reach the caller")
				}
			}()
			_, _ = c.Get(context.Background(), "rg", "vnet", nil)
		}()
		// The bubble fails the test if the watch is left blocked.
	})
}

// QueryResources' own backoff before the retry of a throttled page (of a
// client its pipeline does not govern) ends when the scope's breaker
// opens with a cooldown that outlasts it, as azcore's sleep does under the
// policies and as resilience.Guard.Backoff has it: the retry is refused
// then, nothing more sent, rather than after the rest of the backoff (here
// 30 s).
func TestBreakerOpeningEndsQueryResourcesBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		e.srv.forever(routeGraph, throttled(""))
		plain := e.plainGraph(policy.RetryOptions{MaxRetries: -1})
		opts := append(e.opts(), cloudgazure.WithQueryLimits(cloudgazure.QueryLimits{Backoff: []time.Duration{30 * time.Second}}))
		ctx, ledger := resilience.WithLedger(context.Background(), "graph")
		start := time.Now()
		var at time.Duration
		done := make(chan error)
		go func() {
			_, err := cloudgazure.QueryResources(ctx, plain, query, opts...)
			at = time.Since(start)
			done <- err
		}()
		synctest.Wait() // throttled once, asleep in the helper's 30 s backoff
		time.Sleep(time.Second)
		for range 5 { // five calls of the scope give up: the breaker opens
			resilience.Do(context.Background(), graphScope, func(context.Context) error { return tooMany{} },
				resilience.WithGovernor(e.gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		}
		opened := time.Since(start)
		if s := e.gov.Inspect(graphScope).Breaker.State; s != state.Open {
			t.Fatalf("the breaker is %v, want open", s)
		}
		err := <-done
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || at != opened {
			t.Fatalf("the query ended at %v with %v; the breaker opened at %v: want a CircuitOpenError then", at, err, opened)
		}
		if n := e.srv.count(routeGraph); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
			t.Fatalf("ledger: %d gave up, %d skipped; want 1, 0 (%s)", gu, sk, ledger.Describe())
		}
	})
}

// A retry the Guard is asked for only when azcore sends it (a 503 of a
// request azcosmos made, which azcosmos may resend or give up itself; a
// 429 a caller's ShouldRetry decides on) is watched as one asked for at
// once: a request asleep in azcore's backoff (16 to 20 s here) when its
// scope's breaker opens, with a cooldown past the sleep's end, ends then
// with the breaker's refusal, one attempt sent, given up once. Before,
// its sleep went on to its end, and the retry was refused only then.
func TestBreakerOpeningEndsTheBackoffOfALateAskedRetry(t *testing.T) {
	cfg := resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 20, MaxBackoffSeconds: 20}}
	for _, tc := range []struct {
		name  string
		scope resilience.Scope
		send  func(t *testing.T, gov *resilience.Governor, ctx context.Context) (sent func() int, err error)
	}{
		{"azcosmos's 503", az("acct", cloudgazure.ServiceCosmosDB), func(t *testing.T, gov *resilience.Governor, ctx context.Context) (func() int, error) {
			n := 0 // read once the request returned
			pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{},
				governedOptions(gov, "ClientOptions", cosmosAnswers(&n, http.StatusServiceUnavailable)))
			_, err := pl.Do(newAzcosmosRequest(t, ctx, http.MethodGet, "https://acct.documents.azure.com/dbs/d/colls/c/docs/x"))
			return func() int { return n }, err
		}},
		{"a 429 a ShouldRetry retries", networkA, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					gov  *resilience.Governor
					send func(ctx context.Context) (func() int, error)
				)
				if tc.send != nil {
					gov = newGov(t, cfg)
					send = func(ctx context.Context) (func() int, error) { return tc.send(t, gov, ctx) }
				} else {
					e := memEnv(t, cfg)
					base := *e.base
					base.Retry.ShouldRetry = func(resp *http.Response, _ error) bool {
						return resp != nil && resp.StatusCode == http.StatusTooManyRequests
					}
					e.base = &base
					e.srv.forever(routeVnetGet, throttled(""))
					gov = e.gov
					send = func(ctx context.Context) (func() int, error) {
						_, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil)
						return func() int { return e.srv.count(routeVnetGet) }, err
					}
				}
				ctx, ledger := resilience.WithLedger(context.Background(), "t")
				start := time.Now()
				var (
					at   time.Duration
					sent func() int
				)
				done := make(chan error)
				go func() {
					var err error
					sent, err = send(ctx)
					at = time.Since(start)
					done <- err
				}()
				synctest.Wait() // answered once, asleep in azcore's backoff
				time.Sleep(time.Second)
				for range 5 { // five calls of the scope give up: the breaker opens
					resilience.Do(context.Background(), tc.scope, func(context.Context) error { return tooMany{} },
						resilience.WithGovernor(gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
				}
				opened := time.Since(start)
				if s := gov.Inspect(tc.scope).Breaker.State; s != state.Open {
					t.Fatalf("the breaker is %v, want open", s)
				}
				err := <-done
				var coe *resilience.CircuitOpenError
				if !errors.As(err, &coe) || at != opened {
					t.Errorf("the request ended at %v with %v; the breaker opened at %v: want a CircuitOpenError then, not after azcore's backoff (16 to 20 s)", at, err, opened)
				}
				if n := sent(); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
				if gu, sk := ledger.Counts(); gu != 1 || sk != 0 {
					t.Errorf("ledger: %d gave up, %d skipped; want 1, 0 (%s)", gu, sk, ledger.Describe())
				}
			})
		})
	}
}
