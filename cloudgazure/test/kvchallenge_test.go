package test

import (
	"cmp"
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/containers/azcontainerregistry"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// vaultChallenge is a key vault's answer to a request sent without a
// token, as Key Vault's challenge policy sends a client's first request:
// 401 with the challenge that names the tenant and the resource.
func vaultChallenge(req *http.Request) *http.Response {
	h := http.Header{}
	h.Set("WWW-Authenticate", `Bearer authorization="https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47", resource="https://vault.azure.net"`)
	h.Set("Content-Type", "application/json; charset=utf-8")
	return &http.Response{StatusCode: http.StatusUnauthorized, Status: "401 Unauthorized", Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"error":{"code":"Unauthorized","message":"AKV10000: Request is missing a Bearer or PoP token."}}`))}
}

// vaultTransport answers a request without a token with vaultChallenge,
// and one with a token with the next of its statuses (200 with a secret
// once they run out), a 429 with a Retry-After of retryAfter (1 s when
// empty), a 401 with
// vaultChallenge (the vault asks for a token again, which Key Vault's
// challenge policy answers as it answers the first); it records the
// statuses it answered, and when.
type vaultTransport struct {
	mu         sync.Mutex
	statuses   []int
	retryAfter string
	answered   []int
	at         []time.Time
}

func (v *vaultTransport) Do(req *http.Request) (*http.Response, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if req.Header.Get("Authorization") == "" {
		v.answered, v.at = append(v.answered, http.StatusUnauthorized), append(v.at, time.Now())
		return vaultChallenge(req), nil
	}
	status := http.StatusOK
	if len(v.statuses) > 0 {
		status, v.statuses = v.statuses[0], v.statuses[1:]
	}
	v.answered, v.at = append(v.answered, status), append(v.at, time.Now())
	if status == http.StatusUnauthorized {
		return vaultChallenge(req), nil
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	body := `{"value":"v","id":"https://myvault.vault.azure.net/secrets/s/1"}`
	if status == http.StatusTooManyRequests {
		h.Set("Retry-After", cmp.Or(v.retryAfter, "1"))
		body = `{"error":{"code":"Throttled","message":"Request was not processed because too many requests were received."}}`
	}
	return &http.Response{StatusCode: status, Header: h, Request: req, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// A Key Vault client's first request elicits the vault's authentication
// challenge: its challenge policy sends it without a token, the vault
// answers 401 naming its tenant and resource, and the policy sends the
// request again with a token, inside the same try of azcore's loop. That
// resend is no retry of a failure of the provider's: the run counted it
// as one (two GetSecret: three calls, "retries: 1", a Retry event), so
// that it took one of the request's two free retries, and a request that
// was throttled after its challenge paid the retry budget one retry
// early. It is a call of its own, counted as sent, and no retry: the
// throttled request's three retries are counted, and paid for, as those
// of a request that met no challenge. Through a real azsecrets client,
// with ClientOptions and with Policies.
func TestAVaultChallengeResendIsNoRetry(t *testing.T) {
	for _, opts := range []string{"ClientOptions", "Policies"} {
		t.Run(opts, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				retryEvents := 0
				gov, err := resilience.NewGovernor(resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(3)}},
					resilience.WithObserver(observe.Func(func(ev observe.Event) {
						if ev.Kind == observe.Retry {
							mu.Lock()
							retryEvents++
							mu.Unlock()
						}
					})))
				if err != nil {
					t.Fatal(err)
				}
				vault := az("myvault", cloudgazure.ServiceKeyVault)
				ctx, stats := resilience.WithStats(context.Background())
				counted := func() (calls, retries int64, events int) {
					c := gov.Summary(stats).Scopes[vault]
					mu.Lock()
					defer mu.Unlock()
					return c.Calls, c.Retries, retryEvents
				}

				// Two GetSecret: the first meets the challenge.
				fake := &vaultTransport{}
				o := governedOptions(gov, opts, fake)
				client, err := azsecrets.NewClient("https://myvault.vault.azure.net", fakeCred{}, &azsecrets.ClientOptions{ClientOptions: *o})
				if err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if _, err := client.GetSecret(ctx, "s", "", nil); err != nil {
						t.Fatalf("GetSecret: %v", err)
					}
				}
				calls, r0, e0 := counted()
				if calls != 3 || r0 != 0 || e0 != 0 {
					t.Errorf("two GetSecret, the first challenged (answers %v): %d calls, %d retries, %d Retry events; want 3 calls, no retry",
						fake.answered, calls, r0, e0)
				}

				// A client's first request, challenged, then throttled
				// three times: its three retries, two of them free, as
				// for the same request met with no challenge.
				fresh := &vaultTransport{statuses: []int{429, 429, 429, 200, 429, 429, 429}}
				o = governedOptions(gov, opts, fresh)
				client, err = azsecrets.NewClient("https://myvault.vault.azure.net", fakeCred{}, &azsecrets.ClientOptions{ClientOptions: *o})
				if err != nil {
					t.Fatal(err)
				}
				budget := gov.Budget(cloudgazure.Provider)
				if _, err := client.GetSecret(ctx, "s", "", nil); err != nil {
					t.Fatalf("GetSecret: %v", err)
				}
				challenged := budget - gov.Budget(cloudgazure.Provider)
				_, retries, events := counted()
				retries, events = retries-r0, events-e0
				budget = gov.Budget(cloudgazure.Provider)
				if _, err := client.GetSecret(ctx, "s", "", nil); err != nil {
					t.Fatalf("GetSecret: %v", err)
				}
				plain := budget - gov.Budget(cloudgazure.Provider)
				if retries != 3 || events != 3 {
					t.Errorf("a request challenged, then throttled three times (answers %v): %d retries, %d Retry events; want 3", fresh.answered, retries, events)
				}
				if _, r, e := counted(); r-r0 != 6 || e-e0 != 6 {
					t.Errorf("two requests throttled three times each: %d retries, %d Retry events; want 6", r-r0, e-e0)
				}
				if math.Abs(challenged-plain) > 1e-9 {
					t.Errorf("the challenged request's three retries took %.2f of the retry budget, the unchallenged one's %.2f: want the same", challenged, plain)
				}
			})
		})
	}
}

// registryTransport is a container registry's data plane, anonymous
// access allowed: a request without a token is answered 401 with the
// registry's challenge, the token endpoint (POST /oauth2/token) with an
// access token, and a request with a token with a repository's list. It
// records what it received.
type registryTransport struct {
	mu   sync.Mutex
	seen []string
}

func (r *registryTransport) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, req.Method+" "+req.URL.Path)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	status, body := http.StatusOK, `{"repositories":["r"]}`
	switch {
	case req.URL.Path == "/oauth2/token":
		body = `{"access_token":"acr-access-token"}`
	case req.Header.Get("Authorization") == "":
		h.Set("WWW-Authenticate", `Bearer realm="https://myregistry.azurecr.io/oauth2/token",service="myregistry.azurecr.io",scope="registry:catalog:*"`)
		status, body = http.StatusUnauthorized, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`
	}
	return &http.Response{StatusCode: status, Header: h, Request: req, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// Container Registry's authentication policy sends a request's challenge
// on a clone of the request, without a token, fetches a token when the
// registry answers 401, and sends the request itself with it: the
// request's one send is no retry, though it is not the challenged
// request. With ClientOptions, whose azcore retries no 401, any attempt
// after the 401 is the challenge's resend (with Policies, which do not
// know azcore's retry options, only the challenged request sent again is
// known for one, and the registry's counts as a retry: see the README).
// Through a real azcontainerregistry client: the challenge, the token's
// request and the resend, three calls and no retry (before: "retries: 1").
func TestARegistryChallengeResendIsNoRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		fake := &registryTransport{}
		o := governedOptions(gov, "ClientOptions", fake)
		client, err := azcontainerregistry.NewClient("https://myregistry.azurecr.io", nil, &azcontainerregistry.ClientOptions{ClientOptions: *o})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := client.NewListRepositoriesPager(nil).NextPage(ctx); err != nil {
			t.Fatalf("the registry's repositories: %v", err)
		}
		c := gov.Summary(stats).Scopes[az("myregistry", cloudgazure.ServiceContainerRegistry)]
		if c.Calls != 3 || c.Retries != 0 {
			t.Errorf("a registry's challenged request (received %v): %d calls, %d retries; want 3 calls (the challenge, the token's, the resend), no retry", fake.seen, c.Calls, c.Retries)
		}
	})
}
