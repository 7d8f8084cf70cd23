//go:build go1.25

package statuspage

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// rowsOf returns the rows of a page's table of the given class, in order.
func rowsOf(body, class string) []string {
	_, table, _ := strings.Cut(body, `<table class="`+class+`">`)
	_, tbody, _ := strings.Cut(table, "<tbody>")
	tbody, _, _ = strings.Cut(tbody, "</tbody>")
	var out []string
	for _, r := range strings.Split(tbody, "<tr")[1:] {
		out = append(out, r)
	}
	return out
}

// The page shows each live scope, trouble first: its state with why (a
// breaker's reason, a dead scope throttled for good), its parts, its rate
// against its ceiling as a bar, a pause's time left, its breaker, the
// callers queued for its tokens, and its service's counts once for the
// service's rows; each account once with its slots and callers waiting
// for one; each provider's retry budget once; a legend of the states; and
// it reloads itself.
func TestPageShowsEveryScopeTroubleFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		w := get(t, New(WithGovernor(g), WithRefresh(3*time.Second)), http.MethodGet, "/debug/cloudg")
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("%d %v", w.Code, w.Header())
		}
		body := w.Body.String()
		until := g.Clock().Now().Add(90 * time.Second).UTC().Format("2006-01-02 15:04:05 UTC")
		if !strings.Contains(body, `<meta http-equiv="refresh" content="3">`) {
			t.Error("the page does not reload itself every 3 s")
		}
		rows := rowsOf(body, "scopes")
		if len(rows) != 8 {
			t.Fatalf("%d rows:\n%s", len(rows), body)
		}
		for i, want := range [][]string{
			{`class="open"`, `>open<`, `<bdi dir="ltr">Describe<wbr>Subnets</bdi>`, `<span class="breaker open">open</span> <span class="dim">1m0s</span><span class="why open">errors</span>`,
				// The counts of ec2 in eu-west-1, once for its two rows.
				`<td class="num counted calls" rowspan="2" data-label="calls">3</td>`, `<span class="bad">1 <span class="kind">skipped</span></span><span class="bad">2 <span class="kind">failed</span></span>`},
			{`class="half_open"`, `>half-open<`, `<bdi dir="ltr">Describe<wbr>Vpcs</bdi>`, `<span class="breaker half_open">half-open</span>`, `<span class="why half_open">errors</span>`},
			{`class="paused"`, `projects/p1`, `<span class="cut reg">*</span>`, `ListAssets`, `<td class="num hot paused" data-label="paused" title="every call held until ` + until + `">1m30s</td>`,
				`fill stop w100`, `1.5 / 1.5`, `<td class="num hot queued" data-label="queued">3</td>`},
			{`class="dead"`, `>dead<`, `keyvault`, `<span class="why dead">throttled for good</span>`, `<span class="bad">4 <span class="kind">gave up</span></span>`},
			{`class="slowed"`, `projects/p2`, `SearchAllResources`, `fill below w50`, `3 / 6`, `<span class="breaker closed">closed</span> <span class="dim">1 failed</span>`, `<span class="bad">1 <span class="kind">gave up</span></span>`},
			{`class="queued"`, `projects/p3`, `fill full w100`, `<td class="num hot queued" data-label="queued">4</td>`},
			{`class="ok"`, `sub-1`, `network`, `<td class="num zero" data-label="queued">·</td>`},
			{`class="ok"`, `sub-2`, `compute`},
		} {
			for _, s := range want {
				if !strings.Contains(rows[i], s) {
					t.Errorf("row %d lacks %s:\n%s", i, s, rows[i])
				}
			}
		}
		if strings.Contains(rows[1], "rowspan") {
			t.Errorf("the second row of a service repeats its counts:\n%s", rows[1])
		}
		for i, r := range rows {
			if strings.Contains(r, "in flight") || strings.Contains(r, "retry budget") || strings.Contains(r, "128") {
				t.Errorf("scope row %d shows an account's or a provider's value:\n%s", i, r)
			}
		}

		accounts := rowsOf(body, "accounts")
		if len(accounts) != 7 {
			t.Fatalf("%d accounts:\n%s", len(accounts), body)
		}
		for i, want := range [][]string{
			{`class="prov" rowspan="1" data-label="provider"><span class="cut pv" title="aws">aws</span></td>`, `<td class="num" rowspan="1" data-label="retry budget">500</td>`, `111111111111`, `1 / 128`},
			{`class="prov" rowspan="3" data-label="provider"><span class="cut pv" title="azure">azure</span></td>`, `data-label="retry budget">494.1</td>`, `>queued<`, `sub-1`, `1 / 1`, `<td class="num hot queued" data-label="waiting for a slot">2</td>`, `20 / 20`},
			{`sub-2`, `>ok<`},
			{`sub-3`},
			{`rowspan="3" data-label="provider"><span class="cut pv" title="gcp">gcp</span></td>`, `projects/p1`, `0 / 16`, `title="the provider has no account bucket">none</td>`},
			{`projects/p2`},
			{`projects/p3`},
		} {
			for _, s := range want {
				if !strings.Contains(accounts[i], s) {
					t.Errorf("account %d lacks %s:\n%s", i, s, accounts[i])
				}
			}
		}
		if n := strings.Count(body, `data-label="retry budget"`); n != 3 {
			t.Errorf("the retry budget is shown %d times, once per provider is 3", n)
		}

		for _, s := range []string{
			`<div class="card open"><b>1</b><span class="name">open</span><span class="means">the breaker refuses calls until its probe</span></div>`,
			`<div class="card dead"><b>1</b><span class="name">dead</span><span class="means">every answer fails: throttled for good, or down</span></div>`,
			`<div class="card ok"><b>2</b><span class="name">ok</span>`,
			`<span class="bad"><b>8</b> lost (<b>5</b> gave up, <b>1</b> skipped, <b>2</b> failed)</span>`,
			`retry budget left: <bdi dir="ltr">aws</bdi> <b>500</b> <bdi dir="ltr">azure</bdi> <b>494.1</b> <bdi dir="ltr">gcp</bdi> <b>500</b>`,
			`8 live scopes in 7 accounts ·`,
			`<a href="?format=json">JSON</a>`,
			`<footer><b>Colours</b> are the states of the cards above`,
		} {
			if !strings.Contains(body, s) {
				t.Errorf("the page lacks %s", s)
			}
		}
	})
}

