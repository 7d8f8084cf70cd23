//go:build go1.25

package statuspage

import (
	"bytes"
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/cloudg/cloudg/resilience"
)

// A scope is caller data: markup in any of its parts (the generic
// provider's leaf has no operation; the service holds that attempt) is shown as text on
// the page and as a string in the JSON, never as markup.
func TestScopeStringsAreEscaped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		evil := resilience.Scope{
			Provider: `x"><script>alert(1)</script>`,
			Account:  `"><img src=x onerror=alert(2)>`,
			Region:   `</td></tr></tbody></table><h1>owned</h1>`,
			Service:  `' onmouseover='alert(3) {{.Totals}}&amp;`,
		}
		if err := resilience.Do(context.Background(), evil, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		h := New(WithGovernor(g))
		body := get(t, h, http.MethodGet, "/").Body.String()
		for _, raw := range []string{"<script>", "<img", "<h1>owned", "</table><h1>", "' onmouseover='"} {
			if strings.Contains(body, raw) {
				t.Errorf("the page holds %q raw", raw)
			}
		}
		for _, shown := range []string{
			`x&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;`,
			`&#34;&gt;&lt;img src=x onerror=alert(2)&gt;`,
			`&lt;/td&gt;&lt;/tr&gt;&lt;/tbody&gt;&lt;/table&gt;&lt;h1&gt;owned&lt;/h1&gt;`,
			`&#39; onmouseover=&#39;alert(3) {{.Totals}}&amp;amp;`,
		} {
			if !strings.Contains(body, shown) {
				t.Errorf("the page does not show %s as text", shown)
			}
		}
		if n := strings.Count(body, "<tr"); n != 5 { // the scopes' head's two and the scope's; the accounts' head's and the account's
			t.Errorf("%d rows", n)
		}

		w := get(t, h, http.MethodGet, "/?format=json")
		if strings.ContainsAny(w.Body.String(), "<>") {
			t.Errorf("the JSON holds < or > raw:\n%s", w.Body)
		}
		s := decode(t, w)
		if len(s.Scopes) != 1 || s.Scopes[0].Scope != evil || s.Scopes[0].Key != evil.Key() {
			t.Fatalf("the JSON did not keep the scope's parts: %+v", s.Scopes)
		}
	})
}

// A scope's parts may hold any bytes, not only UTF-8: the page is served
// as UTF-8 (its Content-Type says so) whatever they hold, the bytes that
// are not UTF-8 shown as U+FFFD, as in the JSON.
func TestScopeBytesThatAreNotUTF8AreServedAsUTF8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		bad := resilience.Scope{Provider: "acme\xff", Account: "a\xffb\xc3", Region: "r\xe2\x82", Service: "s\xfe<", Operation: "op\x80"}
		if err := resilience.Do(context.Background(), bad, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		h := New(WithGovernor(g))
		for _, target := range []string{"/", "/?format=json"} {
			w := get(t, h, http.MethodGet, target)
			if !utf8.Valid(w.Body.Bytes()) {
				i := bytes.IndexFunc(w.Body.Bytes(), func(r rune) bool { return r == utf8.RuneError })
				t.Errorf("%s, served as %s, is not UTF-8: %q", target, w.Header().Get("Content-Type"), w.Body.Bytes()[max(0, i-20):i+20])
			}
		}
		body := get(t, h, http.MethodGet, "/").Body.String()
		if !strings.Contains(body, `title="a`+"\uFFFD"+`b`+"\uFFFD"+`"`) || !strings.Contains(body, `s`+"\uFFFD"+`&lt;`) {
			t.Error("the page does not show the bytes that are not UTF-8 as U+FFFD")
		}
	})
}

// A tooltip (a title attribute) is plain text, where no element can
// isolate a scope's part: a tooltip that holds a part holds that part
// alone, so that a bidi control in it (U+202E) turns no other text of the
// tooltip around. A service and its operation, which the page never cuts
// short, have none.
func TestATooltipHoldsAScopesPartAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		on := true
		g, err := resilience.NewGovernor(resilience.Config{Providers: map[string]resilience.ProviderConfig{"acme\u202e": {PerOperation: &on}}})
		if err != nil {
			t.Fatal(err)
		}
		sc := resilience.Scope{Provider: "acme\u202e", Account: "acct-1\u202e", Region: "eu-1\u202e", Service: "svc\u202e", Operation: "Op\u202e"}
		if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
		if !strings.Contains(body, ">Op\u202e<") {
			t.Fatalf("the page does not show the scope's operation:\n%s", body)
		}
		titles := regexp.MustCompile(`title="([^"]*)"`).FindAllStringSubmatch(body, -1)
		for _, m := range titles {
			title := html.UnescapeString(m[1])
			for _, p := range []string{sc.Provider, sc.Account, sc.Region, sc.Service, sc.Operation} {
				if strings.Contains(title, p) && title != p {
					t.Errorf("the tooltip %q holds the scope's part %q and more text, which a bidi control in the part turns around", title, p)
				}
			}
		}
	})
}
