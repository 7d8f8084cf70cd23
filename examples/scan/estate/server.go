package estate

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"time"
)

// Server is an estate served over HTTP on a loopback port. Make one with
// Start; the zero Server serves nothing and is not usable (Close panics).
// Its URL may be read from any goroutine; Close it once (a second Close
// blocks forever), after which the estate itself can still be used.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>: the
	// BaseEndpoint of the aws.Config of the clients that call the estate.
	URL string

	srv    *http.Server
	served chan error
}

// Start serves e on 127.0.0.1 at a free port until Close.
func Start(e *Estate) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:    "http://" + ln.Addr().String(),
		srv:    &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second},
		served: make(chan error, 1),
	}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server: it closes the listener and every connection, so
// that requests still in flight fail.
func (s *Server) Close() error {
	err := s.srv.Close()
	if serr := <-s.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// Transport is an http.RoundTripper that serves each request with Estate
// in the goroutine that sends it: no listener, no connection, no
// goroutine of its own. Any URL reaches the estate. It is for tests: an
// SDK client whose HTTP client uses it can run inside a testing/synctest
// bubble, in virtual time (a loopback Server's goroutines wait on the
// network, which no bubble sees as blocked). It is safe for concurrent use
// if Estate is; the zero Transport is not usable.
type Transport struct{ Estate *Estate }

// RoundTrip serves r: the context's error if it is done already, else the
// estate's answer, its body read from memory.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		defer r.Body.Close()
	}
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	in := r.Clone(r.Context()) // the handler's view of it: a body, never nil
	if in.Body == nil {
		in.Body = http.NoBody
	}
	w := httptest.NewRecorder()
	t.Estate.ServeHTTP(w, in)
	resp := w.Result()
	resp.Request = r
	return resp, nil
}
