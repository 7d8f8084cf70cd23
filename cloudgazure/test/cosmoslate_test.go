package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/resilience"
)

// cosmosThrottled answers every attempt 429 with x-ms-retry-after-ms:
// 100, and counts them.
func cosmosThrottled(n *int) policy.Transporter { return cosmosAnswers(n, http.StatusTooManyRequests) }

// cosmosAnswers answers every attempt status with x-ms-retry-after-ms:
// 100, and counts them.
func cosmosAnswers(n *int, status int) policy.Transporter {
	return transportFunc(func(req *http.Request) (*http.Response, error) {
		*n++
		h := http.Header{}
		h.Set("x-ms-retry-after-ms", "100")
		return &http.Response{StatusCode: status, Status: http.StatusText(status),
			Header: h, Body: http.NoBody, Request: req}, nil
	})
}

// A context that ends while azcore sleeps before retrying a Cosmos DB
// 429 (whose retry is asked for at once with ClientOptions) or 503 (asked
// for when it is sent, azcosmos's retry policy resending or giving up a
// 503 itself) ends the request, lost once, as cancelled, with no retry
// counted (none was sent) and none paid for.
func TestCosmosRetryCancelledInBackoffIsLostOnce(t *testing.T) {
	for _, c := range []struct {
		opts   string
		status int
	}{{"Policies", 429}, {"ClientOptions", 429}, {"Policies", 503}, {"ClientOptions", 503}} {
		opts := c.opts
		t.Run(fmt.Sprintf("%s, %d", c.opts, c.status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{})
				var sent int
				pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, governedOptions(gov, opts, cosmosAnswers(&sent, c.status)))
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "cosmos")
				ctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(100*time.Millisecond, cancel) // azcore sleeps 0.4 s or more first
				req := newAzcosmosRequest(t, ctx, http.MethodGet, "https://acct.documents.azure.com/dbs/d/colls/c/docs/x")
				budget := gov.Inspect(az("acct", "cosmosdb")).RetryBudget
				resp, err := pl.Do(req)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("answered %v, %v; want the context's error", resp, err)
				}
				if sent != 1 {
					t.Errorf("%d attempts sent, want 1", sent)
				}
				sc := gov.Summary(stats).Scopes[az("acct", "cosmosdb")]
				if sc.Calls != 1 || sc.Throttled != 1 || sc.Retries != 0 {
					t.Errorf("one throttled attempt, no retry sent, counted as %v", sc)
				}
				if ledger.Lost() != 1 || ledger.Count(resilience.LossCancelled) != 1 {
					t.Errorf("the ledger lost %d calls (%s), want one, cancelled", ledger.Lost(), ledger.Describe())
				}
				if b := gov.Inspect(az("acct", "cosmosdb")).RetryBudget; b != budget {
					t.Errorf("retry budget %v after the request, %v before: a retry never sent was paid for", b, budget)
				}
			})
		})
	}
}

// With the retry budget spent, a Cosmos DB request's third 429 has its
// retry (two are free) refused, and the request ends with the
// *resilience.RetryBudgetExhaustedError wrapping the last 429, two
// retries sent, the loss recorded once, as a give-up. azcosmos hands a
// 429 to azcore as it came, and azcore retries it: with ClientOptions,
// whose retry options the policies know, the refusal comes before
// azcore's backoff, not after it. (Policies, which do not know them, ask
// when azcore sends the retry.)
func TestCosmosLateRetryRefusedByTheBudgetIsLostOnce(t *testing.T) {
	for _, opts := range []string{"Policies", "ClientOptions"} {
		t.Run(opts, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(0)}})
				var sent int
				pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, governedOptions(gov, opts, cosmosThrottled(&sent)))
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "cosmos")
				req := newAzcosmosRequest(t, ctx, http.MethodGet, "https://acct.documents.azure.com/dbs/d/colls/c/docs/x")
				start := time.Now()
				_, err := pl.Do(req)
				took := time.Since(start)
				var rbe *resilience.RetryBudgetExhaustedError
				var re *azcore.ResponseError
				if !errors.As(err, &rbe) || !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("got %v, want a RetryBudgetExhaustedError wrapping the 429", err)
				}
				if sent != 3 {
					t.Errorf("%d attempts sent, want 1 + 2 free retries", sent)
				}
				// azcore's backoffs before the two retries sent are 0.4 to
				// 0.65 s and 1.2 to 1.95 s (RetryDelay 0.5 s); the refused
				// retry's, 2.8 to 4.55 s, is slept for nothing.
				if opts == "ClientOptions" && took >= 4*time.Second {
					t.Errorf("the refusal came after %v, want it before azcore's third backoff (the first two sum to 2.6 s at most, the three to 4.4 s at least)", took)
				}
				sc := gov.Summary(stats).Scopes[az("acct", "cosmosdb")]
				if sc.Calls != 3 || sc.Throttled != 3 || sc.Retries != 2 || sc.GaveUp != 1 {
					t.Errorf("three attempts, two retries, one give-up, counted as %v", sc)
				}
				if g, _ := ledger.Counts(); g != 1 || ledger.Lost() != 1 {
					t.Errorf("the ledger lost %d calls (%s), want one give-up", ledger.Lost(), ledger.Describe())
				}
			})
		})
	}
}

// A Cosmos DB request asleep in azcore's backoff after a 429 when its
// account's breaker opens ends then, as any other request does: azcosmos
// hands a 429 to azcore as it came (its retry policy retries 503, 408,
// 500, 502 and 504, never 429), so that azcore retries it and the retry
// is asked for at once, and the breaker's opening cuts the sleep before
// a retry it would refuse. It ends with the *resilience.CircuitOpenError,
// one attempt sent, lost once, as a give-up. (Policies, which do not know
// azcore's backoff, never cut it.)
func TestBreakerOpeningEndsACosmosRequestsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 20, MaxBackoffSeconds: 20}})
		var sent int
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, governedOptions(gov, "ClientOptions", cosmosThrottled(&sent)))
		ctx, ledger := resilience.WithLedger(context.Background(), "cosmos")
		req := newAzcosmosRequest(t, ctx, http.MethodGet, "https://acct.documents.azure.com/dbs/d/colls/c/docs/x")
		start := time.Now()
		var at time.Duration
		done := make(chan error)
		go func() {
			_, err := pl.Do(req)
			at = time.Since(start)
			done <- err
		}()
		synctest.Wait() // throttled once, asleep in azcore's 16 to 20 s backoff
		time.Sleep(time.Second)
		for range 5 { // five calls of the account's scope give up: the breaker opens
			resilience.Do(context.Background(), az("acct", "cosmosdb"), func(context.Context) error { return tooMany{} },
				resilience.WithGovernor(gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		}
		opened := time.Since(start)
		err := <-done
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || at != opened {
			t.Fatalf("the request ended at %v with %v; the breaker opened at %v: want a CircuitOpenError then", at, err, opened)
		}
		if sent != 1 {
			t.Errorf("%d attempts sent, want 1", sent)
		}
		if gu, sk := ledger.Counts(); gu != 1 || sk != 0 || ledger.Lost() != 1 {
			t.Errorf("ledger: %d gave up, %d skipped, %d lost; want 1, 0, 1 (%s)", gu, sk, ledger.Lost(), ledger.Describe())
		}
	})
}
