//go:build go1.25

package statuspage

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A scope whose callers wait for the provider's provider-wide bucket
// (global_max_rps) is queued, and says on which bucket they wait; so is
// every scope of the provider, whose next call waits behind them, and
// every account; the provider's bucket is shown once, with its queue, in
// the HTML and the JSON. Before, with AWS at global_max_rps 1 and 5
// callers queued on it, every scope and account read "ok: at its
// ceiling, nothing waits".
func TestPageShowsTheProviderBucketsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := queuedOnTheProviderBucket(t)

		h := New(WithGovernor(g))
		body := get(t, h, http.MethodGet, "/debug/cloudg").Body.String()
		rows := rowsOf(body, "scopes")
		if n := strings.Count(body, `title="ok: at its ceiling, nothing waits"`); n > 0 {
			t.Errorf("%d of %d scopes read \"ok: at its ceiling, nothing waits\" while 5 callers queue on the provider bucket", n, len(rows))
		}
		if len(rows) != 2 {
			t.Fatalf("%d scope rows, want 2:\n%s", len(rows), body)
		}
		for i, r := range rows {
			for _, s := range []string{
				`data-status="queued"`,
				`title="queued: 5 callers wait for a token of the provider&#39;s bucket (global_max_rps)"`,
				`<td class="num hot queued" data-label="queued">5 <span class="dim">prov</span></td>`,
			} {
				if !strings.Contains(r, s) {
					t.Errorf("scope row %d lacks %s:\n%s", i, s, r)
				}
			}
		}
		accounts := rowsOf(body, "accounts")
		for i, r := range accounts {
			for _, s := range []string{`data-status="queued"`, `<td class="num hot queued" data-label="queued">5 <span class="dim">prov</span></td>`} {
				if !strings.Contains(r, s) {
					t.Errorf("account row %d lacks %s:\n%s", i, s, r)
				}
			}
		}
		if want := `provider bucket: <bdi dir="ltr">aws</bdi> <b>1 / 1</b> rps, <b>5</b> queued`; !strings.Contains(body, want) {
			_, totals, _ := strings.Cut(body, `<section class="totals"`)
			totals, _, _ = strings.Cut(totals, "</section>")
			t.Errorf("the page's totals lack %s:\n%s", want, totals)
		}

		js := get(t, h, http.MethodGet, "/debug/cloudg?format=json")
		s := decode(t, js)
		if len(s.Providers) != 1 || s.Providers[0].Bucket == nil || s.Providers[0].Bucket.Ceiling != 1 || s.Providers[0].Queued != 5 {
			t.Errorf("the JSON's providers: %+v; want aws with its bucket (ceiling 1) and 5 queued:\n%s", s.Providers, js.Body)
		}
		for _, r := range s.Scopes {
			if r.Status != "queued" {
				t.Errorf("the JSON's scope %s is %s, want queued", r.Key, r.Status)
			}
		}
		time.Sleep(time.Minute)
	})
}

// The JSON says what the HTML shows: an account's (and a scope's) queued
// is the callers its next call would wait behind, those of its
// provider's bucket when they are more, with queued_on saying so, and an
// account held by its provider bucket's pause has that pause in
// paused_seconds, with paused_on saying whose it is. Before, with 5
// callers queued on AWS's provider bucket, each account read "queued"
// with queued 0 beside the HTML's "5 prov".
func TestJSONSaysWhereAnAccountQueuesAndPauses(t *testing.T) {
	str := func(p *string) string {
		if p == nil {
			return "none"
		}
		return *p
	}
	t.Run("queued", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := queuedOnTheProviderBucket(t)

			js := get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json")
			s := decode(t, js)
			if len(s.Accounts) != 2 || len(s.Scopes) != 2 {
				t.Fatalf("%d accounts and %d scopes, want 2 and 2:\n%s", len(s.Accounts), len(s.Scopes), js.Body)
			}
			for _, a := range s.Accounts {
				if a.Status != "queued" || a.Queued != 5 || str(a.QueuedOn) != "provider" {
					t.Errorf("the JSON's account %s: %s, queued %d, queued_on %s; want queued, 5, on the provider (the HTML's \"5 prov\")",
						a.Account, a.Status, a.Queued, str(a.QueuedOn))
				}
			}
			for _, r := range s.Scopes {
				if r.Status != "queued" || r.Queued != 5 || str(r.QueuedOn) != "provider" {
					t.Errorf("the JSON's scope %s: %s, queued %d, queued_on %s; want queued, 5, on the provider (the HTML's \"5 prov\")",
						r.Key, r.Status, r.Queued, str(r.QueuedOn))
				}
			}
			time.Sleep(time.Minute)
		})
	})
	t.Run("paused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := pausedEstate(t)
			js := get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json")
			s := decode(t, js)
			want := map[string]struct {
				seconds    float64
				on, scopes string
			}{
				"sub-1": {30, "provider", "provider"},
				"sub-2": {30, "provider", "provider"},
				"sub-3": {60, "none", "account"},
			}
			if len(s.Accounts) != 3 || len(s.Scopes) != 3 {
				t.Fatalf("%d accounts and %d scopes, want 3 and 3:\n%s", len(s.Accounts), len(s.Scopes), js.Body)
			}
			for _, a := range s.Accounts {
				w := want[a.Account]
				if a.Status != "paused" || a.PausedSeconds == nil || *a.PausedSeconds != w.seconds || str(a.PausedOn) != w.on {
					t.Errorf("the JSON's account %s: %s, paused_seconds %s, paused_on %s; want paused, %v, on %s",
						a.Account, a.Status, seconds(a.PausedSeconds), str(a.PausedOn), w.seconds, w.on)
				}
			}
			for _, r := range s.Scopes {
				if w := want[r.Scope.Account]; r.Status != "paused" || str(r.PausedOn) != w.scopes {
					t.Errorf("the JSON's scope %s: %s, paused_on %s; want paused, on the %s", r.Key, r.Status, str(r.PausedOn), w.scopes)
				}
			}
		})
	})
}

// queuedOnTheProviderBucket returns a governor whose AWS provider bucket
// (global_max_rps 1, burst 1) a call to users, account 222222222222, has
// spent, with five calls to vpcs, account 111111111111, queued on it; it
// runs in the caller's synctest bubble, and the queued calls end (their
// context cancelled) when the test does.
func queuedOnTheProviderBucket(t *testing.T) *resilience.Governor {
	t.Helper()
	one := 1.0
	g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{GlobalMaxRPS: &one, GlobalBurst: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gov := resilience.WithGovernor(g)
	ok := func(context.Context) error { return nil }
	vpcs := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	users := resilience.Scope{Provider: "aws", Account: "222222222222", Region: "us-east-1", Service: "iam", Operation: "ListUsers"}
	if err := resilience.Do(ctx, users, ok, gov); err != nil { // the bucket's one token
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { resilience.Do(ctx, vpcs, ok, gov) })
	}
	synctest.Wait()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return g
}
