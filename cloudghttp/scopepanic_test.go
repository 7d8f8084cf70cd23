package cloudghttp_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// A scope function (the caller's code) that panics reaches the caller as
// it was, and leaves the request's body closed, as RoundTrip closes it in
// every case: the request is never sent, and its body (a file, a pipe's
// end) would otherwise stay open behind the panic.
func TestAPanickingScopeFunctionClosesTheBody(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	closed := new(atomic.Int32)
	tr := cloudghttp.NewTransport(newMem(&fakeAPI{}), func(*http.Request) resilience.Scope { panic(boom) }, cloudghttp.WithGovernor(gov))
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/items", nil)
	req.Body = &bothBody{Reader: strings.NewReader("{}"), n: closed}
	var got any
	func() {
		defer func() { got = recover() }()
		resp, err := tr.RoundTrip(req)
		t.Errorf("RoundTrip returned %v, %v; want the scope function's panic", resp, err)
	}()
	if got != boom {
		t.Fatalf("the caller got %v, want the panic's own value", got)
	}
	if n := closed.Load(); n != 1 {
		t.Errorf("the request's body closed %d times, want once", n)
	}
}