// An account too long for its column is abbreviated in its middle (a GCP
// project shown by its id), and the whole is its tooltip; an operation,
// which the page never cuts short (it goes on a second line, between its
// words), is written whole, without a tooltip.
func TestLongPartsKeepTheWholeOnHover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sc := resilience.Scope{Provider: "azure", Account: "8f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f", Service: "compute"}
		ec2 := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcEndpointServiceConfigurations"}
		gcp := resilience.Scope{Provider: "gcp", Account: "projects/inventory-prod", Service: "cloudasset", Operation: "ListAssets"}
		for _, s := range []resilience.Scope{sc, ec2, gcp} {
			resilience.Do(context.Background(), s, func(context.Context) error { return nil }, resilience.WithGovernor(g))
		}
		body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
		for _, s := range []string{
			`<span class="acct" title="8f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f">8f1c2d3e-…2c3d4e5f</span>`,
			`<span class="svcop"><bdi dir="ltr">ec2</bdi> <span class="dim">·</span> <bdi dir="ltr">Describe<wbr>Vpc<wbr>Endpoint<wbr>Service<wbr>Configurations</bdi></span>`,
			`<span class="acct" title="123456789012">123456789012</span>`,
			`<span class="acct" title="projects/inventory-prod">inventory-prod</span>`,
		} {
			if !strings.Contains(body, s) {
				t.Errorf("the page lacks %s", s)
			}
		}
	})
}

// An open breaker whose cooldown is over refuses nothing more: the next
// call goes as its probe, and the state's tooltip says so rather than
// that calls are refused for no time ("—") more.
func TestOpenBreakerPastItsCooldownSaysTheNextCallProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}})
		if err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), open, func(context.Context) error { return transient }, resilience.WithGovernor(g), once)
		h := New(WithGovernor(g))
		for _, c := range []struct {
			after time.Duration
			title string
		}{
			{time.Second, `title="open: calls are refused for 59s more, then one probe goes; it opened after errors"`},
			{time.Minute, `title="open: its cooldown is over, and the next call goes as its probe; it opened after errors"`},
		} {
			time.Sleep(c.after)
			row := rowsOf(get(t, h, http.MethodGet, "/").Body.String(), "scopes")[0]
			if !strings.Contains(row, `class="open"`) || !strings.Contains(row, c.title) {
				_, chip, _ := strings.Cut(row, `<span class="chip`)
				chip, _, _ = strings.Cut(chip, ">")
				t.Errorf("%v after the breaker opened its state says\n%s\nwant %s", c.after, chip, c.title)
			}
		}
	})
}

