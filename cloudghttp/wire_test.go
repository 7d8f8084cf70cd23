//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// What the Transport owes net/http as a RoundTripper, and the connection
// failures it sees before net/http's client wraps them.

// A connection closed before any answer reaches the Transport as a bare
// io.EOF (net/http's client wraps it in a *url.Error only after
// RoundTrip): a transient failure of the transport, retried, not a local
// error that ends the call.
func TestConnectionClosedBeforeAnyAnswerIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(reply{fail: io.EOF})
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatalf("error %v, want the retry's 200", err)
		}
		readAll(t, resp)
		tot := gov.Summary(stats).Totals
		if resp.StatusCode != 200 || len(f.recorded()) != 2 || tot.TransientErrors != 1 || tot.Errored != 0 {
			t.Fatalf("status %d after %d attempts, totals %v; want 200 after 2, one transient error", resp.StatusCode, len(f.recorded()), tot)
		}
	})
}

// A connection or stream lost under the request in the ways net/http tells
// only in its errors' text (types it does not export) is transient, and a
// GET is retried: an HTTP/2 connection closed after a GOAWAY, or for want
// of an answer to its pings, an HTTP/1 connection the server closed as idle
// as the request was written, and an HTTP/2 stream the server reset with
// INTERNAL_ERROR. A POST is not sent again: the server may
// have acted on it. The errors are net/http's messages, as its transport
// returns them.
func TestConnectionsLostUnderTheRequestAreTransient(t *testing.T) {
	for _, msg := range []string{
		"http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=\"\"",
		"http2: client connection lost",
		"http: server closed idle connection",
		"stream error: stream ID 1; INTERNAL_ERROR; received from peer",
	} {
		t.Run(msg, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for _, method := range []string{http.MethodGet, http.MethodPost} {
					f := &fakeAPI{}
					f.script(reply{fail: errors.New(msg)})
					gov := newGov(t, resilience.Config{})
					ctx, stats := resilience.WithStats(context.Background())
					req, _ := http.NewRequestWithContext(ctx, method, "http://api.test/items", nil)
					resp, err := client(newMem(f), gov, quick).Do(req)
					tot := gov.Summary(stats).Totals
					if method == http.MethodGet {
						if err != nil {
							t.Fatalf("GET: error %v, want the retry's 200", err)
						}
						readAll(t, resp)
						if len(f.recorded()) != 2 || tot.TransientErrors != 1 || tot.Errored != 0 {
							t.Fatalf("GET: %d attempts, totals %v; want 2, one transient error", len(f.recorded()), tot)
						}
						continue
					}
					if err == nil {
						readAll(t, resp)
					}
					if err == nil || len(f.recorded()) != 1 || tot.TransientErrors != 1 || tot.Errored != 0 {
						t.Fatalf("POST: error %v after %d attempts, totals %v; want the error after 1, one transient error", err, len(f.recorded()), tot)
					}
				}
			})
		})
	}
}

// The same over 127.0.0.1: a server that closes its first connection
// without answering; net/http's transport does not retry a request on a
// fresh connection, the governed one does.
func TestConnectionClosedOverLoopbackIsRetried(t *testing.T) {
	srv := loopback(t, &fakeAPI{})
	addr, conns := failFirstConnection(t, srv, func(c net.Conn) {
		_, _ = c.Read(make([]byte, 4096)) // the request read, no answer
	})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := client(tr, newGov(t, resilience.Config{}), quick).Get("http://" + addr + "/items")
	if err != nil {
		t.Fatalf("error %v, want the retry's 200", err)
	}
	if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" || conns.Load() != 2 {
		t.Fatalf("status %d body %q on %d connections, want 200 ok on 2", resp.StatusCode, got, conns.Load())
	}
}

