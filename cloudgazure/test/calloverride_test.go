package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudg/cloudg/resilience"
)

// A call's own retry options (policy.WithRetryOptions), which azcore
// applies instead of the client's, are the ones the policies govern the
// call's retries by: a retry azcore does not make is neither asked of
// the Guard nor counted, nor refused for a wait it would never make. A
// fake ARM server on 127.0.0.1; the governor's retry policy (8 retries)
// is the client's.
func TestACallsOwnRetryOptionsDecideItsRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		call    policy.RetryOptions
		replies []reply
		maxWait time.Duration // resilience.WithMaxWait, when set
		want    int           // requests the server gets
		retries int           // retries recorded
	}{
		// No retries for this call: the 429 is its answer.
		{name: "MaxRetries -1", call: policy.RetryOptions{MaxRetries: -1},
			replies: []reply{withHeader(throttled(""), "retry-after-ms", "1")}, want: 1},
		// ...even when the call may not wait as long as the 429 asks.
		{name: "MaxRetries -1 under WithMaxWait", call: policy.RetryOptions{MaxRetries: -1},
			replies: []reply{throttled("30")}, maxWait: time.Second, want: 1},
		// One retry for this call: azcore gives the second 429 back.
		{name: "MaxRetries 1", call: policy.RetryOptions{MaxRetries: 1, RetryDelay: time.Millisecond},
			replies: []reply{withHeader(throttled(""), "retry-after-ms", "1"), withHeader(throttled(""), "retry-after-ms", "1")},
			want:    2, retries: 1},
		// This call does not retry a 429 (its StatusCodes).
		{name: "StatusCodes 503", call: policy.RetryOptions{StatusCodes: []int{http.StatusServiceUnavailable}},
			replies: []reply{withHeader(throttled(""), "retry-after-ms", "1")}, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tcpEnv(t, resilience.Config{})
			e.srv.script(routeGroupGet, tc.replies...)
			ctx, stats := resilience.WithStats(context.Background())
			if tc.maxWait > 0 {
				ctx = resilience.WithMaxWait(ctx, tc.maxWait)
			}
			_, err := e.groups(subA).Get(policy.WithRetryOptions(ctx, tc.call), "rg", nil)
			if n := e.srv.count(routeGroupGet); n != tc.want {
				t.Errorf("%d requests, want %d", n, tc.want)
			}
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
				t.Errorf("err %T %v, want the last 429, an *azcore.ResponseError", err, err)
			}
			var ww *resilience.WouldWaitError
			if errors.As(err, &ww) {
				t.Errorf("err %v, a *resilience.WouldWaitError for a retry azcore does not make", err)
			}
			if tot := e.gov.Summary(stats).Totals; tot.Retries != int64(tc.retries) || tot.Refused != 0 || tot.Calls != int64(tc.want) {
				t.Errorf("totals %+v, want %d calls, %d retries, none refused", tot, tc.want, tc.retries)
			}
		})
	}
}