// A half-open breaker whose probe's lease ran out (the probe never gave
// its verdict) waits for no probe: the next call goes as a new one, and
// the state's tooltip says so rather than that a probe is out.
func TestHalfOpenBreakerPastItsLeaseSaysTheNextCallProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		resilience.Do(ctx, halfOpen, func(context.Context) error { return transient }, resilience.WithGovernor(g), once)
		time.Sleep(time.Minute) // the cooldown: the next call is the probe
		probe, _ := g.Begin(ctx, halfOpen)
		if err := probe.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		defer probe.End(nil)
		h := New(WithGovernor(g))
		for _, c := range []struct {
			after time.Duration
			title string
		}{
			{time.Second, `title="half-open: one probe call is out; its answer closes or reopens the breaker; it opened after errors"`},
			{time.Minute, `title="half-open: the lease of its probe ran out, and the next call goes as a new probe; it opened after errors"`},
		} {
			time.Sleep(c.after)
			row := rowsOf(get(t, h, http.MethodGet, "/").Body.String(), "scopes")[0]
			if !strings.Contains(row, `class="half_open"`) || !strings.Contains(row, c.title) {
				_, chip, _ := strings.Cut(row, `<span class="chip`)
				chip, _, _ = strings.Cut(chip, ">")
				t.Errorf("%v after the probe went its state says\n%s\nwant %s", c.after, chip, c.title)
			}
		}
		if err := resilience.Do(ctx, halfOpen, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Errorf("the next call did not go as the probe: %v", err)
		}
	})
}

// A rate is written with three significant digits as a number, never in
// exponent form: 999.7 calls per second is 1000, not 1e+03.
func TestRatesAreWrittenAsNumbers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{MaxRPS: 999.7}})
		if err != nil {
			t.Fatal(err)
		}
		sc := resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"}
		if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
		if s := `<span class="num">1000 / 1000</span>`; !strings.Contains(body, s) {
			i := strings.Index(body, `<td class="rate now"`)
			t.Errorf("the page lacks %s; its rate cell is\n%s", s, body[i:i+strings.Index(body[i:], "\n")])
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

// The page asks the browser to reload it after a whole number of seconds,
// at least one, written as a plain number, since a browser reads only the
// integer part of the refresh (0.5 would reload the page at once, again
// and again, and 1e+06 after a second); the header and the JSON say the
// same refresh.
func TestPageRefreshIsWholeSeconds(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d     time.Duration
		want  string // the meta refresh's content
		every string // the header's words
	}{
		{500 * time.Millisecond, "1", "1s"},
		{time.Nanosecond, "1", "1s"},
		{1500 * time.Millisecond, "2", "2s"},
		{3 * time.Second, "3", "3s"},
		{1e6 * time.Second, "1000000", "277h46m40s"},
		{time.Duration(math.MaxInt64), "9223372036", "2562047h47m16s"},
	} {
		h := New(WithGovernor(g), WithRefresh(c.d))
		body := get(t, h, http.MethodGet, "/").Body.String()
		meta := regexp.MustCompile(`<meta http-equiv="refresh" content="[^"]*">`).FindString(body)
		if want := `<meta http-equiv="refresh" content="` + c.want + `">`; meta != want {
			t.Errorf("WithRefresh(%v): %s, want %s", c.d, meta, want)
		}
		if want := "refreshes every " + c.every + " ·"; !strings.Contains(body, want) {
			i := strings.Index(body, "refreshes every")
			t.Errorf("WithRefresh(%v): the header says %q, want %q", c.d, body[i:i+strings.Index(body[i:], " ·")], want)
		}
		if s := decode(t, get(t, h, http.MethodGet, "/?format=json")); strconv.FormatFloat(s.RefreshSeconds, 'f', -1, 64) != c.want {
			t.Errorf("WithRefresh(%v): the JSON's refresh is %v, want %s", c.d, s.RefreshSeconds, c.want)
		}
	}
}

