//go:build go1.25

package statuspage

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// rowsOf returns the table rows of a page, in order.
func rowsOf(body string) []string {
	_, tbody, _ := strings.Cut(body, "<tbody>")
	tbody, _, _ = strings.Cut(tbody, "</tbody>")
	var out []string
	for _, r := range strings.Split(tbody, "<tr")[1:] {
		out = append(out, r)
	}
	return out
}

// The page shows each scope's parts, its rate against its ceiling as a
// bar, its pause, its breaker in colour, its slots and queue, the retry
// budget and its service's counts, worst first, and reloads itself.
func TestPageShowsEveryScopeWorstFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		w := get(t, New(WithGovernor(g), WithRefresh(3*time.Second)), http.MethodGet, "/debug/cloudg")
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("%d %v", w.Code, w.Header())
		}
		body := w.Body.String()
		if !strings.Contains(body, `<meta http-equiv="refresh" content="3">`) {
			t.Error("the page does not reload itself every 3 s")
		}
		rows := rowsOf(body)
		if len(rows) != 6 {
			t.Fatalf("%d rows:\n%s", len(rows), body)
		}
		for i, want := range [][]string{
			{`class="open"`, `>open<`, `DescribeSubnets`, `<span class="breaker open">open</span> <span class="dim">1m0s</span>`, `<td class="num bad">1</td>`},
			{`class="half_open"`, `>half-open<`, `DescribeVpcs`, `<span class="breaker half_open">half-open</span>`, `<td class="num">1 / 128</td>`},
			{`class="paused"`, `projects/p1`, `<td class="part">*</td>`, `ListAssets`, `<td class="num hot">1m30s</td>`, `fill stop w100`, `1.5 / 1.5 rps`},
			{`class="slowed"`, `projects/p2`, `SearchAllResources`, `fill mid w50`, `3 / 6 rps`, `<span class="breaker closed">closed</span>`, `<td class="num">500</td>`, `<td class="num bad">1</td>`},
			{`class="queued"`, `sub-1`, `network`, `<td class="num">1 / 1</td>`, `<td class="num hot">2</td>`, `fill full w100`},
			{`class="ok"`, `sub-2`, `compute`, `<td class="num">0 / 1</td>`},
		} {
			for _, s := range want {
				if !strings.Contains(rows[i], s) {
					t.Errorf("row %d lacks %s:\n%s", i, s, rows[i])
				}
			}
		}
		for _, s := range []string{
			`<div class="card open"><b>1</b><span>open</span></div>`,
			`<div class="card ok"><b>1</b><span>ok</span></div>`,
			`<span class="bad"><b>1</b> gave up</span>`,
			`6 live scopes ·`,
			`<a href="?format=json">JSON</a>`,
		} {
			if !strings.Contains(body, s) {
				t.Errorf("the page lacks %s", s)
			}
		}
	})
}

// The page loads nothing from anywhere and runs no script: its one style
// sheet is allowed by its hash, and everything else is refused.
func TestPageHasNoExternalAssets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := get(t, New(WithGovernor(estate(t))), http.MethodGet, "/")
		body := w.Body.String()
		for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", "url(", "@import", "http://", "https://", "//"} {
			if strings.Contains(body, bad) {
				t.Errorf("the page holds %q", bad)
			}
		}
		sheets := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllStringSubmatch(body, -1)
		if len(sheets) != 1 {
			t.Fatalf("%d style sheets", len(sheets))
		}
		sum := sha256.Sum256([]byte(sheets[0][1]))
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
			t.Errorf("the policy %q does not allow the served sheet", csp)
		}
		if strings.Contains(body, `style="`) {
			t.Error("a style attribute, which the policy refuses")
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("headers %v", w.Header())
		}
	})
}

// The page changes nothing: other methods than GET and HEAD are refused,
// and serving it leaves the governor as it was.
func TestPageIsReadOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		h := New(WithGovernor(g))
		before := g.Summary(nil)
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			if w := get(t, h, m, "/?format=json"); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s: %d %v", m, w.Code, w.Header())
			}
		}
		if w := get(t, h, http.MethodHead, "/"); w.Code != http.StatusOK || w.Body.Len() != 0 {
			t.Errorf("HEAD: %d, %d bytes", w.Code, w.Body.Len())
		}
		get(t, h, http.MethodGet, "/")
		get(t, h, http.MethodGet, "/?format=json")
		after := g.Summary(nil)
		if before.Totals != after.Totals || len(before.Scopes) != len(after.Scopes) {
			t.Errorf("serving the page changed the governor: %+v, then %+v", before.Totals, after.Totals)
		}
	})
}

// An empty governor's page says there is nothing to show yet.
func TestPageOfAnEmptyGovernor(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
	if !strings.Contains(body, "No live scopes yet") || strings.Contains(body, "<table") {
		t.Fatalf("%s", body)
	}
}

// Over a real listener, with no governor given, the handler shows the
// process governor.
func TestPageOverHTTPShowsTheDefaultGovernor(t *testing.T) {
	resilience.SetDefault(nil)
	t.Cleanup(func() { resilience.SetDefault(nil) })
	sc := resilience.Scope{Provider: "acme", Account: "tenant-7", Service: "orders"}
	if err := resilience.Do(t.Context(), sc, func(ctx context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"account": "tenant-7"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
