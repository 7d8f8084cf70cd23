package cloudghttp_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// bothBase answers every request with a response and an error, against
// the http.RoundTripper contract (err must be nil when a response was
// obtained), counting the bodies of its responses closed.
type bothBase struct {
	err    error
	closed *atomic.Int32
}

func (b bothBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{},
		Body: &bothBody{Reader: strings.NewReader("half an answer"), n: b.closed}, Request: req}, b.err
}

type bothBody struct {
	io.Reader
	n *atomic.Int32
}

func (c *bothBody) Close() error { c.n.Add(1); return nil }

// A base transport that returns a response with its error breaks the
// RoundTripper contract; net/http's client then ignores the response
// ("RoundTripper returned a response & error; ignoring response") and
// never closes its body, whose connection stays taken. The Transport
// returns the error alone, as net/http's client reads it, and closes the
// body of the response it drops, once, whether it sent the request again
// (a GET after a reset connection) or not (a POST, a local error).
func TestABaseResponseWithAnErrorIsClosedAndDropped(t *testing.T) {
	for _, c := range []struct {
		name   string
		method string
		err    error
		sends  int32
	}{
		{"local error", http.MethodGet, errors.New("signing failed"), 1},
		{"reset POST", http.MethodPost, syscall.ECONNRESET, 1},
		{"reset GET", http.MethodGet, syscall.ECONNRESET, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			gov := newGov(t, resilience.Config{})
			closed := new(atomic.Int32)
			tr := cloudghttp.NewTransport(bothBase{err: c.err, closed: closed}, scopeOf, cloudghttp.WithGovernor(gov), withAttempts(3))
			req, _ := http.NewRequest(c.method, "https://api.example.com/items", nil)
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				t.Errorf("RoundTrip returned a response (%s) with its error %v", resp.Status, err)
			}
			if err == nil {
				t.Fatal("RoundTrip returned no error")
			}
			if n := closed.Load(); n != c.sends {
				t.Errorf("%d of the base's %d response bodies closed", n, c.sends)
			}
		})
	}
}