// The footer's sentence on lost calls names every kind of loss the
// cells and the totals count.
func TestFooterNamesEveryKindOfLoss(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sc := resilience.Scope{Provider: "acme", Account: "tenant-7", Service: "orders"}
	if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
	_, footer, _ := strings.Cut(body, "<footer>")
	_, sentence, _ := strings.Cut(footer, "<b>Lost</b>")
	sentence, _, _ = strings.Cut(sentence, ". ")
	every := lost(resilience.Counters{GaveUp: 1, Rejected: 1, Failed: 1, Refused: 1, Cancelled: 1, Errored: 1, Panicked: 1, Denied: 1})
	kinds := 0 // every resilience.Loss, so that a new one is not left out here
	for !strings.HasPrefix(resilience.Loss(kinds).String(), "resilience.Loss(") {
		kinds++
	}
	if len(every) != kinds {
		t.Fatalf("%d kinds of loss counted, want %d (every resilience.Loss): %v", len(every), kinds, every)
	}
	for _, l := range every {
		if !strings.Contains(sentence, l.Kind) {
			t.Errorf("the footer's lost calls leave out %q:%s", l.Kind, sentence)
		}
	}
}

// WithLimit cuts both tables short, and the page says so of each: here
// two of the eight scopes and two of the seven accounts are shown, and
// the header says which, rather than leave a reader to take the accounts
// table for every account.
func TestPageSaysWhatTheLimitLeftOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		body := get(t, New(WithGovernor(g), WithLimit(2)), http.MethodGet, "/").Body.String()
		if n, m := len(rowsOf(body, "scopes")), len(rowsOf(body, "accounts")); n != 2 || m != 2 {
			t.Fatalf("%d scope rows and %d account rows, want 2 and 2", n, m)
		}
		want := `8 live scopes in 7 accounts · shown: the 2 most troubled scopes and the 2 most troubled accounts ·`
		if !strings.Contains(body, want) {
			i := strings.Index(body, `<p class="meta">`)
			t.Errorf("the header says\n%s\nwant it to say %s", body[i:i+strings.Index(body[i:], "\n")], want)
		}
		body = get(t, New(WithGovernor(g), WithLimit(1)), http.MethodGet, "/").Body.String()
		if want := `8 live scopes in 7 accounts · shown: the most troubled scope and the most troubled account ·`; !strings.Contains(body, want) {
			i := strings.Index(body, `<p class="meta">`)
			t.Errorf("the header says\n%s\nwant it to say %s", body[i:i+strings.Index(body[i:], "\n")], want)
		}
		// Without a limit reached, the header says nothing of one.
		body = get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
		if !strings.Contains(body, `8 live scopes in 7 accounts · <a href`) || strings.Contains(body, "shown") {
			t.Errorf("the page of every scope speaks of a limit:\n%s", body[:strings.Index(body, "</header>")])
		}
	})
}

// The page is HTML, or JSON with ?format=json: a format it does not
// serve (a misspelt or upper-case json, xml, two formats at once) is
// refused with 400 and says which formats there are, rather than served
// as HTML to a program that asked for something else.
func TestUnknownFormatIsRefused(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := New(WithGovernor(g))
	for _, target := range []string{"/?format=JSON", "/?format=xml", "/?format=jsn", "/?format=json&format=html"} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			w := get(t, h, m, target)
			if body := w.Body.String(); w.Code != http.StatusBadRequest || (m == http.MethodGet && !strings.Contains(body, `?format=json`)) {
				t.Errorf("%s %s: %d %q, want 400 naming the formats", m, target, w.Code, body[:min(len(body), 60)])
			}
		}
	}
	for _, c := range []struct{ target, ct string }{
		{"/", "text/html; charset=utf-8"}, {"/?format=", "text/html; charset=utf-8"}, {"/?format=html", "text/html; charset=utf-8"},
		{"/?format=json", "application/json"}, {"/?refresh=1&format=json", "application/json"},
	} {
		if w := get(t, h, http.MethodGet, c.target); w.Code != http.StatusOK || w.Header().Get("Content-Type") != c.ct {
			t.Errorf("GET %s: %d %s, want 200 %s", c.target, w.Code, w.Header().Get("Content-Type"), c.ct)
		}
	}
}