// An HTTP/2 server that sends GOAWAY and closes the connection while a
// request is in flight (a server restarting, a load balancer draining)
// fails it as a connection reset does, and it is retried; net/http's
// transport retries by itself only the requests the GOAWAY says were not
// processed.
func TestGoAwayWithTheRequestInFlightIsRetried(t *testing.T) {
	addr, conns := failFirstConnection(t, h2cLoopback(t), func(c net.Conn) {
		serveHeaders(c, func([]byte) bool { return false }) // until the request's HEADERS
		// GOAWAY, last stream 1 (the request's), NO_ERROR; then the close.
		_, _ = c.Write([]byte{0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	})
	tr := h2cTransport(t)
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/items", nil)
	resp, err := client(tr, gov, quick).Do(req)
	if err != nil {
		t.Fatalf("error %v, want the retry's 200", err)
	}
	readAll(t, resp)
	if tot := gov.Summary(stats).Totals; resp.StatusCode != 200 || resp.ProtoMajor != 2 || conns.Load() != 2 || tot.TransientErrors != 1 {
		t.Fatalf("%s %d on %d connections, totals %v; want HTTP/2 200 on 2, one transient error", resp.Proto, resp.StatusCode, conns.Load(), tot)
	}
}

// An HTTP/2 server that resets the request's stream with INTERNAL_ERROR
// (it failed the request midway) fails it with an error net/http never
// retries; the GET is retried, here on the same connection, and answered.
func TestStreamResetWithInternalErrorIsRetried(t *testing.T) {
	var streams atomic.Int32
	addr, conns := failFirstConnection(t, h2cLoopback(t), func(c net.Conn) {
		serveHeaders(c, func(id []byte) bool {
			if streams.Add(1) == 1 {
				// RST_STREAM on the request's stream, INTERNAL_ERROR (2).
				_, _ = c.Write(append([]byte{0, 0, 4, 3, 0, id[0], id[1], id[2], id[3]}, 0, 0, 0, 2))
				return true
			}
			// HEADERS, END_STREAM|END_HEADERS, ":status: 200" (HPACK's
			// static entry 8); then wait for the client to close.
			_, _ = c.Write([]byte{0, 0, 1, 1, 5, id[0], id[1], id[2], id[3], 0x88})
			return true
		})
	})
	tr := h2cTransport(t) // its cleanup before the listener's: ends first
	gov := newGov(t, resilience.Config{})
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		streams.Store(0)
		// A bound, not a timing: a second connection would wait unaccepted.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx, stats := resilience.WithStats(ctx)
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+addr+"/items", nil)
		resp, err := client(tr, gov, quick).Do(req)
		tot := gov.Summary(stats).Totals
		if method == http.MethodPost {
			if err == nil || !strings.Contains(err.Error(), "INTERNAL_ERROR") || streams.Load() != 1 || tot.TransientErrors != 1 || tot.Errored != 0 {
				t.Fatalf("POST: error %v after %d streams, totals %v; want the reset after 1 stream, one transient error", err, streams.Load(), tot)
			}
			continue
		}
		if err != nil {
			t.Fatalf("GET: error %v, want the retry's 200", err)
		}
		readAll(t, resp)
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 || streams.Load() != 2 || conns.Load() != 1 || tot.TransientErrors != 1 {
			t.Fatalf("GET: %s %d after %d streams on %d connections, totals %v; want HTTP/2 200 after 2 streams on 1, one transient error",
				resp.Proto, resp.StatusCode, streams.Load(), conns.Load(), tot)
		}
	}
}

// h2cLoopback is an HTTP/2 server without TLS (h2c) on 127.0.0.1 that
// answers as fakeAPI does.
func h2cLoopback(t *testing.T) *loopbackServer {
	t.Helper()
	srv := httptest.NewUnstartedServer(&fakeAPI{})
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return &loopbackServer{Server: srv}
}

