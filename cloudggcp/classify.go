package cloudggcp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/errread"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Importing the package teaches the core's classifier the error shapes of
// the Google clients.
func init() { errread.Register(readError) }

// readError reads *apierror.APIError, gRPC status errors and
// *googleapi.Error the way google-api-core reads its exceptions:
//
//	ResourceExhausted (429), Unavailable (503)   Throttled
//	DeadlineExceeded (504), Internal (500)       Transient
//	Unavailable for too_many_pings               Transient, no answer
//	ResourceExhausted for a message size limit   Fatal (no answer when not sent)
//	Unknown (500)                                Transient (by status)
//	DataLoss                                     Fatal: no retry brings lost data back
//	PermissionDenied, NotFound, ... (4xx, 501)   Fatal, a provider answer
//
// RetryInfo's retry_delay is the error's Retry-After. A status made locally
// from the caller's own context (Canceled, or DeadlineExceeded with the
// context's message), or by grpc for per-RPC credentials that failed
// before the call was sent ("transport: per-RPC creds failed due to
// error: ..."), is not a provider answer; grpc's own Unavailable for
// a connection it could not make ("connection error: desc = ... connection
// refused") is: nothing but its message, which a server relaying its
// upstream's error sends too, tells it from the service's, so it reads as
// Throttled and an answer. grpc's own Unavailable for a connection whose
// server sent a GOAWAY of ENHANCE_YOUR_CALM for too_many_pings ("received
// prior goaway: code: ENHANCE_YOUR_CALM, debug data: \"too_many_pings\""),
// the server's answer to a client that pings more often than its
// keepalive policy allows, is a lost connection, Transient and no answer,
// as cloudghttp's Transport reads that GOAWAY (resilience.Classify takes
// no GOAWAY for too_many_pings for a throttle either): the client's
// keepalive settings, not its rate. A *googleapi.Error (a REST client's)
// is read by its HTTP status and headers, and by the retryDelay of a
// google.rpc.RetryInfo among the details of its JSON body; so is an
// *apierror.APIError made from one: its gRPC code is gax's mapping of the
// HTTP status, not a code the service sent. A REST answer whose reason is
// rateLimitExceeded or userRateLimitExceeded is throttling whatever its
// status (Compute's rate quotas answer 403 rateLimitExceeded, with a
// message that names the quota). A REST answer whose status is on no list
// (a 403 "User Rate Limit Exceeded") is otherwise classified by its
// message. gax's *apierror.APIError around a retry the Retry option's gate
// refused before sending it is not read: its status is the refusal's,
// which classifies as the governor's error it wraps.
func readError(err error) (errread.Details, bool) {
	if ae, ok := err.(*apierror.APIError); ok {
		if _, own := ae.Unwrap().(*refusedRetry); own {
			return errread.Details{}, false // gax's wrapping of the guard's refusal: the chain reads it
		}
	}
	if e, ok := err.(*googleapi.Error); ok {
		d := errread.Details{Status: e.Code, Header: e.Header, Answer: true}
		if rateLimited(e) {
			d.Kind = errread.Throttled
		}
		if delay, ok := restRetryDelay(e); ok {
			d.RetryAfter, d.HasRetryAfter = delay, true
		}
		return d, true
	}
	if ae, ok := err.(*apierror.APIError); ok && ae.HTTPCode() > 0 {
		d := errread.Details{Status: ae.HTTPCode(), Answer: true}
		if ri := ae.Details().RetryInfo; ri != nil && ri.GetRetryDelay() != nil {
			d.RetryAfter, d.HasRetryAfter = ri.GetRetryDelay().AsDuration(), true
		}
		return d, true
	}
	// *apierror.APIError is a gRPC status error too, with its HTTP code
	// and decoded details.
	se, ok := err.(interface{ GRPCStatus() *status.Status })
	if !ok {
		return errread.Details{}, false
	}
	st := se.GRPCStatus()
	if st == nil {
		return errread.Details{}, false
	}
	d, ok := statusDetails(st.Code(), st.Message())
	if !ok {
		return d, false
	}
	if ae, isAPI := err.(*apierror.APIError); isAPI {
		if ri := ae.Details().RetryInfo; ri != nil && ri.GetRetryDelay() != nil {
			d.RetryAfter, d.HasRetryAfter = ri.GetRetryDelay().AsDuration(), true
		}
	} else if delay, ok := retryDelay(st); ok {
		d.RetryAfter, d.HasRetryAfter = delay, true
	}
	return d, true
}

// rateLimited reports whether a REST error answer says a rate quota was
// exceeded: one of its errors has the reason rateLimitExceeded or
// userRateLimitExceeded, which Google's APIs give to answers to be
// retried after a pause.
func rateLimited(e *googleapi.Error) bool {
	for _, it := range e.Errors {
		if rateLimitReason(it.Reason) {
			return true
		}
	}
	return false
}

