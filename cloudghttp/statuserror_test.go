//go:build go1.25

package cloudghttp_test

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// The StatusError of an answer says what the server answered, whatever
// the caller does with the response and its request afterwards: an
// observer may keep an event and read its error from any goroutine, while
// the caller owns the response (httputil.ReverseProxy deletes hop-by-hop
// headers from it) and the request (a loop may point it at the next page).
func TestStatusErrorKeepsWhatTheServerAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.forever(reply{status: 429, header: http.Header{"Retry-After": {"1"}}, body: "slow down"})
		var kept []observe.Event
		gov, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(observe.Func(func(e observe.Event) { kept = append(kept, e) })))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
		resp, err := client(newMem(f), gov, withAttempts(1)).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		resp.Header.Del("Retry-After")
		req.URL.Path = "/items/next"

		var seen int
		for _, e := range kept {
			var se *cloudghttp.StatusError
			if !errors.As(e.Err, &se) {
				continue
			}
			seen++
			if got := se.Header().Get("Retry-After"); got != "1" {
				t.Errorf("%v event: the error's Retry-After is %q once the caller edited the response, want the answer's %q", e.Kind, got, "1")
			}
			if got, want := se.Error(), "GET http://api.test/items: 429 Too Many Requests"; got != want {
				t.Errorf("%v event: the error says %q once the caller edited the request, want %q", e.Kind, got, want)
			}
		}
		if seen == 0 {
			t.Fatal("no event carried the answer's *StatusError")
		}
	})
}

// statusErrors sends req through a Transport over base whose governor
// keeps its events, and returns the messages of the *StatusErrors the
// events carry.
func statusErrors(t *testing.T, base http.RoundTripper, req *http.Request) []string {
	t.Helper()
	var kept []observe.Event
	gov, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(observe.Func(func(e observe.Event) { kept = append(kept, e) })))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client(base, gov, withAttempts(1)).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	var msgs []string
	for _, e := range kept {
		var se *cloudghttp.StatusError
		if errors.As(e.Err, &se) {
			msgs = append(msgs, se.Error())
		}
	}
	if len(msgs) == 0 {
		t.Fatal("no event carried the answer's *StatusError")
	}
	return msgs
}

// A request without a method is a GET, as net/http sends it (and as the
// Transport names it in a transport error's *url.Error): its StatusError
// says GET, not nothing.
func TestStatusErrorOfARequestWithoutMethodSaysGET(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.forever(status(503))
		u, _ := url.Parse("http://api.test/items?page=2")
		req := &http.Request{URL: u, Header: http.Header{}} // Method "": GET
		for _, got := range statusErrors(t, newMem(f), req) {
			if want := "GET http://api.test/items: 503 Service Unavailable"; got != want {
				t.Errorf("the error says %q, want %q", got, want)
			}
		}
	})
}

// bareStatus is a base transport whose answers carry a status code and no
// status line (Response.Status ""), as a hand-made http.Response has.
type bareStatus struct{ base http.RoundTripper }

func (b bareStatus) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(req)
	if err == nil {
		resp.Status = ""
	}
	return resp, err
}

// An answer without a status line (a base transport that sets only
// StatusCode) is named by its code and reason phrase, as net/http's client
// names a status ("429 Too Many Requests"), not by the phrase alone.
func TestStatusErrorOfAnAnswerWithoutStatusLineNamesItsCode(t *testing.T) {
	for code, want := range map[int]string{
		429: "GET http://api.test/items: 429 Too Many Requests",
		503: "GET http://api.test/items: 503 Service Unavailable",
	} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.forever(reply{status: code, body: "no"})
				req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
				for _, got := range statusErrors(t, bareStatus{newMem(f)}, req) {
					if got != want {
						t.Errorf("the error says %q, want %q", got, want)
					}
				}
			})
		})
	}
}
