//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// An HTTP/2 server that refuses the client's rate with ENHANCE_YOUR_CALM
// (RFC 9113, section 7: its peer "is exhibiting a behavior that might be
// generating excessive load"), resetting the request's stream (RST_STREAM)
// or sending a GOAWAY, throttles the scope: it is slowed and paused, and a
// GET sent again; a POST is not, since neither says that the server left
// the request alone (a REFUSED_STREAM, or a GOAWAY's last stream below the
// request's, would; net/http retries those by itself). A GOAWAY of
// ENHANCE_YOUR_CALM for too_many_pings is the client's keepalive, not its
// rate: a lost exchange, transient, as after any GOAWAY.
func TestEnhanceYourCalmThrottlesTheScope(t *testing.T) {
	// RST_STREAM on the request's stream, ENHANCE_YOUR_CALM (0xb).
	reset := func(c net.Conn, id []byte) {
		_, _ = c.Write(append([]byte{0, 0, 4, 3, 0, id[0], id[1], id[2], id[3]}, 0, 0, 0, 0xb))
	}
	// GOAWAY, last stream the request's, ENHANCE_YOUR_CALM, with debug
	// data; then the close.
	goaway := func(debug string) func(net.Conn, []byte) {
		return func(c net.Conn, id []byte) {
			p := append([]byte{id[0] & 0x7f, id[1], id[2], id[3], 0, 0, 0, 0xb}, debug...)
			_, _ = c.Write(append([]byte{0, 0, byte(len(p)), 7, 0, 0, 0, 0, 0}, p...))
		}
	}
	for _, tc := range []struct {
		name      string
		method    string
		refuse    func(net.Conn, []byte)
		closeConn bool
		throttled bool // else transient
		resent    bool
	}{
		{"GET reset", http.MethodGet, reset, false, true, true},
		{"POST reset", http.MethodPost, reset, false, true, false},
		{"GET goaway", http.MethodGet, goaway("load"), true, true, true},
		{"POST goaway", http.MethodPost, goaway(""), true, true, false},
		{"GET goaway too_many_pings", http.MethodGet, goaway("too_many_pings"), true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var streams atomic.Int32
			addr, _ := failFirstConnection(t, h2cLoopback(t), func(c net.Conn) {
				serveHeaders(c, func(id []byte) bool {
					if streams.Add(1) == 1 {
						tc.refuse(c, id)
						return !tc.closeConn
					}
					// HEADERS, END_STREAM|END_HEADERS, ":status: 200"
					// (HPACK's static entry 8).
					_, _ = c.Write([]byte{0, 0, 1, 1, 5, id[0], id[1], id[2], id[3], 0x88})
					return true
				})
			})
			tr := h2cTransport(t)
			gov := newGov(t, resilience.Config{})
			// A bound, not a timing: a connection would wait unaccepted.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx, stats := resilience.WithStats(ctx)
			req, _ := http.NewRequestWithContext(ctx, tc.method, "http://"+addr+"/items", nil)
			if tc.method == http.MethodPost {
				req, _ = http.NewRequestWithContext(ctx, tc.method, "http://"+addr+"/items", body(`{"a":1}`))
			}
			resp, err := client(tr, gov, quick).Do(req)
			tot := gov.Summary(stats).Totals
			slowed := false
			if leaf := gov.Inspect(apiScope).Leaf; leaf.Rate < leaf.Ceiling {
				slowed = true
			}
			got := "the error " + func() string {
				if err != nil {
					return err.Error()
				}
				return "<nil>"
			}()
			if err == nil {
				readAll(t, resp)
				got = "status " + resp.Status
			}
			throttled, transient := tot.Throttled == 1 && tot.TransientErrors == 0, tot.Throttled == 0 && tot.TransientErrors == 1
			if tc.resent && err != nil || !tc.resent && (err == nil || !strings.Contains(err.Error(), "ENHANCE_YOUR_CALM")) ||
				tc.throttled != throttled || !tc.throttled && !transient || tc.throttled != slowed || tot.Errored != 0 {
				t.Errorf("%s; totals %v, leaf slowed %v; want resent %v, throttled %v (else one transient error), no local error",
					got, tot, slowed, tc.resent, tc.throttled)
			}
		})
	}
}