// h2cTransport is net/http's transport speaking HTTP/2 without TLS; its
// idle connections close when the test ends.
func h2cTransport(t *testing.T) *http.Transport {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// serveHeaders plays the server's side of an HTTP/2 connection by hand:
// it reads the client's preface, sends an empty SETTINGS frame, and reads
// the frames that follow, passing the stream ID (4 bytes) of each HEADERS
// frame, a request, to request, until request returns false or the
// connection ends.
func serveHeaders(c net.Conn, request func(id []byte) bool) {
	_, _ = io.ReadFull(c, make([]byte, len(http2Preface)))
	_, _ = c.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0}) // SETTINGS, empty
	for hdr := make([]byte, 9); ; {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		if _, err := io.CopyN(io.Discard, c, int64(hdr[0])<<16|int64(hdr[1])<<8|int64(hdr[2])); err != nil {
			return
		}
		if hdr[3] == 1 && !request(hdr[5:9]) { // HEADERS
			return
		}
	}
}

// http2Preface is what an HTTP/2 client sends first on a connection.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// failFirstConnection listens on 127.0.0.1 and passes the first connection
// to first, then closes it; every later one is relayed to srv. It returns
// the address and the count of connections accepted.
func failFirstConnection(t *testing.T, srv *loopbackServer, first func(net.Conn)) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	conns := new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if conns.Add(1) == 1 {
				first(c)
				_ = c.Close()
				continue
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String(), conns
}

// The response of a retried request names the caller's request, as
// net/http's own transport has it after its retries, not the copy the
// retry was sent as.
func TestRetriedResponseCarriesTheCallersRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(503, "Retry-After", "1"))
		req, _ := http.NewRequest(http.MethodPut, "http://api.test/items/1", body(`{"a":1}`))
		resp, err := client(newMem(f), newGov(t, resilience.Config{}), quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != 200 || resp.Request != req {
			t.Fatalf("status %d, response's request %p, want 200 and the caller's %p", resp.StatusCode, resp.Request, req)
		}
	})
}

// idleCounter is a base transport that counts CloseIdleConnections.
type idleCounter struct {
	http.RoundTripper
	closed atomic.Int32
}

func (c *idleCounter) CloseIdleConnections() { c.closed.Add(1) }

// http.Client.CloseIdleConnections reaches the base transport through the
// Transport, as it reaches net/http's own.
func TestCloseIdleConnectionsReachesTheBase(t *testing.T) {
	base := &idleCounter{RoundTripper: http.DefaultTransport}
	c := &http.Client{Transport: cloudghttp.NewTransport(base, scopeOf)}
	c.CloseIdleConnections()
	if n := base.closed.Load(); n != 1 {
		t.Fatalf("base's CloseIdleConnections called %d times, want 1", n)
	}
	// The zero Transport's base is http.DefaultTransport: no panic.
	(&http.Client{Transport: &cloudghttp.Transport{}}).CloseIdleConnections()
}

// noAnswer is a base transport that breaks the RoundTripper contract: no
// response and no error.
type noAnswer struct{}

func (noAnswer) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }

// A base that returns neither a response nor an error fails the request
// with an error, as net/http's client fails it ungoverned; the Transport
// does not panic, and the call is recorded as lost.
func TestBaseWithoutResponseOrErrorFailsTheRequest(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
	var resp *http.Response
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("the Transport panicked: %v", r)
			}
		}()
		resp, err = client(noAnswer{}, gov).Do(req)
	}()
	if resp != nil || err == nil || !strings.Contains(err.Error(), "nil *http.Response with a nil error") {
		t.Fatalf("response %v, error %v; want no response and the contract's error", resp, err)
	}
	if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Errored != 1 {
		t.Fatalf("totals %v, want one call, errored", tot)
	}
}

// cloningBase sends a copy of each request with a header of its own, as
// an authenticating base does (golang.org/x/oauth2's Transport sends a
// clone that carries the token), and answers with what its base answered,
// whose Request is that copy; with dropRequest, with no Request at all.
type cloningBase struct {
	base        http.RoundTripper
	dropRequest bool
}

func (b cloningBase) RoundTrip(req *http.Request) (*http.Response, error) {
	c := req.Clone(req.Context())
	c.Header.Set("Authorization", "Bearer secret")
	resp, err := b.base.RoundTrip(c)
	if resp != nil && b.dropRequest {
		resp.Request = nil
	}
	return resp, err
}