// restRetryDelay reads the retryDelay of the first google.rpc.RetryInfo
// among a REST error's details, which googleapi decodes from the JSON
// body's error.details as JSON objects, the way RESTTransport reads it
// from the body: a protobuf Duration in JSON ("30s", "1.500s").
// The details of an *apierror.APIError made from the error are no help
// here: gax decodes the body with a schema that has no errors field, and
// gives no details for a body that has the legacy errors list beside
// them, as Google's front ends answer a rate quota.
func restRetryDelay(e *googleapi.Error) (time.Duration, bool) {
	for _, det := range e.Details {
		m, ok := det.(map[string]any)
		if !ok || m["@type"] != retryInfoType {
			continue
		}
		s, ok := m["retryDelay"].(string)
		if !ok {
			return 0, false
		}
		return parseRetryDelay(s)
	}
	return 0, false
}

// parseRetryDelay reads the retryDelay of a RetryInfo in a JSON error's
// details, a protobuf Duration in JSON ("30s", "1.500s"): as
// time.ParseDuration reads it, or, for one too long for a time.Duration
// (protobuf's go to ten thousand years), saturated, as durationpb's
// AsDuration reads a gRPC status's, so that the governor caps it at
// MaxPause rather than take it for no hint at all.
func parseRetryDelay(s string) (time.Duration, bool) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	var pd durationpb.Duration
	if protojson.Unmarshal([]byte(strconv.Quote(s)), &pd) != nil {
		return 0, false
	}
	return pd.AsDuration(), true
}

// rateLimitReason reports whether a REST error's reason says a rate quota
// was exceeded.
func rateLimitReason(reason string) bool {
	return reason == "rateLimitExceeded" || reason == "userRateLimitExceeded"
}

// statusDetails says what a gRPC code means: the verdict for the four
// codes the GCP retry retries, and the HTTP status of the others, which
// the core's status table decides.
func statusDetails(c codes.Code, msg string) (errread.Details, bool) {
	if credentialsFailed(msg) {
		// grpc's status for the call's credentials, which failed before
		// anything was sent: a local error, no answer.
		return errread.Details{}, false
	}
	switch c {
	case codes.OK, codes.Canceled:
		return errread.Details{}, false
	case codes.DeadlineExceeded:
		if msg == context.DeadlineExceeded.Error() {
			// grpc's status for the caller's own context deadline.
			return errread.Details{Kind: errread.Transient}, true
		}
	case codes.ResourceExhausted:
		if tooLarge, received := messageTooLarge(msg); tooLarge {
			// grpc-go's status for a message over a size limit: the
			// same message is as large on every retry. A received one
			// is an answer; one grpc would not send is not.
			d := errread.Details{Kind: errread.Fatal}
			if received {
				d.Code, d.Answer = c.String(), true
			}
			return d, true
		}
	case codes.Unavailable:
		if strings.Contains(msg, tooManyPings) {
			// grpc's status for a connection the server closed for the
			// client's keepalive pings: a lost connection, no answer.
			return errread.Details{Kind: errread.Transient}, true
		}
	}
	d := errread.Details{Code: c.String(), Status: httpStatus(c), Answer: true}
	switch c {
	case codes.ResourceExhausted, codes.Unavailable:
		d.Kind = errread.Throttled
	case codes.DeadlineExceeded, codes.Internal:
		d.Kind = errread.Transient
	case codes.DataLoss:
		// google-api-core's DataLoss has no HTTP code, so it is on no
		// retry list; retrying does not bring lost data back.
		d.Kind = errread.Fatal
	}
	return d, true
}

// tooManyPings is what grpc-go's Unavailable says of a connection whose
// server sent a GOAWAY of ENHANCE_YOUR_CALM with the debug data
// too_many_pings ("closing transport due to: ..., received prior goaway:
// code: ENHANCE_YOUR_CALM, debug data: \"too_many_pings\""), as a gRPC
// server does when a client pings more often than its keepalive policy
// allows: the client's keepalive settings, not its rate.
const tooManyPings = `code: ENHANCE_YOUR_CALM, debug data: "too_many_pings"`

// messageTooLarge reports whether msg is grpc-go's own for a
// ResourceExhausted over a message size limit (its rpc_util.go,
// stream.go and server.go, v1.67 to v1.85), and whether the message was
// received (an answer larger than the client's MaxCallRecvMsgSize, or the
// server's status for a request larger than its own limit, which it sends
// with the same text, or for its own answer larger than its send limit,
// "grpc: trying to send message larger than max" in v1.67) rather than refused before it was sent ("trying to send
// message larger than max", "grpc: message too large"). Such an error is
// no throttle: retrying sends or receives the same message. Only grpc-go's
// texts whole, their sizes as it formats them (messageSizeTexts), are
// read so: a service's own ResourceExhausted that starts like one and
// goes on ("... larger than max request rate", "... (N vs. M); retry
// later") stays its throttle.
func messageTooLarge(msg string) (tooLarge, received bool) {
	for _, t := range messageSizeTexts {
		if rest, ok := strings.CutPrefix(msg, t.text); ok && t.sizes(rest) {
			return true, t.received
		}
	}
	return false, false
}

