package test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// A request's first two retries are free of the retry budget, and each
// further one costs a token of it, however many authentication
// challenges its vault answers between them: the resend that answers a
// challenge (Key Vault's challenge policy sends the request again with a
// token, inside the same try of azcore's loop) is no retry, and no new
// request either, whose retries would start free again. It was the
// Guard's next call, with free retries of its own: a request whose vault
// throttled it, challenged its retry, throttled the resend, challenged
// the next retry, and so on, never paid the budget, where the same
// request throttled alone paid for every retry past its second. Through
// a real azsecrets client, with ClientOptions and with Policies.
func TestAChallengeResendGivesNoFreeRetries(t *testing.T) {
	const retries = 5
	for _, opts := range []string{"ClientOptions", "Policies"} {
		t.Run(opts, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(retries)}})
				ctx, stats := resilience.WithStats(context.Background())
				vault := az("myvault", cloudgazure.ServiceKeyVault)

				// The client's first request: challenged (no token yet),
				// then throttled, and each retry challenged again, its
				// resend throttled, until the last resend succeeds.
				statuses := []int{http.StatusTooManyRequests}
				for range retries - 1 {
					statuses = append(statuses, http.StatusUnauthorized, http.StatusTooManyRequests)
				}
				statuses = append(statuses, http.StatusUnauthorized, http.StatusOK)
				// The same client's second request: throttled alone.
				for range retries {
					statuses = append(statuses, http.StatusTooManyRequests)
				}
				fake := &vaultTransport{statuses: statuses}
				o := governedOptions(gov, opts, fake)
				o.Retry.MaxRetries = retries // Policies leave azcore's retry options to the caller
				client, err := azsecrets.NewClient("https://myvault.vault.azure.net", fakeCred{}, &azsecrets.ClientOptions{ClientOptions: *o})
				if err != nil {
					t.Fatal(err)
				}
				spent := func() (float64, int64) {
					before, r0 := gov.Budget(cloudgazure.Provider), gov.Summary(stats).Scopes[vault].Retries
					if _, err := client.GetSecret(ctx, "s", "", nil); err != nil {
						t.Fatalf("GetSecret (answers %v): %v", fake.answered, err)
					}
					return before - gov.Budget(cloudgazure.Provider), gov.Summary(stats).Scopes[vault].Retries - r0
				}
				challenged, r1 := spent()
				plain, r2 := spent()
				if r1 != retries || r2 != retries {
					t.Fatalf("answers %v: %d and %d retries counted; want %d each", fake.answered, r1, r2, retries)
				}
				if math.Abs(challenged-plain) > 1e-9 {
					t.Errorf("%d retries with a challenge before each of them but the first took %.2f of the retry budget, %d retries alone %.2f: want the same (%d retries paid for, the first two free)",
						retries, challenged, retries, plain, retries-2)
				}
			})
		})
	}
}

// A request's deadline (deadline_seconds) bounds it whole, whatever
// authentication challenges its vault answers between its retries: the
// resend that answers a challenge is the same request, not a new one
// with a deadline of its own. It was the Guard's next call, whose
// deadline began then: a request throttled with a Retry-After of 8 s,
// its every retry challenged, went on past its deadline of 20 s, until
// azcore's retries ran out. It ends with the vault's last throttle, the
// retry after it past the deadline. Through a real azsecrets client, with
// ClientOptions and with Policies.
func TestAChallengeResendKeepsTheRequestsDeadline(t *testing.T) {
	const retries, deadline = 5, 20 * time.Second
	for _, opts := range []string{"ClientOptions", "Policies"} {
		t.Run(opts, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(retries),
					DeadlineSeconds: deadline.Seconds()}})
				statuses := []int{http.StatusTooManyRequests}
				for range retries {
					statuses = append(statuses, http.StatusUnauthorized, http.StatusTooManyRequests)
				}
				statuses[len(statuses)-1] = http.StatusOK
				fake := &vaultTransport{statuses: statuses, retryAfter: "8"}
				o := governedOptions(gov, opts, fake)
				o.Retry.MaxRetries = retries
				client, err := azsecrets.NewClient("https://myvault.vault.azure.net", fakeCred{}, &azsecrets.ClientOptions{ClientOptions: *o})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err = client.GetSecret(context.Background(), "s", "", nil)
				var re *azcore.ResponseError
				if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
					t.Errorf("GetSecret (answers %v): %v; want the vault's last 429, the retry after it past the deadline", fake.answered, err)
				}
				for i, at := range fake.at {
					if d := at.Sub(start); d >= deadline {
						t.Errorf("the vault answered %v, the %d. answer (%d) %v after the request began; want none past its deadline of %v",
							fake.answered, i+1, fake.answered[i], d, deadline)
						break
					}
				}
			})
		})
	}
}
