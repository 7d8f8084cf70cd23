package cloudgazure

import (
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/cloudg/cloudg/internal/errread"
)

// Importing this package teaches the core's classifier azcore's error
// shape: an *azcore.ResponseError carries its status, its error code
// (x-ms-error-code or the body's error.code) and its response headers.
// resilience.Classify, RetryAfter, DescribeError and every Guard then read
// it by the core's tables: SubscriptionRequestsThrottled is throttling,
// RetryableErrorDueToAnotherOperation transient, a 404 fatal, and
// Retry-After or x-ms-user-quota-resets-after the provider's hint.
func init() { errread.Register(readResponseError) }

func readResponseError(err error) (errread.Details, bool) {
	re, ok := err.(*azcore.ResponseError)
	if !ok {
		return errread.Details{}, false
	}
	d := errread.Details{Code: re.ErrorCode, Status: re.StatusCode}
	if re.RawResponse != nil {
		d.Header = re.RawResponse.Header
	}
	return d, true
}
