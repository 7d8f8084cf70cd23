package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/errread"
)

// statusErr has only a status, like an HTTP client error.
type statusErr int

func (e statusErr) Error() string       { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusErr) HTTPStatusCode() int { return int(e) }

// codeErr has only a code, like smithy's GenericAPIError.
type codeErr struct{ code, msg string }

func (e codeErr) Error() string        { return e.code + ": " + e.msg }
func (e codeErr) ErrorCode() string    { return e.code }
func (e codeErr) ErrorMessage() string { return e.msg }

// wrapStatus carries a status and wraps the error with the code, like
// smithy's ResponseError around an API error.
type wrapStatus struct {
	status int
	err    error
}

func (e wrapStatus) Error() string       { return fmt.Sprintf("status %d: %v", e.status, e.err) }
func (e wrapStatus) HTTPStatusCode() int { return e.status }
func (e wrapStatus) Unwrap() error       { return e.err }

// statusMsgErr has a status and a message, and no code: an HTTP client's
// error for an answer whose body named no code.
type statusMsgErr struct {
	status int
	msg    string
}

func (e statusMsgErr) Error() string       { return e.msg }
func (e statusMsgErr) HTTPStatusCode() int { return e.status }

// codeErrWrap has a code and wraps another error.
type codeErrWrap struct {
	code string
	err  error
}

func (e codeErrWrap) Error() string     { return e.code + ": " + e.err.Error() }
func (e codeErrWrap) ErrorCode() string { return e.code }
func (e codeErrWrap) Unwrap() error     { return e.err }

// sdkChainMsg is an AWS SDK v2 error chain: an operation error around a
// response error with status around an API error with code and msg.
func sdkChainMsg(code string, status int, msg string) error {
	return opErr{wrapStatus{status, codeErr{code, msg}}}
}

// opErr wraps like smithy's OperationError.
type opErr struct{ err error }

func (e opErr) Error() string { return "operation error EC2: DescribeVpcs, " + e.err.Error() }
func (e opErr) Unwrap() error { return e.err }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// loop unwraps to itself.
type loop struct{}

func (l *loop) Error() string { return "loop" }
func (l *loop) Unwrap() error { return l }

