package test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// memTransport sends a request to the fake server's handler in memory, on
// the caller's goroutine, so that tests run inside a synctest bubble
// (where real sockets cannot be used) in virtual time.
type memTransport struct{ f *fakeARM }

func (m memTransport) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	name, _, _ := route(req.Method, req.URL.Path)
	m.f.mu.Lock()
	var fail error
	var broken *atomic.Int32
	if q := m.f.queue[name]; len(q) > 0 && (q[0].fail != nil || q[0].brokenBody != nil) {
		fail, broken = q[0].fail, q[0].brokenBody
		m.f.queue[name] = q[1:]
		m.f.hits = append(m.f.hits, hit{route: name, at: time.Now()})
	}
	m.f.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	if broken != nil {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: &brokenBody{closed: broken}, Request: req}, nil
	}
	rec := httptest.NewRecorder()
	in := req.Clone(req.Context())
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		in.Body = io.NopCloser(bytes.NewReader(b))
	}
	in.Host = req.URL.Host
	m.f.ServeHTTP(rec, in)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// brokenBody is a response body whose connection breaks off.
type brokenBody struct{ closed *atomic.Int32 }

func (b *brokenBody) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func (b *brokenBody) Close() error { b.closed.Add(1); return nil }

// fakeCred is a TokenCredential that always has a token.
type fakeCred struct{}

func (fakeCred) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "fake-token", ExpiresOn: time.Now().Add(24 * time.Hour)}, nil
}

// env is a fake ARM server, a governor and the plain options that point a
// real client at the server.
type env struct {
	t    testing.TB
	srv  *fakeARM
	gov  *resilience.Governor
	base *arm.ClientOptions
}

func armOptions(endpoint string, transport policy.Transporter) *arm.ClientOptions {
	return &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud: cloud.Configuration{
				ActiveDirectoryAuthorityHost: endpoint,
				Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
					cloud.ResourceManager: {Endpoint: endpoint, Audience: endpoint},
				},
			},
			InsecureAllowCredentialWithHTTP: true,
			Transport:                       transport,
		},
		DisableRPRegistration: true,
	}
}

// memEnv serves the fake server in memory; inside a synctest bubble it
// runs in virtual time.
func memEnv(t testing.TB, cfg resilience.Config) *env {
	f := newFakeARM()
	return &env{t: t, srv: f, gov: newGov(t, cfg), base: armOptions("http://127.0.0.1:1", memTransport{f})}
}

// tcpEnv serves the fake server on a loopback port.
func tcpEnv(t testing.TB, cfg resilience.Config) *env {
	f := newFakeARM()
	s := httptest.NewServer(f)
	t.Cleanup(s.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &env{t: t, srv: f, gov: newGov(t, cfg), base: armOptions(s.URL, &http.Client{Transport: tr})}
}

func newGov(t testing.TB, cfg resilience.Config) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fast is a configuration whose buckets never hold a call back, for
// measuring the policies' own cost.
func fast() resilience.Config {
	huge := 1e9
	return resilience.Config{Azure: resilience.ProviderConfig{
		MaxRPS: huge, Burst: huge, AccountMaxRPS: &huge, AccountBurst: huge, MaxConcurrency: 64,
		Services: map[string]resilience.ServiceConfig{
			"network":       {MaxRPS: huge, Burst: huge},
			"resourcegraph": {MaxRPS: huge, Burst: huge},
		},
	}}
}

func (e *env) opts() []cloudgazure.Option {
	return []cloudgazure.Option{cloudgazure.WithGovernor(e.gov), cloudgazure.WithLogger(slog.New(slog.DiscardHandler))}
}

func (e *env) groups(sub string) *armresources.ResourceGroupsClient {
	e.t.Helper()
	c, err := cloudgazure.NewSubscriptionClient(armresources.NewResourceGroupsClient, sub, fakeCred{}, e.base, e.opts()...)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) vnets(sub string) *armnetwork.VirtualNetworksClient {
	e.t.Helper()
	c, err := cloudgazure.NewSubscriptionClient(armnetwork.NewVirtualNetworksClient, sub, fakeCred{}, e.base, e.opts()...)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) graph() *cloudgazure.GraphClient {
	e.t.Helper()
	c, err := cloudgazure.NewGraphClient(fakeCred{}, e.base, e.opts()...)
	if err != nil {
		e.t.Fatal(err)
	}
	if !c.Governed() {
		e.t.Fatal("graph client not governed")
	}
	return c
}

// plainGroups is an ungoverned client with the given retry options.
func (e *env) plainGroups(sub string, retry policy.RetryOptions) *armresources.ResourceGroupsClient {
	e.t.Helper()
	o := *e.base
	o.Retry = retry
	c, err := armresources.NewResourceGroupsClient(sub, fakeCred{}, &o)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) plainGraph(retry policy.RetryOptions) *armresourcegraph.Client {
	e.t.Helper()
	o := *e.base
	o.Retry = retry
	c, err := armresourcegraph.NewClient(fakeCred{}, &o)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// freeSlots returns the free slots of a subscription's bulkhead (16 by
// default): its cap less the calls holding a slot.
func freeSlots(g *resilience.Governor, sub string) int {
	in := g.Inspect(resilience.Scope{Provider: "azure", Account: sub, Service: "resources"})
	return in.MaxInFlight - in.InFlight
}

func ptr[T any](v T) *T { return &v }

// near reports whether d is within tol of want.
func near(d, want, tol time.Duration) bool {
	return math.Abs(float64(d-want)) <= float64(tol)
}

// gap is the time between two hits.
func gap(hs []hit, i, j int) time.Duration { return hs[j].at.Sub(hs[i].at) }