// A query that does not parse is refused with 400 like an unknown
// format, rather than served as HTML: the standard library drops a pair
// it cannot decode (a semicolon, a bad escape), so that ?format=json;x=1
// or ?format=js%zz asked for a format the handler never saw.
func TestAQueryThatDoesNotParseIsRefused(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := New(WithGovernor(g))
	for _, target := range []string{"/?format=json;x=1", "/?format=json;", "/?format=js%zz", "/?format=json&x=%zz"} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			w := get(t, h, m, target)
			if body := w.Body.String(); w.Code != http.StatusBadRequest || (m == http.MethodGet && !strings.Contains(body, `?format=json`)) {
				t.Errorf("%s %s: %d %s %q, want 400 naming the formats", m, target, w.Code, w.Header().Get("Content-Type"), body[:min(len(body), 60)])
			}
		}
	}
}

// No answer of the page is stored by a browser or a proxy: a refusal
// (405, 400) or a page not read (503) is no more the page's lasting
// answer than the page itself is, and a 405 may otherwise be cached
// heuristically. Each says too that its type is the one it names.
func TestNoAnswerOfThePageIsStored(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sc := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "ec2"}
	resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g))
	h := New(WithGovernor(g))
	cancelled := httptest.NewRequest(http.MethodGet, "/", nil)
	ctx, cancel := context.WithCancel(cancelled.Context())
	cancel()
	cancelled = cancelled.WithContext(ctx)
	gone := httptest.NewRecorder()
	h.ServeHTTP(gone, cancelled)
	for _, c := range []struct {
		what string
		w    *httptest.ResponseRecorder
		code int
	}{
		{"GET", get(t, h, http.MethodGet, "/"), http.StatusOK},
		{"POST", get(t, h, http.MethodPost, "/"), http.StatusMethodNotAllowed},
		{"an unknown format", get(t, h, http.MethodGet, "/?format=xml"), http.StatusBadRequest},
		{"a query that does not parse", get(t, h, http.MethodGet, "/?format=js%zz"), http.StatusBadRequest},
		{"a request gone", gone, http.StatusServiceUnavailable},
	} {
		if c.w.Code != c.code || c.w.Header().Get("Cache-Control") != "no-store" || c.w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d, Cache-Control %q, X-Content-Type-Options %q; want %d, no-store, nosniff",
				c.what, c.w.Code, c.w.Header().Get("Cache-Control"), c.w.Header().Get("X-Content-Type-Options"), c.code)
		}
	}
}

// The retry budgets shown are bounded by WithLimit too, as the scopes and
// accounts are: a program that calls many providers by name gets a page
// of its limit's size, with the budgets nearest their end, and the page
// says how many there are. Before, every provider of a live scope was
// listed, whatever the limit.
func TestTheLimitBoundsTheProvidersShown(t *testing.T) {
	cfg := resilience.Config{Providers: map[string]resilience.ProviderConfig{}}
	for i := range 50 {
		b := 100 + i
		cfg.Providers[fmt.Sprintf("p%02d", i)] = resilience.ProviderConfig{RetryBudget: &b}
	}
	g, err := resilience.NewGovernor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		resilience.Do(context.Background(), resilience.Scope{Provider: fmt.Sprintf("p%02d", i), Account: "a", Service: "s"},
			func(context.Context) error { return nil }, resilience.WithGovernor(g))
	}
	h := New(WithGovernor(g), WithLimit(3))
	body := get(t, h, http.MethodGet, "/").Body.String()
	want := `retry budget left: <bdi dir="ltr">p00</bdi> <b>100</b> <bdi dir="ltr">p01</bdi> <b>101</b> <bdi dir="ltr">p02</bdi> <b>102</b> (the 3 nearest their end, of 50 providers)`
	if !strings.Contains(body, want) {
		i := strings.Index(body, "retry budget left")
		t.Errorf("the page says\n%s\nwant %s", body[i:i+strings.Index(body[i:], "</span>")], want)
	}
	s := decode(t, get(t, h, http.MethodGet, "/?format=json"))
	if len(s.Providers) != 3 || s.Providers[0].Name != "p00" || s.LiveProviders != 50 {
		t.Errorf("JSON: providers %+v of %d, want p00, p01, p02 of 50", s.Providers, s.LiveProviders)
	}
}

