package test

import (
	"strings"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// A scope's parts are caller data, of any length, and the page still fits
// a 1366 or a 1280 pixel window, and the narrower ones of
// TestStatusPageInChromium, every value cut short with the whole in its
// tooltip:
//   - a provider of the caller's own with a long name is abbreviated like
//     the other parts, in its scopes' rows and in its accounts' cell;
//   - every part may be longer than a narrow window is wide: a provider of
//     99 characters and more, an account, region, service and operation of
//     a hundred and more, each one word. In the blocks of a window
//     narrower than 961 px a value cut short was an inline block as wide
//     as its cell after its label, which it passed by the label's width
//     (at 800 px the service · operation reached 863 px in a 785 px
//     viewport), and the totals' retry budgets wrote a provider whole, on
//     one line (678 px wide at 500 px).
func TestLongPartsFitTheWindow(t *testing.T) {
	bin := chromium(t)
	for name, own := range map[string]resilience.Scope{
		"a long provider": {Provider: "internal-inventory-api-gateway-of-the-platform-team", Account: "acme-prod-0123456789-abcdefghij", Region: "eu-central", Service: "assets"},
		"every part longer than a window": {
			Provider: "internal-" + strings.Repeat("x", 90), Account: "acme-" + strings.Repeat("a", 120),
			Region: "eu-" + strings.Repeat("r", 120), Service: "s" + strings.Repeat("s", 120), Operation: "Op" + strings.Repeat("o", 120),
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, scanWith(t, own))
			for _, width := range []int{1366, 1280, 1024, 961, 800, 500} {
				m := measureAt(t, bin, srv, width)
				checkFits(t, m, width)
			}
		})
	}
}
