package test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

const (
	tenantA = "72F988BF-86F1-41AF-91AB-2D7CD011DB47"
	tenantB = "4a1b2c3d-0000-4000-8000-00000000000b"
)

// tenantCred is a TokenCredential whose tokens are JWTs of a tenant, as
// Microsoft Entra ID's access tokens for Resource Manager are: their
// payload names the tenant in its tid claim.
type tenantCred struct{ tid string }

func (c tenantCred) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	enc := base64.RawURLEncoding.EncodeToString
	tok := enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." +
		enc([]byte(`{"aud":"https://management.azure.com/","tid":"`+c.tid+`","oid":"x"}`)) + ".sig"
	return azcore.AccessToken{Token: tok, ExpiresOn: time.Now().Add(24 * time.Hour)}, nil
}

// Resource Manager throttles a tenant's requests (those whose path names
// no subscription) per tenant: a tenant-level request of one tenant that
// is throttled (TenantRequestsThrottled, Retry-After: 30), or whose
// success says the tenant's reads are nearly spent, holds the next
// tenant-level request of its tenant, and never one of another tenant,
// the tenant being read from the request's token. A token that names no
// tenant (not a JWT) leaves the request in the tenant-level scope shared
// by all such requests, as before.
func TestATenantsPauseHoldsNoOtherTenant(t *testing.T) {
	get := func(e *env, tid string) error {
		var cred azcore.TokenCredential = fakeCred{}
		if tid != "" {
			cred = tenantCred{tid}
		}
		c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, cred, e.base, e.opts()...)
		if err != nil {
			return err
		}
		_, err = c.GetAtTenantScope(context.Background(), "Microsoft.Compute", nil)
		return err
	}
	cases := []struct {
		name string
		// pause makes tenant A's next request held by hold.
		pause func(e *env)
		hold  time.Duration
	}{
		{"a tenant's 429", func(e *env) {
			e.srv.script(routeProvider, withHeader(reply{status: http.StatusTooManyRequests, code: "TenantRequestsThrottled"}, "Retry-After", "30"))
		}, 30 * time.Second},
		{"a tenant's low remaining reads", func(e *env) {
			e.srv.okHeaders(routeProvider, "x-ms-ratelimit-remaining-tenant-reads", "24")
		}, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				c.pause(e)
				start := time.Now()
				done := make(chan error, 1)
				go func() { done <- get(e, tenantA) }()
				synctest.Wait() // tenant A's request answered: retrying, or done
				e.srv.okHeaders(routeProvider)
				if err := get(e, tenantB); err != nil {
					t.Error(err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("%s in tenant A: tenant B's tenant-level request waited %v, want none", c.name, d)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				start = time.Now()
				if c.hold == time.Second { // the pause is tenant A's
					if err := get(e, tenantA); err != nil {
						t.Fatal(err)
					}
					if d := time.Since(start); !near(d, time.Second, time.Millisecond) {
						t.Errorf("%s: tenant A's next request waited %v, want 1s", c.name, d)
					}
				} else if hs := e.srv.hitsOf(routeProvider); len(hs) != 3 || hs[2].at.Sub(hs[0].at) < c.hold {
					t.Errorf("%s: tenant A's retry at %v, want after %v", c.name, hs, c.hold)
				}
			})
		})
	}
	t.Run("a token that names no tenant", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, fast())
			e.srv.okHeaders(routeProvider, "x-ms-ratelimit-remaining-tenant-reads", "24")
			if err := get(e, ""); err != nil {
				t.Fatal(err)
			}
			e.srv.okHeaders(routeProvider)
			start := time.Now()
			if err := get(e, ""); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); !near(d, time.Second, time.Millisecond) {
				t.Errorf("the next tenant-level request without a tenant waited %v, want 1s", d)
			}
		})
	})
	// The scope, with both policies and with the per-retry policy alone
	// (after a policy that sets the token, as azcore's bearer token
	// policy does before the per-retry policies).
	want := resilience.Scope{Provider: "azure", Account: "tenants/" + strings.ToLower(tenantA), Service: "compute"}
	for _, alone := range []bool{false, true} {
		t.Run("scope, per-retry policy alone "+strconv.FormatBool(alone), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				ctx, stats := resilience.WithStats(context.Background())
				if !alone {
					c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, tenantCred{tenantA}, e.base, e.opts()...)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := c.GetAtTenantScope(ctx, "Microsoft.Compute", nil); err != nil {
						t.Fatal(err)
					}
				} else {
					tok, _ := tenantCred{tenantA}.GetToken(ctx, policy.TokenRequestOptions{})
					_, perRetry := cloudgazure.Policies(e.opts()...)
					o := policy.ClientOptions{Transport: e.base.Transport, PerRetryPolicies: []policy.Policy{
						policyFunc(func(req *policy.Request) (*http.Response, error) {
							req.Raw().Header.Set("Authorization", "Bearer "+tok.Token)
							return req.Next()
						}), perRetry}}
					pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, &o)
					req, err := runtime.NewRequest(ctx, http.MethodGet, "http://127.0.0.1:1/providers/Microsoft.Compute?api-version=1")
					if err != nil {
						t.Fatal(err)
					}
					if resp, err := pl.Do(req); err != nil || resp.StatusCode != http.StatusOK {
						t.Fatalf("%v %v", resp, err)
					}
				}
				if got := e.gov.Summary(stats).Scopes; len(got) != 1 || got[want].Calls != 1 {
					t.Errorf("the request's scope: %+v, want 1 call in %v alone", got, want)
				}
			})
		})
	}
	// A request whose token could not be had is sent nowhere, and ends
	// in the tenant-level scope its URL gives, lost as errored.
	t.Run("no token", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, fast())
			ctx, stats := resilience.WithStats(context.Background())
			c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, failingCred{}, e.base, e.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetAtTenantScope(ctx, "Microsoft.Compute", nil); !errors.Is(err, errNoToken) {
				t.Fatalf("err %v, want the credential's", err)
			}
			shared := resilience.Scope{Provider: "azure", Service: "compute"}
			if got := e.gov.Summary(stats).Scopes; len(got) != 1 || got[shared].Errored != 1 || e.srv.count(routeProvider) != 0 {
				t.Errorf("the request without a token: %+v, %d sent; want it errored in %v alone, none sent", got, e.srv.count(routeProvider), shared)
			}
		})
	})
}

