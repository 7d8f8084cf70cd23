package test

import (
	"fmt"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/internal/unreadabletest"
)

// The AWS SDK's error types read their receiver in their methods: a nil
// one in a chain (an SDK bug's, or an application's that wraps one it did
// not set), or a response error without its response, must not crash the
// process in the classifier, which cloudgaws's reader feeds. Each reads
// as an unreadable error.
func TestSDKErrorsWhoseMethodsPanicAreUnreadable(t *testing.T) {
	api := &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"nil *smithyhttp.ResponseError", (*smithyhttp.ResponseError)(nil)},
		{"nil *awshttp.ResponseError", (*awshttp.ResponseError)(nil)},
		{"nil *smithy.OperationError", (*smithy.OperationError)(nil)},
		{"nil *smithyhttp.RequestSendError", (*smithyhttp.RequestSendError)(nil)},
		{"wrapped nil *awshttp.ResponseError", fmt.Errorf("describe: %w", (*awshttp.ResponseError)(nil))},
		{"an operation error around a nil *awshttp.ResponseError", &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeVpcs", Err: (*awshttp.ResponseError)(nil)}},
		{"an awshttp.ResponseError without its response", &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeVpcs",
			Err: &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Err: api}, RequestID: "r1"}}},
		{"a smithyhttp.ResponseError without its response", &smithyhttp.ResponseError{Err: api}},
		{"a smithyhttp.ResponseError whose response has no http.Response", &smithyhttp.ResponseError{Response: &smithyhttp.Response{}, Err: api}},
	} {
		unreadabletest.Check(t, tc.name, tc.err)
	}
}
