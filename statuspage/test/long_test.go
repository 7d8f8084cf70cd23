package test

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A scope's parts are caller data, of any length, and the page still fits
// a 1920, 1440, 1366, 1280, 1260 or 1245 pixel window, and the narrower
// ones of TestStatusPageInChromium, every value cut short with the whole
// in its tooltip:
//   - a provider of the caller's own with a long name is abbreviated like
//     the other parts, in its scopes' rows and in its accounts' cell;
//   - every part may be longer than a narrow window is wide: a provider of
//     99 characters and more, an account, region, service and operation of
//     a hundred and more, each one word. In the blocks of a window
//     narrower than 961 px a value cut short was an inline block as wide
//     as its cell after its label, which it passed by the label's width
//     (at 800 px the service · operation reached 863 px in a 785 px
//     viewport), and the totals' retry budgets wrote a provider whole, on
//     one line (678 px wide at 500 px);
//   - a long-running governor counts its lost calls in five figures
//     (12345 cancelled): with a provider of a long name on the page, the
//     lost cell written on one line made the scopes' table 1260 px wide
//     at the least, in the 1225 px a 1280 px window leaves it beside its
//     scroll bar;
//   - an account paused for minutes (Azure's subscription, whose reads
//     ran low) shows each of its scopes paused for "4m59s acct": written
//     on one line, with a provider of a long name on the page, it made the
//     page scroll sideways at 1024 and 961 px;
//   - the narrowest windows of the table with rate bars and calls, 1241
//     to 1249 px, made the page scroll sideways with a provider of a long
//     name that lost five figures of calls (at 1245 px the document
//     was 1233 px wide in a viewport of 1230): those go below 1260 px
//     now, and 1260 px, the narrowest window that keeps them, fits;
//   - a part may hold a bidi control, U+202E (right-to-left override),
//     which no integration puts in a scope (scopekey.Plain) but a scope
//     function of the caller's may: it turns no other text around (every
//     text without one of its own reads left to right). Before, a
//     provider's name holding one turned the retry budgets after it
//     around, "aws 500" shown as "005 swa", and a service's (its
//     provider's operations paced apart) the operation after it in its
//     cell, "svc · DescribeVpcs" shown with "spVebircseD";
//   - a desktop's 1920 px window has the room for parts as long as real
//     ones, and cuts none short: a provider of 24 characters
//     (kubernetes-control-plane), GCP's northamerica-northeast1 and a
//     service and operation of 56 (compute ·
//     RegionInstanceGroupManagers.ListManagedInstances). Before, they
//     were cut at 84, 100 and 320 px, as at 1440, with 533 px of the
//     table's width to spare;
//   - a provider with a provider-wide bucket (global_max_rps) on which
//     12345 callers queue shows each of its scopes queued for "12345
//     prov", and its bucket among the totals.
func TestLongPartsFitTheWindow(t *testing.T) {
	bin := chromium(t)
	long := resilience.Scope{Provider: "internal-inventory-api-gateway-of-the-platform-team", Account: "acme-prod-0123456789-abcdefghij", Region: "eu-central", Service: "assets"}
	for name, c := range map[string]struct {
		own  resilience.Scope
		more more
		// wholeAt, when set, is the narrowest of the widths at which
		// nothing of the page is cut short: a desktop's window has the
		// room for parts of the length real ones have.
		wholeAt int
	}{
		"a long provider": {own: long},
		"every part longer than a window": {own: resilience.Scope{
			Provider: "internal-" + strings.Repeat("x", 90), Account: "acme-" + strings.Repeat("a", 120),
			Region: "eu-" + strings.Repeat("r", 120), Service: "s" + strings.Repeat("s", 120), Operation: "Op" + strings.Repeat("o", 120),
		}},
		"a long provider that lost five figures of calls":      {own: long, more: more{cancelled: 12_345}},
		"a long provider beside an account paused for minutes": {own: long, more: more{accountPause: 299 * time.Second}},
		"a long provider whose bucket queues five figures":     {own: long, more: more{providerQueue: 12_346}},
		"parts that hold a right-to-left override": {own: resilience.Scope{
			Provider: "acme\u202e", Account: "acct-1\u202e", Region: "eu-1\u202e", Service: "svc\u202e", Operation: "Op\u202e",
		}},
		"a service that holds a right-to-left override, before its operation": {own: resilience.Scope{
			Provider: "acme", Account: "acct-1", Region: "eu-1", Service: "svc\u202e", Operation: "DescribeVpcs",
		}, more: more{perOperation: true}},
		"a provider, a region and an operation as long as real ones": {own: resilience.Scope{
			Provider: "kubernetes-control-plane", Account: "acme-prod-0123456789", Region: "northamerica-northeast1",
			Service: "compute", Operation: "RegionInstanceGroupManagers.ListManagedInstances",
		}, more: more{perOperation: true}, wholeAt: 1920},
	} {
		t.Run(name, func(t *testing.T) {
			srv := serve(t, scanWith(t, c.more, c.own))
			for _, width := range []int{1920, 1440, 1366, 1280, 1260, 1245, 1024, 961, 800, 500} {
				m := measureAt(t, bin, srv, width)
				checkFits(t, m, width)
				if c.wholeAt > 0 && width >= c.wholeAt {
					for _, cut := range m.Cut {
						t.Errorf("at %d px %s shows %q cut short, in a table %.0f px wide that needs %.0f", width, cut.Element, cut.Text, m.TableWidth, m.TableMinWidth)
					}
				}
				if c.more.providerQueue == 0 {
					continue
				}
				for _, row := range m.Rows {
					if row.Scope == c.own.Key() && !strings.Contains(row.Text, "12345 prov") {
						t.Errorf("at %d px the row of %s does not say its 12345 callers queue on its provider's bucket: %q", width, c.own, row.Text)
					}
				}
			}
		})
	}
}
