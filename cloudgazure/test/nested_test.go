package test

import (
	"context"
	"net/http"
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
