//go:build go1.25

package statuspage

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// A scope's parts are caller data, of any length: the HTML page shows
// each at most maxShown characters long, cut with an ellipsis (in its
// text, its tooltip and the row's data-scope alike), so that the page a
// browser renders stays bounded by its limit of rows whatever the
// parts' lengths. 500 scopes with parts of 10 KB made 52 MB of HTML.
func TestTheHTMLPageShowsLongPartsCutShort(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	long := func(c string, i int) string { return fmt.Sprintf("%d-", i) + strings.Repeat(c, 10_000) }
	const n = 100
	for i := range n {
		sc := resilience.Scope{Provider: "aws", Account: long("a", i), Region: long("r", i), Service: long("s", i), Operation: long("o", i)}
		if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	}
	body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
	if max := n * 16 << 10; len(body) > max {
		t.Errorf("the HTML page of %d scopes with parts of 10 KB is %d bytes: want at most %d", n, len(body), max)
	}
	text := html.UnescapeString(body)
	if strings.Contains(text, strings.Repeat("r", maxShown+1)) {
		t.Errorf("the HTML page shows a run of more than %d characters of a part", maxShown)
	}
	if cut := "0-" + strings.Repeat("r", maxShown-3) + "…"; !strings.Contains(text, cut) {
		t.Errorf("the HTML page does not show a region cut to %d characters and an ellipsis", maxShown)
	}
}