func TestClassifyTable(t *testing.T) {
	sdkChain := func(code string, status int) error {
		return opErr{wrapStatus{status, codeErr{code, "msg"}}}
	}
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, Fatal},
		{"Throttling", codeErr{"Throttling", "Rate exceeded"}, Throttled},
		{"ThrottlingException", codeErr{"ThrottlingException", ""}, Throttled},
		{"RequestLimitExceeded via SDK chain", sdkChain("RequestLimitExceeded", 503), Throttled},
		{"TooManyRequestsException", codeErr{"TooManyRequestsException", ""}, Throttled},
		{"SlowDown", codeErr{"SlowDown", ""}, Throttled},
		{"RateExceeded", codeErr{"RateExceeded", ""}, Throttled},
		{"EC2ThrottledException", codeErr{"EC2ThrottledException", ""}, Throttled},
		{"ProvisionedThroughputExceededException", codeErr{"ProvisionedThroughputExceededException", ""}, Throttled},
		{"Azure RateLimiting", codeErr{"RateLimiting", ""}, Throttled},
		{"Azure SubscriptionRequestsThrottled", sdkChain("SubscriptionRequestsThrottled", 429), Throttled},
		{"Azure TenantRequestsThrottled", sdkChain("TenantRequestsThrottled", 429), Throttled},
		{"GCP ResourceExhausted", codeErr{"ResourceExhausted", ""}, Throttled},
		{"GCP TooManyRequests", codeErr{"TooManyRequests", ""}, Throttled},
		{"429 without code", statusErr(429), Throttled},
		{"503 without code", statusErr(503), Throttled},
		{"429 with unknown code (Azure Compute OperationNotAllowed)", sdkChain("OperationNotAllowed", 429), Throttled},
		{"503 with unknown code (Storage ServerBusy)", sdkChain("ServerBusy", 503), Throttled},
		{"LimitExceededException about a rate", codeErr{"LimitExceededException", "Rate exceeded for the account"}, Throttled},
		{"LimitExceededException about too many", codeErr{"LimitExceededException", "Too many requests"}, Throttled},
		{"LimitExceededException in TPS", codeErr{"LimitExceededException", "limit of 5 TPS reached"}, Throttled},
		{"LimitExceededException about resources", codeErr{"LimitExceededException", "Cannot exceed quota for PoliciesPerRole: 10"}, Fatal},
		{"LimitExceededException 'separate'", codeErr{"LimitExceededException", "use a separate account"}, Fatal},
		{"LimitExceededException 429 about resources: the message decides, not the status", sdkChainMsg("LimitExceededException", 429, "Cannot exceed quota for PoliciesPerRole: 10"), Fatal},
		{"LimitExceededException 429 about a rate", sdkChainMsg("LimitExceededException", 429, "The request exceeded the rate limit"), Throttled},

		{"ServiceUnavailable code wins over 503", sdkChain("ServiceUnavailable", 503), Transient},
		{"ServiceUnavailableException", sdkChain("ServiceUnavailableException", 503), Transient},
		{"RequestTimeoutException", codeErr{"RequestTimeoutException", ""}, Transient},
		{"RequestTimeout", codeErr{"RequestTimeout", ""}, Transient},
		{"InternalError", sdkChain("InternalError", 500), Transient},
		{"InternalFailure", sdkChain("InternalFailure", 500), Transient},
		{"GCP DeadlineExceeded", codeErr{"DeadlineExceeded", ""}, Transient},
		{"GCP InternalServerError", codeErr{"InternalServerError", ""}, Transient},
		{"PriorRequestNotComplete (botocore's throttle list)", codeErr{"PriorRequestNotComplete", ""}, Throttled},
		{"Azure RetryableErrorDueToAnotherOperation 429", sdkChain("RetryableErrorDueToAnotherOperation", 429), Transient},
		{"408", statusErr(408), Transient},
		{"500", statusErr(500), Transient},
		{"502", statusErr(502), Transient},
		{"504", statusErr(504), Transient},
		{"500 with unknown code", sdkChain("SomethingBroke", 500), Transient},
		{"408 with unknown code", sdkChain("SomethingSlow", 408), Transient},
		{"502 with unknown code", sdkChain("SomethingBroke", 502), Transient},
		{"504 with unknown code", sdkChain("SomethingSlow", 504), Transient},
		{"400 with unknown code", sdkChain("SomethingWrong", 400), Fatal},
		{"unknown code without a status", codeErr{"SomethingWrong", ""}, Fatal},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, Transient},
		{"connection reset", &url.Error{Op: "Post", URL: "https://ec2", Err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, Transient},
		{"connection refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, Transient},
		{"transport deadline", fmt.Errorf("send: %w", context.DeadlineExceeded), Transient},
		{"unexpected EOF", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), Transient},
		{"connection closed before any answer", &url.Error{Op: "Post", URL: "https://ec2", Err: io.EOF}, Transient},
		{"SDK send error on a connection", fmt.Errorf("send: %w", connErr{}), Transient},
		{"a bare EOF is local", fmt.Errorf("decode: %w", io.EOF), Fatal},
		{"the connection closed under the answer's body", fmt.Errorf("deserialization failed, failed to decode response body, %w",
			&net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}), Transient},

		// A status on no list without a code, or with the AWS SDK's
		// placeholder code, decides nothing: the message does.
		{"400 without a code: Throttling: Rate exceeded", statusMsgErr{400, "Throttling: Rate exceeded"}, Throttled},
		{"400 without a code: too many requests", statusMsgErr{400, "too many requests for this key"}, Throttled},
		{"403 without a code: slow down", statusMsgErr{403, "Please slow down"}, Throttled},
		{"400 without a code, no phrase", statusMsgErr{400, "Bad Request"}, Fatal},
		{"404 without a code, no phrase", statusMsgErr{404, "Not Found"}, Fatal},
		{"UnknownError 400: Rate exceeded (AWS SDK chain)", sdkChainMsg("UnknownError", 400, "Rate exceeded"), Throttled},
		{"UnknownError 400: Throttling: Rate exceeded", sdkChainMsg("UnknownError", 400, "Throttling: Rate exceeded"), Throttled},
		{"UnknownError 400 with its own name for a message", sdkChainMsg("UnknownError", 400, "UnknownError"), Fatal},
		{"UnknownError 503: the status decides", sdkChainMsg("UnknownError", 503, "UnknownError"), Throttled},
		{"UnknownError 500: the status decides", sdkChainMsg("UnknownError", 500, "UnknownError"), Transient},
		{"UnknownError 500 about throttling: the status decides", sdkChainMsg("UnknownError", 500, "throttled"), Transient},
		{"UnknownError alone: Rate exceeded", codeErr{"UnknownError", "Rate exceeded"}, Throttled},
		{"UnknownError above a real code: the code decides", wrapStatus{400, codeErrWrap{"UnknownError", codeErr{"AccessDenied", "rate exceeded"}}}, Fatal},
		{"a 400 whose body was cut off: a transport failure", wrapStatus{400, fmt.Errorf("deserialize: %w", io.ErrUnexpectedEOF)}, Transient},
		{"a code on no list with a throttling message: the code decides", sdkChainMsg("InvalidParameterValue", 400, "Rate exceeded"), Fatal},

		{"AccessDenied", sdkChain("AccessDenied", 403), Fatal},
		{"ValidationException", codeErr{"ValidationException", "bad"}, Fatal},
		{"404", statusErr(404), Fatal},
		{"501", statusErr(501), Fatal},
		{"plain error", errors.New("boom"), Fatal},
		{"context canceled", context.Canceled, Fatal},

		{"message: Rate exceeded", errors.New("Rate exceeded"), Throttled},
		{"message: throttling", errors.New("request was Throttled by the server"), Throttled},
		{"message: too many requests", errors.New("got Too Many Requests"), Throttled},
		{"message: https is not tps", errors.New("dial https://example.com: no route to host"), Fatal},
		{"message: separate is not rate", errors.New("separate accounts"), Fatal},
		{"message: accelerate is not rate", errors.New("accelerate exceeded"), Fatal},
		{"message phrase after a code: the code wins", codeErr{"AccessDenied", "rate exceeded"}, Fatal},

		{"HTTP/2 RST_STREAM of ENHANCE_YOUR_CALM: the server refuses the rate", h2Err("stream error: stream ID 3; ENHANCE_YOUR_CALM; received from peer"), Throttled},
		{"net/http's GOAWAY of ENHANCE_YOUR_CALM for too_many_pings: a lost connection", h2Err(`http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=ENHANCE_YOUR_CALM, debug="too_many_pings"`), Transient},
		{"grpc-go's GOAWAY of ENHANCE_YOUR_CALM for too_many_pings: a lost connection", h2Err(`rpc error: code = Unavailable desc = closing transport due to: connection error: desc = "error reading from server: EOF", received prior goaway: code: ENHANCE_YOUR_CALM, debug data: "too_many_pings"`), Transient},
		{"too_many_pings without ENHANCE_YOUR_CALM says nothing", h2Err("upstream: too_many_pings"), Fatal},

		{"own: circuit open", &CircuitOpenError{Scope: ec2Vpcs}, Throttled},
		{"own: budget wrapping a 404", &RetryBudgetExhaustedError{Scope: ec2Vpcs, Err: statusErr(404)}, Throttled},
		{"own: deadline", &DeadlineExceededError{Scope: ec2Vpcs}, Transient},
		{"own, wrapped", fmt.Errorf("collect: %w", &CircuitOpenError{Scope: ec2Vpcs}), Throttled},
		{"joined: a throttle among others", errors.Join(errors.New("x"), codeErr{"Throttling", ""}), Throttled},
		{"cycle", &loop{}, Fatal},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("%s: Classify = %v, want %v", c.name, got, c.want)
		}
	}
}

