package cloudgaws

import (
	"net"
	"net/http"
	"reflect"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/internal/errread"
)

// ThrottlingError is what a governed client returns when the governor, not
// the service, stopped a call: the scope's circuit breaker is open (before
// the call, nothing was sent; or before a retry), the provider's retry
// budget ran out inside the SDK's retry loop, or the call would have waited
// longer than its context allows (resilience.WithMaxWait: for a rate token,
// a pause, a slot or the provider's Retry-After; nothing more was sent).
// It is a smithy.APIError with the code Throttling, so code that inspects
// API error codes treats it as throttling, and it wraps the core's error,
// so errors.As finds *resilience.CircuitOpenError,
// *resilience.RetryBudgetExhaustedError or *resilience.WouldWaitError
// (and, under them, the provider error that would have been retried, if
// any). resilience.Classify reads it as Throttled and resilience.RetryAfter
// as the core error's wait. The SDK never retries it: when the governor
// stops a call inside the SDK's retry loop, the loop gets the error's
// message without its chain (no code for a retryer such as
// retry.AddWithErrorCodes(r, "Throttling") to match), and the call
// returns the *ThrottlingError.
//
// Its methods only read it: any number of goroutines may use one at once
// while none changes Err. The zero ThrottlingError (no Err) reads
// "throttled by the governor", unwraps to nothing and has a RetryAfter of
// 0, and so does a nil *ThrottlingError (an application's error that
// embeds one it did not set): the classifier reads every error of the
// process.
type ThrottlingError struct {
	// Err is a *resilience.CircuitOpenError, a
	// *resilience.RetryBudgetExhaustedError or a *resilience.WouldWaitError.
	Err error
}

var _ smithy.APIError = (*ThrottlingError)(nil)

// Error returns the core error's message.
func (e *ThrottlingError) Error() string {
	if e == nil || e.Err == nil {
		return "throttled by the governor"
	}
	return e.Err.Error()
}

// ErrorCode returns "Throttling".
func (e *ThrottlingError) ErrorCode() string { return "Throttling" }

// ErrorMessage returns the core error's message.
func (e *ThrottlingError) ErrorMessage() string { return e.Error() }

