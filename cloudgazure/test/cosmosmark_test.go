package test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// newAzcosmosRequest makes a request as azcosmos does (Client.createRequest
// and the endpoint manager's account read, every version since 0.3.5):
// on its client's endpoint, whatever host that is, with the header
// x-ms-cosmos-sdk-supportedcapabilities (its value the capabilities'
// bits, "1" today).
func newAzcosmosRequest(t *testing.T, ctx context.Context, method, endpoint string) *policy.Request {
	t.Helper()
	req := newRequest(t, ctx, method, endpoint)
	req.Raw().Header.Set("x-ms-cosmos-sdk-supportedcapabilities", "1")
	return req
}

// azcosmos's retry policy runs ahead of the package's in every client
// azcosmos makes, whatever its endpoint: the Cosmos DB emulator's
// (https://localhost:8081), a host of one's own, as well as
// <account>.documents.azure.com. A 503 it resends or gives up itself is
// no retry of azcore's: the retries counted are those sent.
func TestAzcosmosRequestsAreKnownByTheirMark(t *testing.T) {
	for endpoint, scope := range map[string]resilience.Scope{
		"https://localhost:8081/dbs/d/colls/c/docs/x":           az("localhost:8081", cloudgazure.ServiceCosmosDB),
		"https://cosmos.contoso.com/dbs/d/colls/c/docs/x":       az("cosmos.contoso.com", cloudgazure.ServiceCosmosDB),
		"https://acct.documents.azure.com/dbs/d/colls/c/docs/x": az("acct", cloudgazure.ServiceCosmosDB),
	} {
		for _, regions := range []int{0, 1} {
			for _, opts := range []string{"Policies", "ClientOptions"} {
				t.Run(fmt.Sprintf("%s, %s, %d other regions", endpoint, opts, regions), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						gov := newGov(t, resilience.Config{})
						var sent int
						pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1",
							runtime.PipelineOptions{PerRetry: []policy.Policy{regionRetry{regions}}},
							governedOptions(gov, opts, cosmosAnswers(&sent, http.StatusServiceUnavailable)))
						ctx, stats := resilience.WithStats(context.Background())
						if _, err := pl.Do(newAzcosmosRequest(t, ctx, http.MethodGet, endpoint)); err == nil {
							t.Fatal("the 503 came back without an error")
						}
						got := gov.Summary(stats).Scopes
						if sc := got[scope]; int64(sent) != sc.Calls || sc.Retries != int64(sent-1) {
							t.Errorf("%d attempts sent, %d of them retries; the governor counted %v in %v (scopes: %v)", sent, sent-1, sc, scope, got)
						}
					})
				})
			}
		}
	}
}

// A request on a Cosmos DB host that azcosmos did not make (aztables's,
// on the Table API's <account>.table.cosmos.azure.com, or one's own
// pipeline's) has no retry policy of azcosmos's ahead of the package's:
// azcore retries its 503 as it came, and with ClientOptions the retry is
// asked for at once, so that an empty budget refuses it before azcore's
// backoff, not after.
func TestAnUnmarkedCosmosRequestsRetryIsAskedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(0)}})
		var sent int
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{},
			governedOptions(gov, "ClientOptions", cosmosAnswers(&sent, http.StatusServiceUnavailable)))
		req := newRequest(t, context.Background(), http.MethodGet, "https://acct.table.cosmos.azure.com/Tables('t')")
		start := time.Now()
		_, err := pl.Do(req)
		took := time.Since(start)
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) || sent != 3 {
			t.Fatalf("got %v after %d attempts, want a RetryBudgetExhaustedError after 1 + 2 free retries", err, sent)
		}
		// azcore's backoffs before the two retries sent are 0.4 to 0.65 s
		// and 1.2 to 1.95 s; the refused retry's, 2.8 to 4.55 s, is slept
		// for nothing.
		if took >= 4*time.Second {
			t.Errorf("the refusal came after %v, want it before azcore's third backoff (the first two sum to 2.6 s at most, the three to 4.4 s at least)", took)
		}
	})
}