// A server that closes the connection before any answer: net/http's client
// returns io.EOF inside a *url.Error, a transient error, which a bare
// io.EOF (the end of a decoder's input) is not.
func TestConnectionClosedBeforeAnyAnswerIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 4096)) // the request, then no answer
			c.Close()
		}
	}()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	_, err = client.Get("http://" + ln.Addr().String())
	var ue *url.Error
	if !errors.As(err, &ue) || !errors.Is(err, io.EOF) {
		t.Fatalf("the client returned %#v, want io.EOF inside a *url.Error", err)
	}
	if k := Classify(err); k != Transient {
		t.Fatalf("%v: %v, want TRANSIENT", err, k)
	}
	if k := Classify(fmt.Errorf("decode: %w", io.EOF)); k != Fatal {
		t.Fatalf("a bare EOF: %v, want FATAL", k)
	}
}

func TestChainDepthIsLimited(t *testing.T) {
	var err error = codeErr{"Throttling", ""}
	for range 9 {
		err = fmt.Errorf("w: %w", err)
	}
	if Classify(err) != Throttled {
		t.Fatal("code 9 levels down not found")
	}
	for range 5 {
		err = fmt.Errorf("w: %w", err)
	}
	if k, ok := ClassifyStrict(err); ok {
		t.Fatalf("code 14 levels down found (%v): the walk is not depth-limited", k)
	}
}