// WithLimit bounds the disabled providers the page names as it bounds
// their budgets: a program that calls many providers by name, all
// disabled by the global switch, gets a page of the limit's size, which
// names the first by name and says how many there are. Before, every
// provider with live scopes or a budget the page had read was named, in
// the totals and in the JSON, whatever the limit.
func TestTheLimitBoundsTheDisabledProvidersShown(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		resilience.Do(context.Background(), resilience.Scope{Provider: fmt.Sprintf("p%02d", i), Account: "a", Service: "s"},
			func(context.Context) error { return nil }, resilience.WithGovernor(g))
	}
	h := New(WithGovernor(g), WithLimit(3))
	get(t, h, http.MethodGet, "/") // the page reads the 50 budgets
	off := false
	if err := g.Configure(resilience.Config{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	body := get(t, h, http.MethodGet, "/").Body.String()
	want := `disabled, calls sent ungoverned: <b>aws</b>, <b>azure</b>, <b>gcp</b> (the first 3 of 53 providers)</span>`
	if !strings.Contains(body, want) {
		i := strings.Index(body, "disabled, calls")
		t.Errorf("the page says\n%s\nwant %s", body[i:i+strings.Index(body[i:], "</span>")], want)
	}
	s := decode(t, get(t, h, http.MethodGet, "/?format=json"))
	if !slices.Equal(s.Disabled, []string{"aws", "azure", "gcp"}) || s.DisabledCount != 53 {
		t.Errorf("JSON: disabled_providers %q of %d, want aws, azure, gcp of 53", s.Disabled, s.DisabledCount)
	}
}

// A provider a Configure disabled is not governed: its calls go straight
// through, with no pacing, no breaker and no retries. The governor keeps
// what its scopes learned, for the day it is enabled again, but the page
// does not show that as where they stand: an open breaker "refusing calls
// for 1m0s" whose calls are sent. It leaves the provider's scopes,
// accounts and budget out, and says the provider is disabled.
func TestADisabledProvidersScopesAreNotShownAsGoverned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		cfg := g.Config()
		off := false
		cfg.AWS.Enabled = &off
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		sent := 0
		if err := resilience.Do(t.Context(), open, func(context.Context) error { sent++; return nil }, resilience.WithGovernor(g)); err != nil || sent != 1 {
			t.Fatalf("a call of the open scope: %v, sent %d times; want it sent once", err, sent)
		}
		h := New(WithGovernor(g))
		s := decode(t, get(t, h, http.MethodGet, "/?format=json"))
		for _, r := range s.Scopes {
			if r.Scope.Provider == "aws" {
				t.Errorf("the JSON shows %s %s (%s), whose provider is disabled", r.Key, r.Status, r.Reason)
			}
		}
		for _, a := range s.Accounts {
			if a.Provider == "aws" {
				t.Errorf("the JSON shows the account %s/%s, whose provider is disabled", a.Provider, a.Account)
			}
		}
		for _, p := range s.Providers {
			if p.Name == "aws" {
				t.Errorf("the JSON shows aws's retry budget, %v, which no call of it draws", p.RetryBudget)
			}
		}
		if s.Live != 6 || s.Statuses["open"] != 0 || s.Statuses["half_open"] != 0 {
			t.Errorf("%d live scopes, statuses %v; want 6, none open or half-open", s.Live, s.Statuses)
		}
		if !slices.Equal(s.Disabled, []string{"aws"}) {
			t.Errorf("disabled_providers %q, want [aws]", s.Disabled)
		}
		body := get(t, h, http.MethodGet, "/").Body.String()
		if want := `disabled, calls sent ungoverned: <b>aws</b>`; !strings.Contains(body, want) {
			i := strings.Index(body, `<section class="totals"`)
			t.Errorf("the page does not say %q:\n%s", want, body[i:i+strings.Index(body[i:], "</section>")])
		}
		if strings.Contains(body, "DescribeSubnets") || strings.Contains(body, "Describe<wbr>Subnets") {
			t.Error("the page shows the disabled provider's open scope")
		}

		off = false
		if err := g.Configure(resilience.Config{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		s = decode(t, get(t, h, http.MethodGet, "/?format=json"))
		if s.Live != 0 || len(s.Scopes) != 0 || len(s.Accounts) != 0 || len(s.Providers) != 0 || !slices.Equal(s.Disabled, []string{"aws", "azure", "gcp"}) {
			t.Errorf("with every provider disabled: %d live scopes, %d rows, %d accounts, providers %v, disabled %q; want none, and aws, azure and gcp disabled",
				s.Live, len(s.Scopes), len(s.Accounts), s.Providers, s.Disabled)
		}
	})
}