// The response's Request is the caller's, with the caller's context,
// whatever the base transport sent: net/http's Transport names the
// request it was given, not the copies it sent, and so must the
// Transport, whose copy carries the attempt's context (the call's Guard,
// which the response would keep alive for as long as it is kept), even
// when the base sent a copy of that copy (an authenticating base) or named
// no request; on a first answer and on a retried one.
func TestResponseCarriesTheCallersRequestWhateverTheBaseSent(t *testing.T) {
	for _, drop := range []bool{false, true} {
		for _, retried := range []bool{false, true} {
			t.Run(fmt.Sprintf("dropRequest=%v/retried=%v", drop, retried), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f := &fakeAPI{}
					if retried {
						f.script(status(503, "Retry-After", "1"))
					}
					req, _ := http.NewRequest(http.MethodGet, "http://api.test/items/1", nil)
					resp, err := client(cloningBase{base: newMem(f), dropRequest: drop}, newGov(t, resilience.Config{}), quick).Do(req)
					if err != nil {
						t.Fatal(err)
					}
					readAll(t, resp)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d, want 200", resp.StatusCode)
					}
					if resp.Request != req {
						var sent string
						if resp.Request != nil {
							sent = fmt.Sprintf(" (Authorization %q, context %T)", resp.Request.Header.Get("Authorization"), resp.Request.Context())
						}
						t.Fatalf("response's request %p%s, want the caller's %p", resp.Request, sent, req)
					}
				})
			})
		}
	}
}

// A request the Transport sends ungoverned (its provider disabled, as
// the configuration's enabled: false turns every provider off in an
// incident, or a scope with no provider) gets the caller's request as
// its response's Request too, as net/http's Transport names it: turning
// the governor off must not hand the caller the copy an authenticating
// base sent, with its token in the Authorization header, nor no request.
func TestUngovernedResponseCarriesTheCallersRequest(t *testing.T) {
	off := false
	for _, c := range []struct {
		name  string
		cfg   resilience.Config
		scope func(*http.Request) resilience.Scope
	}{
		{"disabled", resilience.Config{Enabled: &off}, scopeOf},
		{"no provider", resilience.Config{}, func(*http.Request) resilience.Scope { return resilience.Scope{} }},
	} {
		for _, drop := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dropRequest=%v", c.name, drop), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					f := &fakeAPI{}
					hc := &http.Client{Transport: cloudghttp.NewTransport(cloningBase{base: newMem(f), dropRequest: drop}, c.scope,
						cloudghttp.WithGovernor(newGov(t, c.cfg)))}
					req, _ := http.NewRequest(http.MethodGet, "http://api.test/items/1", nil)
					resp := send(t, hc, req)
					readAll(t, resp)
					if resp.Request != req {
						var sent string
						if resp.Request != nil {
							sent = fmt.Sprintf(" (Authorization %q)", resp.Request.Header.Get("Authorization"))
						}
						t.Fatalf("response's request %p%s, want the caller's %p", resp.Request, sent, req)
					}
				})
			})
		}
	}
}

// A connection that breaks while the answer's headers are read fails the
// request as a lost exchange, wherever the answer was cut: net/http reads
// a status line or a header cut short as malformed, and one cut at a
// line's end as an unexpected EOF, each inside its "HTTP/1.x transport
// connection broken" error. The request was sent and the server began
// to answer, so it is no local error: the scope counts a transient
// error, a GET is retried on a new connection, and a POST, which the
// server may have acted on, is not sent again.
func TestAnAnswerCutShortOverLoopbackIsTransient(t *testing.T) {
	for name, cut := range map[string]string{
		"within the status line": "HTTP/1.1 50",
		"within a header":        "HTTP/1.1 200 OK\r\nContent-Le",
		"after the status line":  "HTTP/1.1 200 OK\r\n",
	} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			t.Run(name+"/"+method, func(t *testing.T) {
				srv := loopback(t, &fakeAPI{})
				addr, conns := failFirstConnection(t, srv, func(c net.Conn) {
					_, _ = c.Read(make([]byte, 4096)) // the request read
					_, _ = io.WriteString(c, cut)
				})
				tr := &http.Transport{}
				t.Cleanup(tr.CloseIdleConnections)
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, method, "http://"+addr+"/items", strings.NewReader("x"))
				resp, err := client(tr, gov, quick).Do(req)
				if err == nil {
					readAll(t, resp)
				}
				tot := gov.Summary(stats).Totals
				if tot.TransientErrors != 1 || tot.Errored != 0 {
					t.Fatalf("error %v, totals %v; want one transient error, no local one", err, tot)
				}
				switch {
				case method == http.MethodGet && (err != nil || resp.StatusCode != 200 || conns.Load() != 2):
					t.Fatalf("GET: error %v on %d connections, want the retry's 200 on 2", err, conns.Load())
				case method == http.MethodPost && (err == nil || conns.Load() != 1):
					t.Fatalf("POST: error %v on %d connections, want the cut answer's error on 1", err, conns.Load())
				}
			})
		}
	}
}

