//go:build go1.25

package statuspage

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// apiErr is an SDK-shaped error the governor reads by its method sets.
type apiErr struct {
	code   string
	status int
	header http.Header
}

func (e *apiErr) Error() string       { return e.code }
func (e *apiErr) ErrorCode() string   { return e.code }
func (e *apiErr) HTTPStatusCode() int { return e.status }
func (e *apiErr) Header() http.Header { return e.header }

var (
	throttled = &apiErr{code: "Throttling", status: 400}
	tooMany   = &apiErr{code: "TooManyRequests", status: 429}
	transient = &apiErr{code: "InternalError", status: 500}
	once      = resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})
)

// The scopes of the estate, one per status, and two more: a scope whose
// account's only slot is taken (the account is queued, the scope ok) and
// a healthy one.
var (
	open     = resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeSubnets"}
	halfOpen = resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
	paused   = resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
	dead     = resilience.Scope{Provider: "azure", Account: "sub-3", Service: "keyvault"}
	slowed   = resilience.Scope{Provider: "gcp", Account: "projects/p2", Service: "cloudasset", Operation: "SearchAllResources"}
	queued   = resilience.Scope{Provider: "gcp", Account: "projects/p3", Service: "cloudasset", Operation: "ListAssets"}
	slots    = resilience.Scope{Provider: "azure", Account: "sub-1", Service: "network"}
	fine     = resilience.Scope{Provider: "azure", Account: "sub-2", Service: "compute"}
)

// estate makes a governor, in the caller's synctest bubble, whose scopes
// stand one in each status: an open breaker (it opened on errors, and
// skipped a call), a half-open one whose probe is out, a pause with three
// callers queued, a dead scope (throttled for good), a slowed rate, four
// callers queued for a scope's tokens, and two ok scopes, one of which
// has its account's only slot taken and two callers waiting for it. The
// calls it leaves holding or waiting end at cleanup.
func estate(t *testing.T) *resilience.Governor {
	t.Helper()
	off := 0.0
	g, err := resilience.NewGovernor(resilience.Config{
		// AWS finds no scope dead, so that the half-open scope, whose
		// only failure is a minute old, stays half-open.
		AWS:   resilience.ProviderConfig{BreakerThreshold: 1, BreakerDeadSeconds: &off},
		Azure: resilience.ProviderConfig{MaxConcurrency: 1, BreakerThreshold: 3},
	}, resilience.WithRandom(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gov := resilience.WithGovernor(g)
	fail := func(err error) func(context.Context) error {
		return func(context.Context) error { return err }
	}
	ok := fail(nil)
	var wg sync.WaitGroup

	for range 4 { // Key Vault answers only 429: after ten seconds it is dead
		wg.Go(func() { resilience.Do(ctx, dead, fail(tooMany), gov) })
	}
	wg.Wait()

	resilience.Do(ctx, halfOpen, fail(transient), gov, once)
	time.Sleep(time.Minute) // its cooldown: the next call is the probe
	probe, _ := g.Begin(ctx, halfOpen)
	if err := probe.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	resilience.Do(ctx, open, fail(transient), gov, once)
	resilience.Do(ctx, open, ok, gov) // rejected: a skipped call

	pg, _ := g.Begin(ctx, paused)
	pg.Pause(90 * time.Second)
	pg.End(nil)
	for range 3 {
		wg.Go(func() { resilience.Do(ctx, paused, ok, gov) })
	}
	resilience.Do(ctx, slowed, fail(throttled), gov, once) // halved, and a give-up
	for range 14 {                                         // ListAssets holds 10 tokens
		wg.Go(func() { resilience.Do(ctx, queued, ok, gov) })
	}

	holder, _ := g.Begin(ctx, slots)
	if err := holder.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		wg.Go(func() { resilience.Do(ctx, slots, ok, gov) })
	}
	resilience.Do(ctx, fine, ok, gov)
	synctest.Wait()
	t.Cleanup(func() {
		cancel()
		holder.End(nil)
		probe.End(nil)
		wg.Wait()
	})
	return g
}

// get serves one request to h and returns the response.
func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// served is the JSON form of the page, as a client reads it.
type served struct {
	Time           time.Time      `json:"time"`
	RefreshSeconds float64        `json:"refresh_seconds"`
	Live           int            `json:"live_scopes"`
	LiveAccounts   int            `json:"live_accounts"`
	LiveProviders  int            `json:"live_providers"`
	Statuses       map[string]int `json:"statuses"`
	Totals         struct {
		Calls    int64 `json:"calls"`
		GaveUp   int64 `json:"gave_up"`
		Rejected int64 `json:"rejected"`
	} `json:"totals"`
	Scopes []struct {
		Scope    resilience.Scope `json:"scope"`
		Key      string           `json:"key"`
		Status   string           `json:"status"`
		Reason   string           `json:"reason"`
		Queued   int              `json:"queued"`
		QueuedOn *string          `json:"queued_on"`
		PausedOn *string          `json:"paused_on"`
		State    struct {
			Leaf struct {
				Rate    float64 `json:"rate_rps"`
				Ceiling float64 `json:"ceiling_rps"`
				Tokens  float64 `json:"tokens"`
				Paused  float64 `json:"paused_seconds"`
			} `json:"leaf"`
			Breaker struct {
				State   string  `json:"state"`
				RetryIn float64 `json:"retry_in_seconds"`
			} `json:"breaker"`
			PausedUntil time.Time `json:"paused_until"`
			InFlight    int       `json:"in_flight"`
			Waiting     int       `json:"waiting"`
			MaxInFlight int       `json:"max_in_flight"`
			RetryBudget float64   `json:"retry_budget"`
			Queued      int       `json:"queued"`
			Dead        string    `json:"dead"`
			OpenReason  string    `json:"open_reason"`
		} `json:"state"`
		Counters struct {
			Scope     resilience.Scope `json:"scope"`
			Calls     int64            `json:"calls"`
			Throttled int64            `json:"throttled"`
			GaveUp    int64            `json:"gave_up"`
			Rejected  int64            `json:"rejected"`
		} `json:"counters"`
	} `json:"scopes"`
	Accounts []struct {
		Provider    string `json:"provider"`
		Account     string `json:"account"`
		Status      string `json:"status"`
		Scopes      int    `json:"scopes"`
		InFlight    int    `json:"in_flight"`
		MaxInFlight int    `json:"max_in_flight"`
		Waiting     int    `json:"waiting"`
		Bucket      *struct {
			Rate    float64 `json:"rate_rps"`
			Ceiling float64 `json:"ceiling_rps"`
		} `json:"bucket"`
		Queued        int      `json:"queued"`
		QueuedOn      *string  `json:"queued_on"`
		PausedSeconds *float64 `json:"paused_seconds"`
		PausedOn      *string  `json:"paused_on"`
	} `json:"accounts"`
	Providers []provided `json:"providers"`
	Disabled  []string   `json:"disabled_providers"`
	// DisabledCount is every provider disabled; Disabled holds the first
	// the limit shows.
	DisabledCount int `json:"disabled_count"`
}

// provided is a provider's retry budget, and its provider-wide bucket,
// as the JSON serves them.
type provided struct {
	Name        string  `json:"name"`
	RetryBudget float64 `json:"retry_budget"`
	Bucket      *struct {
		Rate    float64 `json:"rate_rps"`
		Ceiling float64 `json:"ceiling_rps"`
	} `json:"bucket"`
	Queued int `json:"queued"`
}

func decode(t *testing.T, w *httptest.ResponseRecorder) served {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	var s served
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatalf("%v in %s", err, w.Body)
	}
	return s
}
