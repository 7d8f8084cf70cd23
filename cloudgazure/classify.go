package cloudgazure

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/cloudg/cloudg/resilience"
)

// Importing this package teaches the core's classifier azcore's error
// shape: an *azcore.ResponseError carries its status, its error code
// (x-ms-error-code or the body's error.code) and its response headers,
// so Classify, RetryAfter, DescribeError and the Guard's Failed read it as
// the spec's table says (SubscriptionRequestsThrottled is throttling,
// RetryableErrorDueToAnotherOperation transient, a 404 fatal, and
// Retry-After or x-ms-user-quota-resets-after the hint).
func init() { resilience.RegisterErrorReader(readResponseError) }

func readResponseError(err error) (resilience.ErrorDetails, bool) {
	re, ok := err.(*azcore.ResponseError)
	if !ok {
		return resilience.ErrorDetails{}, false
	}
	d := resilience.ErrorDetails{Code: re.ErrorCode, Status: re.StatusCode}
	if re.RawResponse != nil {
		d.Header = re.RawResponse.Header
	}
	return d, true
}