var errNoToken = errors.New("no token for you")

// failingCred is a TokenCredential that never has a token.
type failingCred struct{}

func (failingCred) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{}, errNoToken
}

// A Resource Graph query's answer's x-ms-ratelimit-remaining-tenant-reads
// is its tenant's: under 25 it pauses that tenant's tenant-level requests
// (the account tenants/<tenant id>) for a second, and no other tenant's,
// whether the policies read the answer (a *GraphClient, alone or paged by
// QueryResources) or QueryResources does, for a client it does not govern
// (here on the client's first page, paced in azure/*/*/resourcegraph
// before the page shows the client's tenant).
func TestAQuerysLowTenantReadsPauseItsTenant(t *testing.T) {
	get := func(e *env, tid string) error {
		c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, tenantCred{tid}, e.base, e.opts()...)
		if err != nil {
			return err
		}
		_, err = c.GetAtTenantScope(context.Background(), "Microsoft.Compute", nil)
		return err
	}
	governed := func(e *env) cloudgazure.GraphQuerier {
		c, err := cloudgazure.NewGraphClient(tenantCred{tenantA}, e.base, e.opts()...)
		if err != nil || !c.Governed() {
			e.t.Fatalf("graph client: %v, governed %v", err, c.Governed())
		}
		return c
	}
	plain := func(e *env) cloudgazure.GraphQuerier {
		o := *e.base
		o.Retry = policy.RetryOptions{MaxRetries: -1}
		c, err := armresourcegraph.NewClient(tenantCred{tenantA}, &o)
		if err != nil {
			e.t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		name  string
		query func(e *env) error
	}{
		{"a *GraphClient's query", func(e *env) error {
			_, err := governed(e).Resources(context.Background(), query, nil)
			return err
		}},
		{"QueryResources on a *GraphClient", func(e *env) error {
			e.srv.graphPages = 1
			_, err := cloudgazure.QueryResources(context.Background(), governed(e), query, e.opts()...)
			return err
		}},
		{"QueryResources pacing a client it does not govern", func(e *env) error {
			e.srv.graphPages = 1
			_, err := cloudgazure.QueryResources(context.Background(), plain(e), query, e.opts()...)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, fast())
				e.srv.okHeaders(routeGraph, "x-ms-ratelimit-remaining-tenant-reads", "24")
				if err := c.query(e); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := get(e, tenantB); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("tenant B's tenant-level request waited %v after tenant A's query, want none", d)
				}
				if err := get(e, tenantA); err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); !near(d, time.Second, time.Millisecond) {
					t.Errorf("tenant A's tenant-level request waited %v after its tenant's query left 24 tenant reads, want 1s", d)
				}
			})
		})
	}
}
