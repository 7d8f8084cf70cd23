package test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// noSuchHost fails every request as net/http does when the endpoint's
// host does not exist (NXDOMAIN): a scan of every region reaches it for a
// service a region does not offer.
type noSuchHost struct{}

func (noSuchHost) Do(req *http.Request) (*http.Response, error) {
	return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: req.URL.Hostname(), IsNotFound: true}}}
}

// An endpoint whose host does not exist sends nothing to any service: the
// SDK, which wraps every transport failure in a connection error, does not
// retry it (RetryableConnectionError reads a DNS error that found no host
// as final), and the governor does not take it for the scope's transient
// error either. The call is lost as errored, a local error, as a call
// whose endpoint could not be resolved is: no transient error counted, no
// failure of the scope's breaker.
func TestAHostThatDoesNotExistIsNoTransientError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{})
		cfg.HTTPClient = noSuchHost{}
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "vpcs")
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
		var dns *net.DNSError
		if !errors.As(err, &dns) || !dns.IsNotFound {
			t.Fatalf("err %v, want the transport's no such host", err)
		}
		if k := resilience.Classify(err); k != resilience.Fatal {
			t.Fatalf("no such host: %v, want FATAL (nothing was sent; the SDK does not retry it)", k)
		}
		s := scopeStats(g, stats, ec2Key)
		if s.Calls != 1 || s.Retries != 0 || s.TransientErrors != 0 || s.Failed != 0 || s.Errored != 1 {
			t.Fatalf("ec2 counters %v; want one call, no retry, no transient error, lost as errored", s)
		}
		if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
			t.Fatalf("ledger %q, want the call lost as errored", ledger.Describe())
		}
		snap := g.Inspect(vpcsScope)
		if snap.Breaker.Failures != 0 {
			t.Fatalf("breaker %+v; want no failure of the scope's", snap.Breaker)
		}
	})
}

// dnsFailure fails every request with the DNS error err, as net/http does
// when the resolver cannot answer for the endpoint's host.
type dnsFailure struct{ err *net.DNSError }

func (d dnsFailure) Do(req *http.Request) (*http.Response, error) {
	e := *d.err
	e.Name = req.URL.Hostname()
	return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: &net.OpError{Op: "dial", Net: "tcp", Err: &e}}
}

// Only a DNS answer that the host does not exist (net.DNSError.IsNotFound)
// is a local error: a resolver that timed out (IsTimeout) or failed for
// now (IsTemporary: SERVFAIL, "server misbehaving") says nothing of the
// host, the SDK retries the call, and the governor reads each attempt as
// the transient network failure it is, the call lost as failed after its
// retries.
func TestATemporaryDNSFailureStaysTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *net.DNSError
	}{
		{"timeout", &net.DNSError{Err: "i/o timeout", Server: "10.0.0.2:53", IsTimeout: true}},
		{"SERVFAIL", &net.DNSError{Err: "server misbehaving", Server: "10.0.0.2:53", IsTemporary: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(2))
				cfg.HTTPClient = dnsFailure{tc.err}
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "vpcs")
				err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
				var dns *net.DNSError
				if !errors.As(err, &dns) || dns.IsNotFound {
					t.Fatalf("err %v, want the transport's %s", err, tc.name)
				}
				if k := resilience.Classify(err); k != resilience.Transient {
					t.Fatalf("DNS %s: %v, want TRANSIENT (the SDK retries it)", tc.name, k)
				}
				s := scopeStats(g, stats, ec2Key)
				if s.Calls != 1 || s.Retries != 2 || s.TransientErrors != 3 || s.Failed != 1 || s.Errored != 0 {
					t.Fatalf("ec2 counters %v; want one call, two retries, three transient errors, lost as failed", s)
				}
				if ledger.Count(resilience.LossFailed) != 1 {
					t.Fatalf("ledger %q, want the call lost as failed", ledger.Describe())
				}
			})
		})
	}
}

// cyclicErr is a transport's error whose chain comes back to itself,
// through Unwrap, or through Unwrap() []error twice at every level (a
// join of joins, which a walk of the whole tree visits 2^depth times). It
// counts the unwraps, and ends the chain after maxUnwraps of them, so
// that a walk with no bound of its own ends.
type cyclicErr struct{ unwraps *int }

const maxUnwraps = 100000

func (e cyclicErr) Error() string { return "reset by a cyclic transport" }

// more counts an unwrap, and reports whether the chain goes on.
func (e cyclicErr) more() bool {
	*e.unwraps++
	return *e.unwraps <= maxUnwraps
}

// unwrapOne is cyclicErr through Unwrap() error.
type unwrapOne struct{ cyclicErr }

func (e unwrapOne) Unwrap() error {
	if !e.more() {
		return nil
	}
	return e
}

// unwrapTwo is cyclicErr through Unwrap() []error.
type unwrapTwo struct{ cyclicErr }

func (e unwrapTwo) Unwrap() []error {
	if !e.more() {
		return nil
	}
	return []error{e, e}
}

// The classifier reads the error a request the SDK could not send wraps
// (a *smithyhttp.RequestSendError's, for a host that does not exist)
// within the bounds of its own walk of a chain: a transport's error
// whose chain is a cycle, or a tree of joins, is read in a few dozen
// steps, as the core reads any other error's, not followed for ever (a
// Classify that never returns, in the call's After, holding its slot).
func TestASendErrorIsReadWithinTheChainBounds(t *testing.T) {
	for _, c := range []struct {
		name string
		err  func(*int) error
	}{
		{"a cycle", func(n *int) error { return unwrapOne{cyclicErr{unwraps: n}} }},
		{"a tree of joins", func(n *int) error { return unwrapTwo{cyclicErr{unwraps: n}} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var plain, sent int
			resilience.Classify(c.err(&plain))
			resilience.Classify(&smithyhttp.RequestSendError{Err: c.err(&sent)})
			if sent > plain+64 {
				t.Fatalf("Classify unwrapped the transport's error %d times under a RequestSendError, %d times alone: the reader of the SDK's send error walks its chain without bound", sent, plain)
			}
		})
	}
}