// A client azcosmos makes on a host that is no Cosmos DB account's (the
// emulator's, https://localhost:8081, or a host of one's own in front of
// an account) sends requests whose paths name no subscription: read as
// Resource Manager's, they went in azure/*/*/resources with the
// tenant-level Resource Manager calls, so that a throttled Cosmos DB
// request halved and paused those. A request azcosmos made (its mark) is
// Cosmos DB's: its scope is its endpoint's, azure/<host>/*/cosmosdb, as
// an account's host, <account>.documents.azure.com, names the account.
func TestAzcosmosRequestsOnAnotherHostAreTheirEndpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		o := governedOptions(gov, "Policies", throttleTransport{"x-ms-retry-after-ms", "30000"})
		o.Retry = policy.RetryOptions{MaxRetries: -1}
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, o)
		ctx, stats := resilience.WithStats(context.Background())
		send := func(endpoint string, azcosmos bool) (int, time.Duration) {
			t.Helper()
			req := newAzcosmosRequest(t, ctx, http.MethodGet, endpoint)
			if !azcosmos {
				req.Raw().Header.Del("x-ms-cosmos-sdk-supportedcapabilities")
			}
			start := time.Now()
			resp, err := pl.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", endpoint, err)
			}
			return resp.StatusCode, time.Since(start)
		}
		if st, _ := send("https://busy.contoso.com/dbs/d/colls/c/docs/x", true); st != http.StatusTooManyRequests {
			t.Fatalf("the busy endpoint answered %d", st)
		}
		for _, c := range []struct {
			endpoint string
			azcosmos bool
		}{
			{"https://management.azure.com/subscriptions?api-version=2022-12-01", false},
			{"https://localhost:8081/dbs/d/colls/c/docs/x", true},
		} {
			if st, took := send(c.endpoint, c.azcosmos); st != http.StatusOK || took != 0 {
				t.Errorf("%s: %d after %v, want 200 at once: a Cosmos DB endpoint's 429 held it", c.endpoint, st, took)
			}
		}
		if _, took := send("https://busy.contoso.com/dbs/d/colls/c/docs/y", true); took < 30*time.Second {
			t.Errorf("the throttled endpoint's next request went after %v, want 30 s", took)
		}
		got := gov.Summary(stats).Scopes
		for sc, calls := range map[resilience.Scope]int64{
			az("busy.contoso.com", cloudgazure.ServiceCosmosDB): 2,
			az("localhost:8081", cloudgazure.ServiceCosmosDB):   1,
			az("", cloudgazure.ServiceResources):                1,
		} {
			if got[sc].Calls != calls {
				t.Errorf("scope %v: %d calls, want %d (scopes: %v)", sc, got[sc].Calls, calls, got)
			}
		}
	})
}

// azcosmos's retry policy takes up, of the transport's errors, only a
// failed name resolution (clientRetryPolicy.isNetworkConnectionError: a
// *net.DNSError, in every version), which it may send again to another
// region or hand on; any other failed attempt (a reset connection, a
// timeout) it hands to azcore as it came, and azcore retries it. With
// ClientOptions the retry of such an attempt is asked for at once, so
// that an empty budget refuses it before azcore's backoff, not after.
func TestAzcosmosConnectionResetIsAskedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(0)}})
		var sent int
		reset := transportFunc(func(*http.Request) (*http.Response, error) {
			sent++
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
		})
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, governedOptions(gov, "ClientOptions", reset))
		start := time.Now()
		_, err := pl.Do(newAzcosmosRequest(t, context.Background(), http.MethodGet, "https://acct.documents.azure.com/dbs/d/colls/c/docs/x"))
		took := time.Since(start)
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) || !errors.Is(err, syscall.ECONNRESET) || sent != 3 {
			t.Fatalf("got %v after %d attempts, want a RetryBudgetExhaustedError wrapping the reset after 1 + 2 free retries", err, sent)
		}
		// azcore's backoffs before the two retries sent are 0.4 to 0.65 s
		// and 1.2 to 1.95 s; the refused retry's, 2.8 to 4.55 s, is slept
		// for nothing.
		if took >= 4*time.Second {
			t.Errorf("the refusal came after %v, want it before azcore's third backoff (the first two sum to 2.6 s at most, the three to 4.4 s at least)", took)
		}
	})
}

// dnsGiveUp stands for azcosmos's retry policy on a failed name
// resolution that it does not send again: it marks the endpoint
// unavailable and refreshes the account's regions, which may fail
// (attemptRetryOnNetworkError's error), and that error ends the request.
type dnsGiveUp struct{}

func (dnsGiveUp) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return nil, nonRetriable{fmt.Errorf("refreshing the account's regions: %w", err)}
	}
	return resp, err
}

// A failed name resolution is what azcosmos's retry policy takes up of a
// transport's errors: its retry is asked for when it is sent, so that one
// azcosmos ends is neither counted nor paid for.
func TestAzcosmosDNSFailureIsAskedLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		var sent int
		noHost := transportFunc(func(*http.Request) (*http.Response, error) {
			sent++
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "acct-westus.documents.azure.com", IsNotFound: true}}
		})
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{PerRetry: []policy.Policy{dnsGiveUp{}}},
			governedOptions(gov, "ClientOptions", noHost))
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := pl.Do(newAzcosmosRequest(t, ctx, http.MethodGet, "https://acct.documents.azure.com/dbs/d/colls/c/docs/x")); err == nil {
			t.Fatal("the failed name resolution came back without an error")
		}
		if sc := gov.Summary(stats).Scopes[az("acct", cloudgazure.ServiceCosmosDB)]; sent != 1 || sc.Calls != 1 || sc.Retries != 0 {
			t.Errorf("%d attempts sent, none a retry; the governor counted %v", sent, sc)
		}
	})
}
