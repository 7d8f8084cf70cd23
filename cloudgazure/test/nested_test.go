package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// nestingTransport makes, before it sends a request, a governed call of
// the subscription's with the request's context (a transport that fetches
// a credential, or one governed itself), then sends the request with
// next. It records the nested call's error.
type nestingTransport struct {
	gov  *resilience.Governor
	next policy.Transporter
	errs *[]error
}

func (n nestingTransport) Do(req *http.Request) (*http.Response, error) {
	err := resilience.Do(req.Context(), resourcesA, func(context.Context) error { return nil }, resilience.WithGovernor(n.gov))
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
