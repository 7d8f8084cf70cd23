package test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/statuspage"
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
	throttled   = &apiErr{code: "Throttling", status: 400}
	tooMany     = &apiErr{code: "TooManyRequests", status: 429}
	serverError = &apiErr{code: "InternalError", status: 500}
	retryAfter  = &apiErr{code: "Throttling", status: 400, header: http.Header{"Retry-After": {"60"}}}
)

// The scan's scopes: two AWS accounts, an Azure subscription and a GCP
// project, as an inventory scan calls them.
const (
	acct1 = "111111111111"
	acct2 = "222222222222"
	sub   = "8f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f"
	proj  = "projects/inventory-prod"
)

var (
	ec2Instances = resilience.Scope{Provider: "aws", Account: acct1, Region: "eu-west-1", Service: "ec2", Operation: "DescribeInstances"}
	ec2Endpoints = resilience.Scope{Provider: "aws", Account: acct1, Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcEndpointServiceConfigurations"}
	ec2East      = resilience.Scope{Provider: "aws", Account: acct1, Region: "us-east-1", Service: "ec2", Operation: "DescribeInstances"}
	iamRoles     = resilience.Scope{Provider: "aws", Account: acct1, Service: "iam"} // paced per service: the leaf of ListRoles
	ec2Subnets   = resilience.Scope{Provider: "aws", Account: acct2, Region: "eu-west-1", Service: "ec2", Operation: "DescribeSubnets"}
	ec2Attribute = resilience.Scope{Provider: "aws", Account: acct2, Region: "eu-west-1", Service: "ec2", Operation: "DescribeInstanceAttribute"}
	keyVault     = resilience.Scope{Provider: "azure", Account: sub, Service: "keyvault"}
	network      = resilience.Scope{Provider: "azure", Account: sub, Service: "network"}
	storage      = resilience.Scope{Provider: "azure", Account: sub, Service: "storage"}
	listAssets   = resilience.Scope{Provider: "gcp", Account: proj, Service: "cloudasset", Operation: "ListAssets"}
	searchAll    = resilience.Scope{Provider: "gcp", Account: proj, Service: "cloudasset", Operation: "SearchAllResources"}
	gce          = resilience.Scope{Provider: "gcp", Account: proj, Region: "europe-west1", Service: "compute"}
)

// want is the state the page must show for each scope of the scan.
var want = map[resilience.Scope]string{
	ec2Subnets:   "open",
	gce:          "half-open",
	iamRoles:     "paused",
	keyVault:     "dead",
	ec2Instances: "slowed",
	listAssets:   "queued",
	ec2Endpoints: "ok",
	ec2East:      "ok",
	ec2Attribute: "ok",
	network:      "ok",
	storage:      "ok",
	searchAll:    "ok",
}

// config is the scan's: the built-in defaults, with IAM at 10 rps, at
// most 3 calls in flight per Azure subscription, and GCP breakers that
// open after 3 failed calls and probe after 5 s.
const config = `
aws:
  services:
    iam: {max_rps: 10, burst: 10}
azure:
  max_concurrency: 3
  breaker_threshold: 3
  breaker_cooldown_seconds: 30
gcp:
  breaker_threshold: 3
  breaker_cooldown_seconds: 5
`

// rendered is the page as the handler served it: its HTML and JSON with
// their headers.
type rendered struct {
	html, json         []byte
	htmlHeader, jsonHd http.Header
}

// scan runs a scan, in virtual time, that leaves its governor with a
// scope in each state, and renders the status page at that moment:
//
//   - ec2 DescribeSubnets of the second AWS account is open: five calls
//     failed with HTTP 500 (the next two were skipped);
//   - GCP compute is half-open: it opened after throttling, and its probe
//     is out;
//   - IAM is paused by a Retry-After of 60 s, with six callers queued;
//   - Azure Key Vault is dead, throttled for good: every answer for more
//     than ten seconds was HTTP 429;
//   - ec2 DescribeInstances in eu-west-1 is slowed by throttling;
//   - Cloud Asset ListAssets is queued: more callers than its tokens;
//   - the others are ok, and the Azure subscription's three slots are
//     taken, two callers waiting for one.
//
// A scope is dead once its failures have lasted ten seconds (the
// default breaker_dead_seconds) without a success, so the open and the
// half-open scopes fail within the last ten seconds before the page is
// rendered, and Key Vault dies less than its 30 s cooldown before it.
func scan(t *testing.T) rendered { return scanWith(t, more{}) }

// more is what scanWith adds to the scan.
type more struct {
	// cancelled is the calls more to each extra scope whose context was
	// cancelled before they were sent: the lost calls a long-running
	// governor counts.
	cancelled int
	// accountPause, when set, pauses the Azure subscription for that long
	// as the page is rendered, as cloudgazure does when the
	// subscription's reads run low (Guard.PauseAccount).
	accountPause time.Duration
	// providerQueue, when set, gives the provider of the first extra
	// scope a provider-wide bucket (global_max_rps 20, burst 1) and
	// queues that many callers of the scope on it as the page is
	// rendered: all but the first wait for a token.
	providerQueue int
	// perOperation, when set, gives each operation of the first extra
	// scope's provider a leaf of its own (per_operation: true), so that
	// its rows show the operation after the service.
	perOperation bool
}

// scanWith is scan with one call more to each of extra, among the scan's
// first pages, and what m adds.
func scanWith(t *testing.T, m more, extra ...resilience.Scope) rendered {
	var out rendered
	synctest.Test(t, func(t *testing.T) {
		cfg, err := resilience.ParseConfig([]byte(config))
		if err != nil {
			t.Fatal(err)
		}
		if m.providerQueue > 0 {
			rps := 20.0
			if cfg.Providers == nil {
				cfg.Providers = map[string]resilience.ProviderConfig{}
			}
			pc := cfg.Providers[extra[0].Provider]
			pc.GlobalMaxRPS, pc.GlobalBurst = &rps, 1
			cfg.Providers[extra[0].Provider] = pc
		}
		if m.perOperation {
			if cfg.Providers == nil {
				cfg.Providers = map[string]resilience.ProviderConfig{}
			}
			pc := cfg.Providers[extra[0].Provider]
			on := true
			pc.PerOperation = &on
			cfg.Providers[extra[0].Provider] = pc
		}
		clock := shiftedClock{time.Until(scanStart)}
		g, err := resilience.NewGovernor(cfg, resilience.WithRandom(rand.NewPCG(27, 1)), resilience.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		gov := resilience.WithGovernor(g)
		fail := func(err error) func(context.Context) error {
			return func(context.Context) error { return err }
		}
		ok := fail(nil)
		once := resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})
		var wg sync.WaitGroup
		release := make(chan struct{})
		defer func() { // the calls still waiting or holding end with the test
			cancel()
			close(release)
			wg.Wait()
		}()

		// The scan's first pages: calls at the scopes' rates.
		pages := map[resilience.Scope]int{ec2Instances: 30, ec2Endpoints: 12, ec2East: 40, ec2Attribute: 25, network: 30, storage: 14, searchAll: 18, listAssets: 3, iamRoles: 8, gce: 20}
		for _, sc := range extra {
			pages[sc]++
		}
		for sc, n := range pages {
			wg.Go(func() {
				for range n {
					resilience.Do(ctx, sc, ok, gov)
				}
			})
		}
		wg.Wait()
		if m.cancelled > 0 {
			gone, cancel := context.WithCancel(ctx)
			cancel()
			for _, sc := range extra {
				for range m.cancelled {
					resilience.Do(gone, sc, ok, gov)
				}
			}
		}

		// DescribeInstances is throttled twice, a second apart: its rate
		// is cut each time, and recovers slowly with the next pages.
		for range 2 {
			n := 0
			resilience.Do(ctx, ec2Instances, func(context.Context) error {
				if n++; n == 1 {
					return throttled
				}
				return nil
			}, gov)
			time.Sleep(time.Second)
		}
		for range 10 {
			resilience.Do(ctx, ec2Instances, ok, gov)
		}

		// Key Vault answers 429 to every call, four collectors at once:
		// after ten seconds of nothing else it is dead, its breaker opens,
		// and the collectors' next calls are skipped.
		for range 4 {
			wg.Go(func() {
				for range 3 {
					resilience.Do(ctx, keyVault, fail(tooMany), gov)
				}
			})
		}
		wg.Wait()

		// GCP compute is throttled until its breaker opens; after its
		// cooldown a probe goes out, and is still out when the page is
		// rendered.
		for range 3 {
			resilience.Do(ctx, gce, fail(tooMany), gov, once)
		}
		time.Sleep(5 * time.Second)
		probe, err := g.Begin(ctx, gce)
		if err != nil {
			t.Fatal(err)
		}
		if err := probe.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		defer probe.End(nil)

		// DescribeSubnets fails with HTTP 500 until its breaker opens;
		// the next calls are skipped.
		for range 7 {
			resilience.Do(ctx, ec2Subnets, fail(serverError), gov, once)
		}

		// The Azure subscription's slots: two slow network calls and a
		// storage call hold them, and two more calls wait for one.
		for _, sc := range []resilience.Scope{network, network, storage, network, storage} {
			wg.Go(func() {
				resilience.Do(ctx, sc, func(ctx context.Context) error {
					select {
					case <-release:
					case <-ctx.Done():
					}
					return nil
				}, gov)
			})
			synctest.Wait()
		}

		// IAM asks for 60 s of quiet; six collectors queue for its tokens.
		resilience.Do(ctx, iamRoles, fail(retryAfter), gov, once)
		for range 6 {
			wg.Go(func() { resilience.Do(ctx, iamRoles, ok, gov) })
		}
		// ListAssets (1.5 rps) has more collectors than tokens.
		for range 16 {
			wg.Go(func() { resilience.Do(ctx, listAssets, ok, gov) })
		}
		synctest.Wait()
		time.Sleep(2 * time.Second) // two seconds into IAM's pause
		synctest.Wait()

		if m.accountPause > 0 {
			gd, err := g.Begin(ctx, storage)
			if err != nil {
				t.Fatal(err)
			}
			gd.PauseAccount(m.accountPause)
			gd.End(nil)
		}
		for range m.providerQueue {
			wg.Go(func() { resilience.Do(ctx, extra[0], ok, gov) })
		}
		synctest.Wait()
		h := statuspage.New(statuspage.WithGovernor(g))
		for _, target := range []string{"/debug/cloudg", "/debug/cloudg?format=json"} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
			if w.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", target, w.Code, w.Body)
			}
			if target == "/debug/cloudg" {
				out.html, out.htmlHeader = w.Body.Bytes(), w.Header()
			} else {
				out.json, out.jsonHd = w.Body.Bytes(), w.Header()
			}
		}
	})
	return out
}

// scanStart is when the scan starts on the page's clock.
var scanStart = time.Date(2026, 12, 2, 9, 14, 0, 0, time.UTC)

// shiftedClock is the time package's clock, the synctest bubble's virtual
// time, moved by shift: the page shows the scan's date rather than the
// bubble's, which starts in 2000.
type shiftedClock struct{ shift time.Duration }

func (c shiftedClock) Now() time.Time { return time.Now().Add(c.shift) }

func (c shiftedClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
