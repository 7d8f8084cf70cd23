//go:build go1.25

package statuspage

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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
	transient = &apiErr{code: "InternalError", status: 500}
	once      = resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})
)

// The scopes of the estate, one per status.
var (
	halfOpen = resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
	open     = resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeSubnets"}
	paused   = resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
	slowed   = resilience.Scope{Provider: "gcp", Account: "projects/p2", Service: "cloudasset", Operation: "SearchAllResources"}
	queued   = resilience.Scope{Provider: "azure", Account: "sub-1", Service: "network"}
	fine     = resilience.Scope{Provider: "azure", Account: "sub-2", Service: "compute"}
)

// estate makes a governor, in the caller's synctest bubble, whose scopes
// stand one in each status: an open breaker, a half-open one whose probe
// is out, a pause, a slowed rate, calls queued for the account's only
// slot, and a healthy scope. The calls it leaves holding end at cleanup.
func estate(t *testing.T) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(resilience.Config{
		AWS:   resilience.ProviderConfig{BreakerThreshold: 1},
		Azure: resilience.ProviderConfig{MaxConcurrency: 1},
	}, resilience.WithRandom(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gov := resilience.WithGovernor(g)
	fail := func(err error) func(context.Context) error {
		return func(context.Context) error { return err }
	}
	ok := fail(nil)

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
	resilience.Do(ctx, slowed, fail(throttled), gov, once) // halved, and a give-up

	holder, _ := g.Begin(ctx, queued)
	if err := holder.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	go resilience.Do(ctx, queued, ok, gov)
	go resilience.Do(ctx, queued, ok, gov)
	resilience.Do(ctx, fine, ok, gov)
	synctest.Wait()
	t.Cleanup(func() {
		holder.End(nil)
		probe.End(nil)
		synctest.Wait()
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
	Statuses       map[string]int `json:"statuses"`
	Totals         struct {
		Calls    int64 `json:"calls"`
		GaveUp   int64 `json:"gave_up"`
		Rejected int64 `json:"rejected"`
	} `json:"totals"`
	Scopes []struct {
		Scope  resilience.Scope `json:"scope"`
		Key    string           `json:"key"`
		Status string           `json:"status"`
		State  struct {
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
		} `json:"state"`
		Counters struct {
			Scope     resilience.Scope `json:"scope"`
			Calls     int64            `json:"calls"`
			Throttled int64            `json:"throttled"`
			GaveUp    int64            `json:"gave_up"`
			Rejected  int64            `json:"rejected"`
		} `json:"counters"`
	} `json:"scopes"`
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
