package errread

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// sdkResponseError, sdkOperationError and sdkAPIError are the shape of
// aws-sdk-go-v2's chain: an operation error wrapping a response error
// wrapping the API error.
type (
	sdkOperationError struct{ err error }
	sdkResponseError  struct {
		status int
		err    error
	}
	sdkAPIError struct{ code string }
)

func (e *sdkOperationError) Error() string { return "operation error: " + e.err.Error() }
func (e *sdkOperationError) Unwrap() error { return e.err }
func (e *sdkResponseError) Error() string  { return fmt.Sprint("status ", e.status, ": ", e.err) }
func (e *sdkResponseError) Unwrap() error  { return e.err }
func (e *sdkAPIError) Error() string       { return e.code }

// sdkChain is a typical SDK error: three levels, the API error last.
var sdkChain error = &sdkOperationError{err: &sdkResponseError{status: http.StatusTooManyRequests, err: &sdkAPIError{code: "Throttling"}}}

// sink keeps the benchmarks' results alive.
var sink bool

func BenchmarkAs(b *testing.B) {
	b.Run("errread", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var target *sdkAPIError
			sink, _ = As(sdkChain, &target)
		}
	})
	b.Run("errors", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var target *sdkAPIError
			sink = errors.As(sdkChain, &target)
		}
	})
	b.Run("errread/none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var target *http.ProtocolError
			sink, _ = As(sdkChain, &target)
		}
	})
	b.Run("errors/none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var target *http.ProtocolError
			sink = errors.As(sdkChain, &target)
		}
	})
}

func BenchmarkIs(b *testing.B) {
	b.Run("errread", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink, _ = Is(sdkChain, http.ErrHandlerTimeout)
		}
	})
	b.Run("errors", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = errors.Is(sdkChain, http.ErrHandlerTimeout)
		}
	})
}