func TestClassifyStrict(t *testing.T) {
	if _, ok := ClassifyStrict(errors.New("Rate exceeded")); ok {
		t.Fatal("strict classification searched the message")
	}
	if k, ok := ClassifyStrict(statusErr(429)); !ok || k != Throttled {
		t.Fatal("strict: 429")
	}
	if k, ok := ClassifyStrict(codeErr{"AccessDenied", ""}); !ok || k != Fatal {
		t.Fatal("strict: AccessDenied says Fatal")
	}
	if k, ok := ClassifyStrict(&net.OpError{Op: "read", Err: timeoutErr{}}); !ok || k != Transient {
		t.Fatal("strict: timeout")
	}
	if _, ok := ClassifyStrict(nil); ok {
		t.Fatal("strict: nil")
	}
	// A status on no list without a code, or with UnknownError, says
	// nothing; the message search is left to Classify.
	for _, err := range []error{
		statusMsgErr{400, "Throttling: Rate exceeded"},
		statusErr(404),
		sdkChainMsg("UnknownError", 400, "Rate exceeded"),
		codeErr{"UnknownError", "UnknownError"},
	} {
		if k, ok := ClassifyStrict(err); ok {
			t.Errorf("strict: %v says %v, want nothing", err, k)
		}
	}
	if k, ok := ClassifyStrict(sdkChainMsg("UnknownError", 429, "UnknownError")); !ok || k != Throttled {
		t.Error("strict: UnknownError 429 says nothing; the status should")
	}
}