// The error net/http says a broken connection with ("HTTP/1.x transport
// connection broken") also wraps a failure of the request's own writing
// once its headers went out: a body shorter than its ContentLength. That
// is the caller's request, a local error: not sent again, and no
// transient error of the scope's. The error is net/http's message, as its
// transport returns it.
func TestABodyShorterThanItsLengthStaysALocalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(reply{fail: fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", errors.New("http: ContentLength=10 with Body length 1"))})
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.test/items", strings.NewReader("x"))
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err == nil {
			readAll(t, resp)
		}
		tot := gov.Summary(stats).Totals
		if err == nil || len(f.recorded()) != 1 || tot.Errored != 1 || tot.TransientErrors != 0 {
			t.Fatalf("error %v after %d attempts, totals %v; want the error after 1, one local error", err, len(f.recorded()), tot)
		}
	})
}

// An HTTP/2 server whose answer net/http cannot read as one (HEADERS
// without a :status) fails the request with net/http's "malformed
// response from server", a stream error of the client's making: the
// request reached the server, which answered what no client can read, so
// it is no local error but a lost exchange, transient, as a CDN's
// unreadable answer is, and as an HTTP/1 answer net/http reads as
// malformed is (TestAnAnswerCutShortOverLoopbackIsTransient). The GET is
// sent again, here on the same connection; the POST is not.
func TestAMalformedHTTP2AnswerIsTransient(t *testing.T) {
	var streams atomic.Int32
	addr, _ := failFirstConnection(t, h2cLoopback(t), func(c net.Conn) {
		serveHeaders(c, func(id []byte) bool {
			if streams.Add(1) == 1 {
				// HEADERS, END_STREAM|END_HEADERS, "x: y" alone (a
				// literal with a new name): no :status.
				_, _ = c.Write([]byte{0, 0, 5, 1, 5, id[0], id[1], id[2], id[3], 0x40, 1, 'x', 1, 'y'})
				return true
			}
			_, _ = c.Write([]byte{0, 0, 1, 1, 5, id[0], id[1], id[2], id[3], 0x88}) // :status: 200
			return true
		})
	})
	tr := h2cTransport(t)
	gov := newGov(t, resilience.Config{})
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		streams.Store(0)
		// A bound, not a timing: a second connection would wait unaccepted.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx, stats := resilience.WithStats(ctx)
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+addr+"/items", nil)
		resp, err := client(tr, gov, quick).Do(req)
		if err == nil {
			readAll(t, resp)
		}
		tot := gov.Summary(stats).Totals
		if tot.TransientErrors != 1 || tot.Errored != 0 {
			t.Fatalf("%s: error %v after %d streams, totals %v; want one transient error, no local one", method, err, streams.Load(), tot)
		}
		switch {
		case method == http.MethodGet && (err != nil || resp.StatusCode != 200 || streams.Load() != 2):
			t.Fatalf("GET: error %v after %d streams; want the retry's 200 after 2", err, streams.Load())
		case method == http.MethodPost && (err == nil || streams.Load() != 1):
			t.Fatalf("POST: error %v after %d streams; want the malformed answer's error after 1", err, streams.Load())
		}
	}
}