// A scope found dead without a new answer (five calls throttled over six
// seconds, none ended, ten seconds after the first) is dead while its
// breaker is still closed: the next call's admission opens it and is
// refused. The state's tooltip says that, not that its breaker opened.
func TestADeadScopeWhoseBreakerIsClosedSaysItsNextCallOpensIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		var gds []*resilience.Guard
		for i := range 5 {
			if i > 0 {
				time.Sleep(1500 * time.Millisecond)
			}
			gd, _ := g.Begin(ctx, dead)
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			gd.Release()
			gd.After(tooMany)
			gds = append(gds, gd)
		}
		time.Sleep(4 * time.Second)
		defer func() {
			for _, gd := range gds {
				gd.End(tooMany)
			}
		}()
		h := New(WithGovernor(g))
		row := rowsOf(get(t, h, http.MethodGet, "/").Body.String(), "scopes")[0]
		want := `title="dead, throttled for good: every answer failed for at least the provider&#39;s breaker_dead_seconds; its breaker opens at its next call, which it refuses"`
		if !strings.Contains(row, `class="dead"`) || !strings.Contains(row, `<span class="breaker closed">closed</span>`) || !strings.Contains(row, want) {
			t.Errorf("the dead scope's row\n%s\nwant a closed breaker and %s", row, want)
		}
		sent := 0
		err = resilience.Do(ctx, dead, func(context.Context) error { sent++; return nil }, resilience.WithGovernor(g))
		if !errors.Is(err, resilience.ErrCircuitOpen) || sent != 0 {
			t.Fatalf("the next call: %v, sent %d times; want it refused", err, sent)
		}
		row = rowsOf(get(t, h, http.MethodGet, "/").Body.String(), "scopes")[0]
		want = `title="dead, throttled for good: every answer failed for at least the provider&#39;s breaker_dead_seconds, and its breaker opened at once"`
		if !strings.Contains(row, `<span class="breaker open">open</span>`) || !strings.Contains(row, want) {
			t.Errorf("the dead scope's row once its breaker opened\n%s\nwant %s", row, want)
		}
	})
}

// Under breaker_wait an open breaker refuses no call: a call waits,
// within its deadline, for the breaker's verdict. The state's tooltip
// says so, rather than that calls are refused.
func TestOpenBreakerUnderBreakerWaitSaysCallsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		resilience.Do(ctx, open, func(context.Context) error { return transient }, resilience.WithGovernor(g), once)
		// Turned on once the breaker is open: the call that opened it
		// would otherwise wait for the verdict itself.
		if err := g.Configure(resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1, BreakerWait: true}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		done := make(chan error, 1)
		go func() {
			done <- resilience.Do(ctx, open, func(context.Context) error { return nil }, resilience.WithGovernor(g))
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("a call of the open scope ended at once: %v; want it to wait for the verdict", err)
		default:
		}
		row := rowsOf(get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String(), "scopes")[0]
		want := `title="open: calls wait 59s more for its verdict (breaker_wait), within their deadline, then one goes as its probe; it opened after errors"`
		if !strings.Contains(row, `class="open"`) || !strings.Contains(row, want) {
			_, chip, _ := strings.Cut(row, `<span class="chip`)
			chip, _, _ = strings.Cut(chip, ">")
			t.Errorf("the open scope's state says\n%s\nwant %s", chip, want)
		}
		if err := <-done; err != nil {
			t.Errorf("the waiting call: %v, want it sent as the probe", err)
		}
	})
}
