package cloudghttp_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// A request without a URL is an error of net/http's Transport ("http:
// nil Request.URL"), which closes its body, not a panic. The Transport
// governs no such request (no scope can be read from it): it hands it to
// the base, which answers as net/http's does, whatever the scope
// function (GitHub's reads the URL's path).
func TestARequestWithoutAURLIsTheBasesError(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	for name, scope := range map[string]func(*http.Request) resilience.Scope{
		"GitHub": cloudghttp.GitHub("octo"),
		"own":    func(r *http.Request) resilience.Scope { return resilience.Scope{Provider: "acme", Service: r.URL.Host} },
	} {
		t.Run(name, func(t *testing.T) {
			closed := new(atomic.Int32)
			req := &http.Request{Method: http.MethodPost, Header: http.Header{},
				Body: &bothBody{Reader: strings.NewReader("{}"), n: closed}}
			var (
				resp *http.Response
				err  error
			)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("RoundTrip panicked: %v", r)
					}
				}()
				resp, err = cloudghttp.NewTransport(nil, scope, cloudghttp.WithGovernor(gov)).RoundTrip(req)
			}()
			if resp != nil || err == nil {
				t.Fatalf("RoundTrip returned %v, %v; want net/http's error", resp, err)
			}
			if n := closed.Load(); n != 1 {
				t.Errorf("the request's body closed %d times, want once", n)
			}
		})
	}
}
