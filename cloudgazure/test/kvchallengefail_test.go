package test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// cancellingCred is a credential that ends the request's context as its
// token is asked for, and returns the context's error.
type cancellingCred struct{ cancel context.CancelFunc }

func (c cancellingCred) GetToken(ctx context.Context, _ policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.cancel()
	return azcore.AccessToken{}, ctx.Err()
}

// A Key Vault request whose vault answered its first send with the
// authentication challenge, and whose token could then not be had (the
// credential failed, or the request's context ended while it was
// fetched), was never resent: the caller gets the credential's or the
// context's error, and the call is lost, as errored or cancelled, as a
// request whose token fails before its first send is. The 401 was no
// final answer of the vault's but its challenge, which the resend that
// never came would have answered. Through a real azsecrets client, with
// ClientOptions and with Policies.
func TestAVaultChallengeWhoseTokenFailsIsLost(t *testing.T) {
	for _, opts := range []string{"ClientOptions", "Policies"} {
		for _, tc := range []struct {
			name   string
			cancel bool
			loss   resilience.Loss
		}{
			{"credential fails", false, resilience.LossErrored},
			{"context ends", true, resilience.LossCancelled},
		} {
			t.Run(opts+"/"+tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					gov := newGov(t, resilience.Config{})
					ctx, stats := resilience.WithStats(context.Background())
					ctx, ledger := resilience.WithLedger(ctx, "secrets")
					ctx, cancel := context.WithCancel(ctx)
					defer cancel()
					var cred azcore.TokenCredential = failingCred{}
					if tc.cancel {
						cred = cancellingCred{cancel}
					}
					client, fake := myVaultClient(t, gov, opts, cred)
					if _, err := client.GetSecret(ctx, "s", "", nil); err == nil {
						t.Fatal("GetSecret succeeded without a token")
					}
					if len(fake.answered) != 1 {
						t.Fatalf("the vault answered %v, want the challenge alone", fake.answered)
					}
					if n := ledger.Count(tc.loss); n != 1 || ledger.Lost() != 1 {
						t.Errorf("ledger %q (totals %v); want the request lost as %v", ledger.Describe(), gov.Summary(stats).Totals, tc.loss)
					}
				})
			})
		}
	}
}

// answeringCred is a credential whose token endpoint answered status: it
// returns that answer as an *azcore.ResponseError, as a credential that
// fetches its token through an azcore pipeline does.
type answeringCred struct{ status int }

func (c answeringCred) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	req, err := http.NewRequest(http.MethodPost, "https://login.microsoftonline.com/tenant/oauth2/v2.0/token", nil)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	resp := &http.Response{StatusCode: c.status, Header: http.Header{"Retry-After": {"30"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`))}
	return azcore.AccessToken{}, runtime.NewResponseError(resp)
}

// A vault's challenge whose token the credential's token endpoint
// refused (its 400, or its 429) is the credential's failure, not the
// vault's answer: the request is lost as errored, and the vault's scope
// is neither slowed nor paused for the token endpoint's throttle. It was
// lost with nothing recorded after a 400 (read as the vault's fatal
// answer), and as the vault's throttle after a 429.
func TestAVaultChallengeWhoseTokenEndpointRefusesIsLost(t *testing.T) {
	for _, opts := range []string{"ClientOptions", "Policies"} {
		for _, status := range []int{http.StatusBadRequest, http.StatusTooManyRequests} {
			t.Run(fmt.Sprint(opts, "/", status), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					gov := newGov(t, resilience.Config{})
					ctx, stats := resilience.WithStats(context.Background())
					ctx, ledger := resilience.WithLedger(ctx, "secrets")
					client, _ := myVaultClient(t, gov, opts, answeringCred{status})
					if _, err := client.GetSecret(ctx, "s", "", nil); err == nil {
						t.Fatal("GetSecret succeeded without a token")
					}
					lostToTokenEndpoint(t, gov, stats, ledger, "request")
				})
			})
		}
	}
}

// expiringCred gives a token that expires in a minute, then answers as
// a token endpoint that refuses with status (answeringCred).
type expiringCred struct {
	n      *atomic.Int32
	status int
}

func (c expiringCred) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	if c.n.Add(1) == 1 {
		return azcore.AccessToken{Token: "t", ExpiresOn: time.Now().Add(time.Minute)}, nil
	}
	return answeringCred{c.status}.GetToken(ctx, o)
}

// A request whose token the credential's token endpoint refuses before
// the request's first send (its token expired, the endpoint answers 429
// with a Retry-After of 30 s, or 400) is lost as errored: the vault
// answered nothing, and its scope is neither throttled nor paused. It was
// read as the vault's throttle (gave up, the vault paused 30 s), or as
// the vault's fatal answer (nothing lost).
func TestATokenEndpointsRefusalBeforeTheFirstSendIsNoVaultAnswer(t *testing.T) {
	for _, opts := range []string{"ClientOptions", "Policies"} {
		for _, status := range []int{http.StatusBadRequest, http.StatusTooManyRequests} {
			t.Run(fmt.Sprint(opts, "/", status), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					gov := newGov(t, resilience.Config{})
					ctx, stats := resilience.WithStats(context.Background())
					ctx, ledger := resilience.WithLedger(ctx, "secrets")
					client, fake := myVaultClient(t, gov, opts, expiringCred{new(atomic.Int32), status})
					if _, err := client.GetSecret(ctx, "s", "", nil); err != nil {
						t.Fatal(err)
					}
					time.Sleep(2 * time.Minute) // the token expires
					if _, err := client.GetSecret(ctx, "s", "", nil); err == nil {
						t.Fatal("GetSecret succeeded without a token")
					}
					if len(fake.answered) != 2 {
						t.Fatalf("the vault answered %v, want the challenge and the first request's answer", fake.answered)
					}
					lostToTokenEndpoint(t, gov, stats, ledger, "second request")
				})
			})
		}
	}
}

// myVaultClient is an azsecrets client of the vault myvault, governed by
// gov through opts ("ClientOptions" or "Policies", governedOptions), that
// gets its tokens from cred and sends to the vaultTransport it returns.
func myVaultClient(t *testing.T, gov *resilience.Governor, opts string, cred azcore.TokenCredential) (*azsecrets.Client, *vaultTransport) {
	t.Helper()
	fake := &vaultTransport{}
	client, err := azsecrets.NewClient("https://myvault.vault.azure.net", cred,
		&azsecrets.ClientOptions{ClientOptions: *governedOptions(gov, opts, fake)})
	if err != nil {
		t.Fatal(err)
	}
	return client, fake
}

// lostToTokenEndpoint fails the test unless the run lost one request,
// what, as errored, and the token endpoint's answer was not read as the
// vault's: nothing throttled, the vault's scope not paused.
func lostToTokenEndpoint(t *testing.T, gov *resilience.Governor, stats *resilience.Stats, ledger *resilience.Ledger, what string) {
	t.Helper()
	tot := gov.Summary(stats).Totals
	if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
		t.Errorf("ledger %q (totals %v); want the %s lost as errored", ledger.Describe(), tot, what)
	}
	if snap := gov.Inspect(az("myvault", cloudgazure.ServiceKeyVault)); tot.Throttled != 0 || !snap.PausedUntil.IsZero() {
		t.Errorf("totals %v, the vault paused until %v: the token endpoint's answer read as the vault's", tot, snap.PausedUntil)
	}
}
