package cloudggcp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Importing the package teaches the core's classifier the error shapes of
// the Google clients.
func init() { resilience.RegisterErrorReader(readError) }

// readError reads *apierror.APIError, gRPC status errors and
// *googleapi.Error the way the spec's classifier reads google-api-core
// exceptions:
//
//	ResourceExhausted (429), Unavailable (503)   Throttled
//	DeadlineExceeded (504), Internal (500)       Transient
//	Unknown, DataLoss (500)                      Transient (by status)
//	PermissionDenied, NotFound, ... (4xx, 501)   Fatal, a provider answer
//
// RetryInfo's retry_delay is the error's Retry-After. A status made locally
// from the caller's own context (Canceled, or DeadlineExceeded with the
// context's message) is not a provider answer.
func readError(err error) (resilience.ErrorDetails, bool) {
	if e, ok := err.(*googleapi.Error); ok {
		return resilience.ErrorDetails{Status: e.Code, Header: e.Header, Answer: true}, true
	}
	// *apierror.APIError is a gRPC status error too, with its HTTP code
	// and decoded details.
	se, ok := err.(interface{ GRPCStatus() *status.Status })
	if !ok {
		return resilience.ErrorDetails{}, false
	}
	st := se.GRPCStatus()
	if st == nil {
		return resilience.ErrorDetails{}, false
	}
	d, ok := statusDetails(st.Code(), st.Message())
	if !ok {
		return d, false
	}
	if ae, isAPI := err.(*apierror.APIError); isAPI {
		if hc := ae.HTTPCode(); hc > 0 {
			d.Status = hc
		}
		if ri := ae.Details().RetryInfo; ri != nil && ri.GetRetryDelay() != nil {
			d.RetryAfter, d.HasRetryAfter = ri.GetRetryDelay().AsDuration(), true
		}
	} else if delay, ok := retryDelay(st); ok {
		d.RetryAfter, d.HasRetryAfter = delay, true
	}
	return d, true
}

// statusDetails maps a gRPC code to the classifier's terms.
func statusDetails(c codes.Code, msg string) (resilience.ErrorDetails, bool) {
	switch c {
	case codes.OK, codes.Canceled:
		return resilience.ErrorDetails{}, false
	case codes.DeadlineExceeded:
		if msg == context.DeadlineExceeded.Error() {
			// grpc's status for the caller's own context deadline.
			return resilience.ErrorDetails{Kind: resilience.Transient, HasKind: true}, true
		}
	}
	d := resilience.ErrorDetails{Code: c.String(), Status: httpStatus(c), Answer: true}
	switch c {
	case codes.ResourceExhausted, codes.Unavailable:
		d.Kind, d.HasKind = resilience.Throttled, true
	case codes.DeadlineExceeded, codes.Internal:
		d.Kind, d.HasKind = resilience.Transient, true
	}
	return d, true
}

// httpStatus is the HTTP mapping of google.rpc.Code.
func httpStatus(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unknown, codes.Internal, codes.DataLoss:
		return http.StatusInternalServerError
	}
	return 0
}

// retryDelay reads RetryInfo from a status's details.
func retryDelay(st *status.Status) (d time.Duration, ok bool) {
	for _, det := range st.Details() {
		if ri, isRI := det.(*errdetails.RetryInfo); isRI && ri.GetRetryDelay() != nil {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// retryable reports whether the SDK's loop should retry err: the codes of
// the spec's GCP retry (ResourceExhausted, ServiceUnavailable,
// DeadlineExceeded, InternalServerError), and never cloudg's own errors.
func retryable(err error) (code codes.Code, ok bool) {
	var coe *resilience.CircuitOpenError
	var rbe *resilience.RetryBudgetExhaustedError
	var dee *resilience.DeadlineExceededError
	if errors.As(err, &coe) || errors.As(err, &rbe) || errors.As(err, &dee) {
		return codes.Unknown, false
	}
	code = status.Code(err)
	switch code {
	case codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded, codes.Internal:
		return code, true
	}
	return code, false
}

// Unavailable reports whether err says the RPC cannot be used here at all
// (PermissionDenied or Unimplemented): the listing helper then falls back
// from ListAssets to SearchAllResources.
func Unavailable(err error) bool {
	switch status.Code(err) {
	case codes.PermissionDenied, codes.Unimplemented:
		return true
	}
	return false
}
