package test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// nestingTransport makes, before it sends a request, a governed call of
// the subscription's with the request's context (a transport that fetches
// a credential, or one governed itself), then sends the request with
// next. It records the nested call's error.
type nestingTransport struct {
	gov   *resilience.Governor
	next  policy.Transporter
	errs  *[]error
	scope resilience.Scope // the nested call's; zero: resourcesA
}

func (n nestingTransport) Do(req *http.Request) (*http.Response, error) {
	scope := n.scope
	if scope == (resilience.Scope{}) {
		scope = resourcesA
	}
	err := resilience.Do(req.Context(), scope, func(context.Context) error { return nil }, resilience.WithGovernor(n.gov))
	*n.errs = append(*n.errs, err)
	return n.next.Do(req)
}

// A governed call made inside an attempt with the attempt's context (by
// the transport, or a policy after the package's) is nested in the
// attempt, as in a resilience.Do made WithNestedCalls and in cloudghttp's
// attempts: it borrows the attempt's slot rather than wait for it. It
// used to wait for the slot its own caller held: with max_concurrency 1,
// until the request's deadline, and without one for ever.
func TestACallNestedInAnAttemptBorrowsItsSlot(t *testing.T) {
	for _, withPerCall := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
			var errs []error
			tr := nestingTransport{gov: e.gov, next: e.base.Transport, errs: &errs}
			perCall, perRetry := cloudgazure.Policies(e.opts()...)
			o := policy.ClientOptions{Transport: tr, Retry: cloudgazure.RetryOptions(e.opts()...)}
			if withPerCall {
				o.PerCallPolicies = []policy.Policy{perCall}
			}
			o.PerRetryPolicies = []policy.Policy{perRetry}
			pl, req := ownPipeline(t, &o)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			resp, err := pl.Do(req.WithContext(ctx))
			if len(errs) != 1 || errs[0] != nil || time.Since(start) != 0 {
				t.Fatalf("per call %v: the nested call ended with %v after %v, want nil at once: it waited for its caller's slot",
					withPerCall, errs, time.Since(start))
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("per call %v: %v %v", withPerCall, resp, err)
			}
			if n := freeSlots(e.gov, subALower); n != 1 {
				t.Fatalf("per call %v: %d free slots after the request, want 1", withPerCall, n)
			}
		})
	}
}

// A governed call the transport makes on the attempt's own scope, whose
// breaker is half-open with its probe out in the attempt, goes as the
// probe in the attempt's stead rather than be refused by it; it used to
// get a CircuitOpenError.
func TestACallNestedInAnAttemptTakesOverItsProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		openScope(e.gov, 5)
		if st := e.gov.Inspect(networkA).Breaker.State; st != state.Open {
			t.Fatalf("breaker %v, want open", st)
		}
		time.Sleep(time.Minute) // the cooldown: the next request is the probe
		var errs []error
		base := *e.base
		base.Transport = nestingTransport{gov: e.gov, next: e.base.Transport, errs: &errs, scope: networkA}
		c, err := cloudgazure.NewSubscriptionClient(armnetwork.NewVirtualNetworksClient, subA, fakeCred{}, &base, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Get(context.Background(), "rg", "vnet", nil)
		if len(errs) != 1 || errs[0] != nil || err != nil {
			t.Fatalf("nested %v, request %v; want both to succeed: the nested call is the probe", errs, err)
		}
		if st := e.gov.Inspect(networkA).Breaker.State; st != state.Closed {
			t.Fatalf("breaker %v after the probe's success, want closed", st)
		}
	})
}

// keepingTransport starts, for each request it sends with next, a
// governed call of scope's (zero: resourcesA) with the request's context
// that it does not wait for, as net/http's dialer and an SDK's background
// refresh keep a request's context: a context that outlives the attempt.
type keepingTransport struct {
	gov   *resilience.Governor
	next  policy.Transporter
	wg    *sync.WaitGroup
	scope resilience.Scope
}

func (k keepingTransport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	scope := k.scope
	if scope == (resilience.Scope{}) {
		scope = resourcesA
	}
	k.wg.Go(func() {
		_ = resilience.Do(ctx, scope, func(context.Context) error { return nil }, resilience.WithGovernor(k.gov))
	})
	runtime.Gosched()
	return k.next.Do(req)
}

// A context is safe for simultaneous use by goroutines, and the one an
// attempt is sent with is no exception: a goroutine the transport starts,
// and does not wait for, may make its governed call with it while the
// request gives its slot back, records its answer and ends. With the
// account's bulkhead full (another call holds its other slot), that call
// looks the request up as the call it is nested in, and reads nothing
// the request writes meanwhile (run with -race): it is nested in the
// request while its attempt is sent only, as a call nested in a
// resilience.Do made WithNestedCalls is. So with a tenant-level request
// too, whose Guard its first attempt begins, in its tenant's account,
// once the request's context has been made.
func TestAContextOutlivingTheAttemptIsSafe(t *testing.T) {
	tok, _ := tenantCred{tenantA}.GetToken(context.Background(), policy.TokenRequestOptions{})
	for _, tenant := range []bool{false, true} {
		for _, withPerCall := range []bool{true, false} {
			t.Run(fmt.Sprintf("tenant-level %v, per call %v", tenant, withPerCall), func(t *testing.T) {
				fast := 1e9 // no call waits for a token
				e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{
					MaxConcurrency: 2, MaxRPS: fast, Burst: fast, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
				}})
				account, nested := subALower, resilience.Scope{}
				if tenant {
					account = "tenants/" + strings.ToLower(tenantA)
					nested = resilience.Scope{Provider: "azure", Account: account, Service: "resources"}
				}
				parked, err := e.gov.Begin(context.Background(), resilience.Scope{Provider: "azure", Account: account, Service: "parked"})
				if err != nil {
					t.Fatal(err)
				}
				if err := parked.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				perCall, perRetry := cloudgazure.Policies(e.opts()...)
				o := policy.ClientOptions{Transport: keepingTransport{gov: e.gov, next: e.base.Transport, wg: &wg, scope: nested}, Retry: cloudgazure.RetryOptions(e.opts()...)}
				if withPerCall {
					o.PerCallPolicies = []policy.Policy{perCall}
				}
				o.PerRetryPolicies = []policy.Policy{perRetry}
				for range 100 {
					pl, req := ownPipeline(t, &o)
					if tenant {
						// The tenant's token is set before the first
						// attempt, as azcore's bearer token policy sets it.
						req.Raw().URL.Path = "/providers/Microsoft.Compute"
						req.Raw().Header.Set("Authorization", "Bearer "+tok.Token)
					}
					resp, err := pl.Do(req)
					if err != nil || resp.StatusCode != http.StatusOK {
						t.Fatalf("%v %v", resp, err)
					}
					_ = resp.Body.Close()
				}
				parked.End(nil)
				wg.Wait()
				if n := freeSlots(e.gov, account); n != 2 {
					t.Fatalf("%d free slots of %s after the calls, want 2", n, account)
				}
			})
		}
	}
}