func TestIsProviderAnswer(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{codeErr{"AccessDenied", ""}, true},
		{statusErr(404), true},
		{fmt.Errorf("x: %w", statusErr(503)), true},
		{errors.New("boom"), false},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
		{context.Canceled, false},
		{&CircuitOpenError{Err: statusErr(503)}, false},
		{&RetryBudgetExhaustedError{Err: codeErr{"Throttling", ""}}, false},
		{codeErr{"UnknownError", "UnknownError"}, true}, // the SDK read an error answer
		{statusMsgErr{400, "Throttling: Rate exceeded"}, true},
		{nil, false},
	} {
		if got := IsProviderAnswer(c.err); got != c.want {
			t.Errorf("IsProviderAnswer(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestDescribeError(t *testing.T) {
	if got := DescribeError(codeErr{"Throttling", "Rate exceeded"}); got != "throttled: Throttling: Rate exceeded" {
		t.Fatal(got)
	}
	if got := DescribeError(codeErr{"AccessDenied", "no"}); got != "AccessDenied: no" {
		t.Fatal(got)
	}
	if got := DescribeError(sdkChainMsg("UnknownError", 400, "Rate exceeded")); got != "throttled: operation error EC2: DescribeVpcs, status 400: UnknownError: Rate exceeded" {
		t.Fatal(got)
	}
	if DescribeError(nil) != "" {
		t.Fatal("nil")
	}
}

func TestKindString(t *testing.T) {
	if Fatal.String() != "FATAL" || Transient.String() != "TRANSIENT" || Throttled.String() != "THROTTLED" {
		t.Fatal("Kind strings")
	}
}

// sdkStruct is a shape with no method the core reads, like
// azcore.ResponseError: fields only.
type sdkStruct struct {
	StatusCode int
	Code       string
	Raw        http.Header
	Delay      time.Duration
}

func (e *sdkStruct) Error() string { return "sdk error " + e.Code }

// connErr is shaped like the AWS SDK's RequestSendError: it says it is a
// connection error.
type connErr struct{}

func (connErr) Error() string         { return "request send failed: connection reset" }
func (connErr) ConnectionError() bool { return true }

// registerSDKStruct registers TestRegisteredReader's reader once per
// process: a reader cannot be unregistered, and -count=2 runs the test
// twice.
var registerSDKStruct sync.Once

func TestRegisteredReader(t *testing.T) {
	err := fmt.Errorf("call: %w", &sdkStruct{StatusCode: 429, Code: "Unknown", Raw: http.Header{"Retry-After": {"9"}}})
	registerSDKStruct.Do(func() {
		if Classify(err) != Fatal {
			t.Fatal("unreadable shape classified before registration")
		}
		errread.Register(func(e error) (errread.Details, bool) {
			s, ok := e.(*sdkStruct)
			if !ok {
				return errread.Details{}, false
			}
			d := errread.Details{Code: s.Code, Status: s.StatusCode, Header: s.Raw}
			if s.Code == "Exhausted" {
				d.Kind = errread.Throttled
				d.RetryAfter, d.HasRetryAfter = s.Delay, true
			}
			return d, true
		})
	})
	if Classify(err) != Throttled {
		t.Fatal("registered shape: a 429 with an unknown code is Throttled")
	}
	if d, ok := RetryAfter(err); !ok || d != 9*time.Second {
		t.Fatalf("RetryAfter %v %v, want 9s from the reader's headers", d, ok)
	}
	if !IsProviderAnswer(err) {
		t.Fatal("registered shape is an answer")
	}
	grpcLike := &sdkStruct{Code: "Exhausted", Delay: 3 * time.Second}
	if Classify(grpcLike) != Throttled {
		t.Fatal("reader's Kind ignored")
	}
	if d, ok := RetryAfter(grpcLike); !ok || d != 3*time.Second {
		t.Fatalf("reader's RetryAfter %v %v", d, ok)
	}
}

// sdkShaped gives a cloudg error an SDK's shape, as an integration does.
type sdkShaped struct{ err error }

func (e *sdkShaped) Error() string       { return e.err.Error() }
func (e *sdkShaped) Unwrap() error       { return e.err }
func (e *sdkShaped) ErrorCode() string   { return "Throttling" }
func (e *sdkShaped) HTTPStatusCode() int { return 400 }
func (e *sdkShaped) WrapsGovernorError() {}

func TestGovernorErrorWrapper(t *testing.T) {
	for _, err := range []error{
		&sdkShaped{&CircuitOpenError{Scope: ec2Vpcs}},
		fmt.Errorf("op: %w", &sdkShaped{&RetryBudgetExhaustedError{Scope: ec2Vpcs, Err: statusErr(503)}}),
	} {
		if IsProviderAnswer(err) {
			t.Errorf("%v: a wrapped cloudg error is a provider answer", err)
		}
		if Classify(err) != Throttled {
			t.Errorf("%v: %v", err, Classify(err))
		}
	}
	if k := Classify(&sdkShaped{&DeadlineExceededError{Scope: ec2Vpcs}}); k != Transient {
		t.Fatalf("wrapped deadline error: %v, want the wrapped error's kind", k)
	}
}