// ErrorFault returns smithy.FaultClient: the caller is asked to slow down,
// as the services' own Throttling errors do.
func (e *ThrottlingError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// RetryableError returns false: the SDK's retryers must not retry a call
// the governor stopped.
func (e *ThrottlingError) RetryableError() bool { return false }

// RetryAfter returns the core error's hint: the time until the breaker
// lets a probe through, the provider's Retry-After under an empty budget,
// or the time until the refused call's scope can go (0 for a full
// bulkhead, whose wait is not known).
func (e *ThrottlingError) RetryAfter() time.Duration {
	if e == nil {
		return 0
	}
	if ra, ok := e.Err.(interface{ RetryAfter() time.Duration }); ok {
		return ra.RetryAfter()
	}
	return 0
}

// Unwrap returns the core error.
func (e *ThrottlingError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// WrapsGovernorError marks the error as a wrapper of the governor's own:
// the core classifies it as the error it wraps and never takes it for the
// provider's answer.
func (e *ThrottlingError) WrapsGovernorError() {}

// notRetryable marks an attempt's error as final for the SDK's retry loop,
// keeping it in the chain for errors.As and the classifier.
type notRetryable struct{ err error }

func (e *notRetryable) Error() string        { return e.err.Error() }
func (e *notRetryable) Unwrap() error        { return e.err }
func (e *notRetryable) RetryableError() bool { return false }

// unsentError is, for the guard, the error of an attempt that failed
// before its request reached the HTTP client (see callState.ownAnswer):
// a local error, which says nothing of the attempt's scope. It hides from
// the classifier what the error holds (it has no Unwrap): a credential
// server's refused connection, another SDK call's answer (STS's
// throttle); and the error reader reads it as Fatal, so that its message
// is not searched for throttling either. The caller gets the SDK's error,
// never this one.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return e.err.Error() }

// httpResponder is what *smithyhttp.ResponseError and *awshttp.ResponseError
// (which embeds it) have in common: the HTTP response of the attempt.
type httpResponder interface {
	HTTPResponse() *smithyhttp.Response
}

// readResponseError teaches the core classifier the response of the SDK's
// HTTP response errors: the status, and the headers, so that the guard and
// resilience.RetryAfter read Retry-After and x-amz-retry-after on any
// error a client returns. The error code the core reads by method already
// (smithy.APIError's ErrorCode).
//
// It also reads what the core's tables alone would read otherwise than the
// SDK does:
//   - the SDK's read timeout (*awshttp.ResponseTimeoutError, of an answer
//     whose connection went silent), which the SDK retries: a timeout,
//     Transient, as the core reads the transport's own timeouts, not the
//     fatal answer the 200 above it would make of it;
//   - the error of an attempt that failed before its request was sent
//     (*unsentError): a local one, Fatal;
//   - a request the SDK could not send because its endpoint's host does
//     not exist (a *smithyhttp.RequestSendError of a DNS error that found
//     no host, NXDOMAIN: a service a region does not offer): a local
//     error, Fatal, as the SDK, which does not retry it, reads it, not the
//     transient network failure the connection error around it would be;
//   - the codes the SDK's service clients retry that the core's tables do
//     not have (see isServiceRetryable): Transient;
//   - the throttles of the providers' limits that neither the SDK nor the
//     core's tables (botocore's lists) name: KMS's throttle of the calls a
//     service makes to KMS on the caller's behalf (see isKMSThrottle), and
//     a DynamoDB transaction cancelled because an item of it was throttled
//     (see cancelledByThrottle): Throttled, of the calling service's scope,
//     though the SDK does not retry them;
//   - the code S3's deserializers make up from the status of an answer
//     without a body (a HEAD's 503, ServiceUnavailable "Service
//     Unavailable", see statusStandIn), no code of the service's: the
//     status decides, as for any answer without one (a 503 is throttling).
func readResponseError(err error) (errread.Details, bool) {
	switch e := err.(type) {
	case *awshttp.ResponseTimeoutError:
		return errread.Details{Kind: errread.Transient}, true
	case *unsentError:
		return errread.Details{Kind: errread.Fatal}, true
	case *smithyhttp.RequestSendError:
		budget := maxSendErrorNodes
		if hostNotFound(e.Err, &budget) {
			return errread.Details{Kind: errread.Fatal}, true
		}
	}
	if c, ok := err.(interface{ ErrorCode() string }); ok {
		switch code := c.ErrorCode(); {
		case isServiceRetryable(code):
			return errread.Details{Kind: errread.Transient}, true
		case isKMSThrottle(code), code == "TransactionCanceledException" && cancelledByThrottle(err):
			return errread.Details{Kind: errread.Throttled}, true
		}
	}
	hr, ok := err.(httpResponder)
	if !ok {
		return errread.Details{}, false
	}
	resp := hr.HTTPResponse()
	if resp == nil || resp.Response == nil {
		return errread.Details{}, false
	}
	d := errread.Details{Status: resp.StatusCode, Header: resp.Header}
	if statusStandIn(err, resp.StatusCode) {
		// S3's deserializers make a code up from the status of an error
		// answer without a body (a HEAD's): the status decides.
		d.Kind = statusKind(resp.StatusCode)
	}
	return d, true
}

// maxSendErrorNodes bounds hostNotFound's walk, as the core classifier
// bounds its own walk of a chain: net/http's error for a host that does
// not exist is three errors deep under the SDK's (a *url.Error, a
// *net.OpError, the *net.DNSError).
const maxSendErrorNodes = 16

// hostNotFound reports whether err, the error of a
// *smithyhttp.RequestSendError (the transport's), is or wraps a
// *net.DNSError that found no host, looking at no more than *budget of
// its errors (through Unwrap and Unwrap() []error) and spending them: the
// classifier reads every error of the process, and a chain that comes
// back to itself, or a tree of joins, must not hold it for ever, as
// errors.As would.
func hostNotFound(err error, budget *int) bool {
	for err != nil && *budget > 0 {
		*budget--
		switch e := err.(type) {
		case *net.DNSError:
			return e != nil && e.IsNotFound
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				if hostNotFound(c, budget) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		default:
			return false
		}
	}
	return false
}

// isServiceRetryable reports whether code is one a service's client adds
// to the SDK's retryable codes (retry.AddWithErrorCodes in the client's
// constructor) that the core's tables, botocore's standard-mode lists, do
// not have: STS's IDPCommunicationError, the identity provider STS asks to
// verify a web identity or SAML token being unreachable, which botocore's
// standard mode retries too. Such an answer is an outage behind the
// service, transient, not a fatal answer about the request.
func isServiceRetryable(code string) bool { return code == "IDPCommunicationError" }

// isKMSThrottle reports whether code is a service's error for a KMS call
// it made on the caller's behalf (to encrypt or decrypt with the caller's
// key) that KMS throttled: Kinesis's and SNS's KMSThrottlingException
// (SNS's query code KMSThrottling), Step Functions' KmsThrottlingException,
// and SQS's KmsThrottled (its query-compatible code
// KMS.ThrottlingException). KMS's own throttle, ThrottlingException, is in
// the core's tables.
//
// KMS limits its calls per account and Region, and every service that
// calls it for the account shares that limit. The throttle is read in the
// scope of the call that got it, the calling service's, not KMS's: the
// calling service's calls are what make those KMS calls, and slowing them
// is what slows the KMS calls the governor can slow; the program's own
// KMS calls are slowed by the throttles they get.
func isKMSThrottle(code string) bool {
	switch code {
	case "KMSThrottlingException", "KMSThrottling", "KmsThrottlingException", "KmsThrottled", "KMS.ThrottlingException":
		return true
	}
	return false
}

// cancelledByThrottle reports whether err, DynamoDB's
// TransactionCanceledException, gives as the reason of an item's
// cancellation ThrottlingError (an on-demand table or index scaling) or
// ProvisionedThroughputExceeded (a provisioned table or index past its
// capacity): a throttle of the table's, by which the whole transaction
// was cancelled, whatever the other items' reasons. It reads the error's
// CancellationReasons by reflection (a slice of structs whose Code is a
// *string), so that the package does not depend on the DynamoDB client's
// module; an error without them is not such a cancellation, and neither
// is one whose fields cannot be reached: the classifier reads every
// error of the process (an application's that embeds a nil
// TransactionCanceledException, whose ErrorCode is the SDK's), and must
// not panic on one.
func cancelledByThrottle(err error) bool {
	reasons := fieldOf(reflect.ValueOf(err), "CancellationReasons")
	if reasons.Kind() != reflect.Slice {
		return false
	}
	for i := range reasons.Len() {
		code := fieldOf(reasons.Index(i), "Code")
		if code.Kind() == reflect.Pointer {
			if code.IsNil() {
				continue
			}
			code = code.Elem()
		}
		if code.Kind() != reflect.String {
			continue
		}
		switch code.String() {
		case "ThrottlingError", "ProvisionedThroughputExceeded":
			return true
		}
	}
	return false
}

// fieldOf returns the field name of the struct v is or points to, or the
// zero Value when v is no struct, nor a non-nil pointer to one, or the
// field is not there or sits behind a nil embedded pointer.
func fieldOf(v reflect.Value, name string) reflect.Value {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	f, ok := v.Type().FieldByName(name)
	if !ok {
		return reflect.Value{}
	}
	fv, err := v.FieldByIndexErr(f.Index)
	if err != nil {
		return reflect.Value{}
	}
	return fv
}

// statusStandIn reports whether the API error err wraps is the stand-in S3's
// deserializers (and S3 Control's) make of an error answer whose body names
// no code, as a HEAD answer's never does: the status text without spaces as
// its code, the text itself as its message (ServiceUnavailable, "Service
// Unavailable"). Such a code is not the service's word and says nothing the
// status does not; a body of S3's with the same code has a message of its
// own.
func statusStandIn(err error, status int) bool {
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return false
	}
	ge, ok := u.Unwrap().(*smithy.GenericAPIError)
	if !ok {
		return false
	}
	text := http.StatusText(status)
	return text != "" && ge.Message == text && ge.Code == strings.ReplaceAll(text, " ", "")
}

// statusKind is the kind of an HTTP status without a provider's code, the
// core classifier's rule for one: a 429 or 503 is throttling, a 408, 500,
// 502 or 504 transient; any other status says nothing (errread.None), and
// the core's tables decide.
func statusKind(status int) errread.Kind {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return errread.Throttled
	case http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return errread.Transient
	}
	return errread.None
}

func init() {
	errread.Register(readResponseError)
}
