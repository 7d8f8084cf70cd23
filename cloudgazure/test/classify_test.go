package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudg/cloudg/resilience"
)

// Importing the package teaches the classifier *azcore.ResponseError:
// errors from real clients classify by their error code first, then their
// status, and carry their hints.
func TestClassifyResponseErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		plain := e.plainGroups(subA, policy.RetryOptions{MaxRetries: -1})
		cases := []struct {
			r    reply
			kind resilience.Kind
		}{
			{throttled(""), resilience.Throttled},
			{reply{status: http.StatusTooManyRequests, code: "RetryableErrorDueToAnotherOperation"}, resilience.Transient},
			{reply{status: http.StatusConflict, code: "TenantRequestsThrottled"}, resilience.Throttled},
			{reply{status: http.StatusServiceUnavailable, code: "ServerBusy"}, resilience.Throttled},
			{reply{status: http.StatusInternalServerError, code: "InternalServerError"}, resilience.Transient},
			{reply{status: http.StatusGatewayTimeout, code: "GatewayTimeout"}, resilience.Transient},
			{reply{status: http.StatusNotFound, code: "ResourceGroupNotFound"}, resilience.Fatal},
			{reply{status: http.StatusForbidden, code: "AuthorizationFailed"}, resilience.Fatal},
		}
		for _, c := range cases {
			e.srv.script(routeGroupGet, c.r)
			_, err := plain.Get(context.Background(), "rg", nil)
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.ErrorCode != c.r.code && c.r.code != "" {
				t.Fatalf("%d %s: got %v", c.r.status, c.r.code, err)
			}
			if k := resilience.Classify(err); k != c.kind {
				t.Errorf("%d %s classifies %v, want %v", c.r.status, c.r.code, k, c.kind)
			}
			if !resilience.IsProviderAnswer(err) {
				t.Errorf("%d %s is not a provider answer", c.r.status, c.r.code)
			}
		}
		e.srv.script(routeGroupGet, withHeader(throttled("7"), "x-ms-retry-after-ms", "2500"))
		_, err := plain.Get(context.Background(), "rg", nil)
		if d, ok := resilience.RetryAfter(err); !ok || d != 2500*time.Millisecond {
			t.Fatalf("RetryAfter = %v %v, want 2.5 s from x-ms-retry-after-ms", d, ok)
		}

		// The policy reads only the status: a 429 is throttling even when
		// its code is a lock conflict.
		e.srv.script(routeGroupGet, reply{status: http.StatusTooManyRequests, code: "RetryableErrorDueToAnotherOperation"})
		if _, err := e.groups(subA).Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		if st := e.gov.Inspect(resourcesA).Leaf; st.Rate != 7.5 {
			t.Fatalf("resources bucket %+v, want halved to 7.5", st)
		}
	})
}