// messageSizeTexts are grpc-go's texts for a message over a size limit,
// each with how its sizes follow and whether the message was received.
var messageSizeTexts = []struct {
	text     string
	sizes    func(string) bool
	received bool
}{
	{"grpc: received message larger than max ", twoSizes, true},
	{"grpc: received message larger than max length allowed on current machine ", twoSizes, true},
	{"grpc: message after decompression larger than max ", twoSizes, true},
	{"grpc: received message after decompression larger than max ", twoSizes, true},
	{"grpc: received message after decompression larger than max ", isSize, true},
	// grpc-go v1.67's server's status for its own unary answer over its
	// send limit (its server.go), which the client receives.
	{"grpc: trying to send message larger than max ", twoSizes, true},
	// The client's own, for a request over its send limit, not sent; a
	// server of a later grpc-go sends its status for its answer with the
	// same text, which this reads as the client's.
	{"trying to send message larger than max ", twoSizes, false},
	{"grpc: message too large ", bytesSize, false},
}

// twoSizes reports whether s is grpc-go's "(%d vs. %d)".
func twoSizes(s string) bool {
	s, ok := strings.CutPrefix(s, "(")
	if !ok {
		return false
	}
	a, b, ok := strings.Cut(strings.TrimSuffix(s, ")"), " vs. ")
	return ok && strings.HasSuffix(s, ")") && isSize(a) && isSize(b)
}

// bytesSize reports whether s is grpc-go's "(%d bytes)".
func bytesSize(s string) bool {
	n, ok := strings.CutPrefix(s, "(")
	if !ok {
		return false
	}
	n, ok = strings.CutSuffix(n, " bytes)")
	return ok && isSize(n)
}

// isSize reports whether s is a size as grpc-go's %d formats it: decimal
// digits, a minus sign before them for a negative limit.
func isSize(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// credentialsFailed reports whether msg is grpc's own for a call whose
// per-RPC credentials failed before it was sent (a token that could not
// be had: Unauthenticated for the connection's credentials, Internal for
// the call's), or that would not be sent on an insecure connection.
func credentialsFailed(msg string) bool {
	return strings.HasPrefix(msg, "transport: per-RPC creds failed due to error: ") ||
		strings.HasPrefix(msg, "transport: received per-RPC creds error with illegal status: ") ||
		msg == "transport: cannot send secure credentials on an insecure connection"
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
	case codes.Unknown, codes.Internal:
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

// retryable reports whether the GCP retry retries err by its gRPC code:
// ResourceExhausted, Unavailable, DeadlineExceeded and Internal, but not
// grpc-go's own ResourceExhausted for a message over a size limit
// (messageTooLarge), which every retry would meet again. Whether a retry
// is then allowed is the governor's decision (Guard.Retry).
func retryable(err error) bool {
	switch grpcCode(err) {
	case codes.ResourceExhausted:
		var se interface{ GRPCStatus() *status.Status }
		if found, _ := errread.As(err, &se); found {
			// the status's own message, not a wrapping error's text
			tooLarge, _ := messageTooLarge(se.GRPCStatus().Message())
			return !tooLarge
		}
		return true
	case codes.Unavailable, codes.DeadlineExceeded, codes.Internal:
		return true
	}
	return false
}

// grpcCode is grpc's status.Code(err), read through errread.Read: an
// error whose chain holds a typed nil whose methods panic as grpc reads
// it (a nil *googleapi.Error or *apierror.APIError an application
// wrapped) is Unknown, as grpc reads an error of no status.
func grpcCode(err error) codes.Code {
	c, panicked := errread.Read(err, status.Code)
	if panicked != nil {
		return codes.Unknown
	}
	return c
}

// grpcStatus is grpc's status.Convert(err), read through errread.Read: an
// error whose chain holds a typed nil whose methods panic as grpc reads
// it is a status of Unknown without a message.
func grpcStatus(err error) *status.Status {
	st, panicked := errread.Read(err, status.Convert)
	if panicked != nil {
		return status.New(codes.Unknown, "")
	}
	return st
}

// Unavailable reports whether err says the RPC cannot be used here at all
// (PermissionDenied or Unimplemented): the listing helper then falls back
// from ListAssets to SearchAllResources. An error whose chain panics as
// it is read (a typed nil *googleapi.Error an application wrapped) says
// neither: Unavailable reports false, and does not panic.
func Unavailable(err error) bool {
	switch grpcCode(err) {
	case codes.PermissionDenied, codes.Unimplemented:
		return true
	}
	return false
}
