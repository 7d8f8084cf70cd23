package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// measure is the script the test adds to the page it serves Chromium for
// measuring: once the page is laid out, it writes what the test asserts
// into the document as JSON, for --dump-dom to print. It reads the page
// and changes nothing of it but the hidden element it appends last.
const measure = `(function () {
  var de = document.documentElement, out = {};
  function name(el) { return el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).replace(/ +/g, '.') : ''); }
  try {
    out.documentWidth = de.scrollWidth;
    out.viewportWidth = de.clientWidth;
    out.windowWidth = window.innerWidth;
    out.bodyBackground = getComputedStyle(document.body).backgroundColor;
    out.outside = [];
    // What of an element is seen: the part its ancestors that clip
    // (a value cut short, overflow hidden) do not hide.
    document.querySelectorAll('body *').forEach(function (el) {
      var r = el.getBoundingClientRect(), left = r.left, right = r.right;
      for (var p = el.parentElement; p && p !== de; p = p.parentElement) {
        if (getComputedStyle(p).overflowX === 'visible') continue;
        var pr = p.getBoundingClientRect();
        left = Math.max(left, pr.left);
        right = Math.min(right, pr.right);
      }
      if (r.width > 0 && right > left && (right > de.clientWidth + 0.5 || left < -0.5)) {
        out.outside.push(name(el) + ' at ' + Math.round(left) + '..' + Math.round(right));
      }
    });
    out.cut = [];
    document.querySelectorAll('td, td *').forEach(function (el) {
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') {
        var t = el.closest('[title]');
        out.cut.push({element: name(el), text: el.textContent, title: t ? t.getAttribute('title') : ''});
      }
    });
    out.abbreviated = [];
    document.querySelectorAll('td, td *').forEach(function (el) {
      var own = Array.prototype.some.call(el.childNodes, function (n) { return n.nodeType === 3 && n.data.indexOf('\u2026') >= 0; });
      if (own) {
        var t = el.closest('[title]');
        out.abbreviated.push({text: el.textContent, title: t ? t.getAttribute('title') : ''});
      }
    });
    out.split = [];
    out.wrapped = []; // lost calls on more than one line, their count above their kind
    document.querySelectorAll('td.lost > span').forEach(function (sp) {
      // The kind after the count ("gave up" of "3 gave up") on one line.
      var text = sp.textContent, at = text.indexOf(' '), tops = {}, pos = 0, n;
      var walk = document.createTreeWalker(sp, NodeFilter.SHOW_TEXT), r = document.createRange();
      if (at < 0) return;
      while ((n = walk.nextNode())) {
        for (var k = 0; k < n.data.length; k++, pos++) {
          if (pos <= at || n.data[k] === ' ') continue;
          r.setStart(n, k);
          r.setEnd(n, k + 1);
          var b = r.getBoundingClientRect();
          if (b.height > 0) tops[Math.round(b.top)] = true;
        }
      }
      if (Object.keys(tops).length > 1) out.split.push(text);
      if (sp.getClientRects().length > 1 || sp.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(sp).lineHeight)) out.wrapped.push(text);
    });
    out.lines = []; // each part of a service · operation cell, by the lines it is written on
    document.querySelectorAll('.svcop bdi').forEach(function (el) {
      var walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), r = document.createRange(), lines = [], top = null, n;
      while ((n = walk.nextNode())) {
        for (var k = 0; k < n.data.length; k++) {
          r.setStart(n, k);
          r.setEnd(n, k + 1);
          var b = r.getBoundingClientRect();
          if (top === null || b.top > top + b.height / 2) {
            lines.push('');
            top = b.top;
          }
          lines[lines.length - 1] += n.data[k];
        }
      }
      out.lines.push({text: el.textContent, lines: lines});
    });
    out.reordered = [];
    // A text without right-to-left letters or bidi controls of its own,
    // on one line, reads left to right: one before it (a scope's part
    // that holds U+202E) must not turn it around.
    var rtl = /[\u0590-\u08FF\u200E\u200F\u202A-\u202E\u2066-\u2069\uFB1D-\uFDFF\uFE70-\uFEFF]/;
    var tw = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), tn, rg = document.createRange();
    while ((tn = tw.nextNode())) {
      var d = tn.data, i = d.search(/\S/), j = d.length - 1;
      while (j >= 0 && /\s/.test(d[j])) j--;
      if (i < 0 || j <= i || rtl.test(d) || tn.parentElement.closest('script, pre')) continue;
      rg.setStart(tn, i); rg.setEnd(tn, i + 1);
      var a = rg.getBoundingClientRect();
      rg.setStart(tn, j); rg.setEnd(tn, j + 1);
      var b = rg.getBoundingClientRect();
      if (a.width > 0 && b.width > 0 && Math.abs(a.top - b.top) < 2 && b.left < a.left) out.reordered.push(d.trim());
    }
    out.turned = [];
    // Every element reads in the page's direction, whatever the text it
    // holds: a scope's part in Hebrew is isolated, not made to read
    // right to left.
    var dir = getComputedStyle(de).direction;
    document.querySelectorAll('body *').forEach(function (el) {
      if (getComputedStyle(el).direction !== dir) out.turned.push(name(el) + ' ' + JSON.stringify(el.textContent));
    });
    out.rows = [];
    document.querySelectorAll('table.scopes tbody tr').forEach(function (tr) {
      var chip = tr.querySelector('.chip'), r = chip.getBoundingClientRect();
      out.rows.push({
        scope: tr.getAttribute('data-scope'),
        shown: chip.innerText,
        visible: r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= de.clientWidth,
        colour: getComputedStyle(chip).backgroundColor,
        text: tr.innerText
      });
    });
    out.headVisible = getComputedStyle(document.querySelector('table.scopes thead')).display !== 'none';
    var table = document.querySelector('table.scopes');
    out.tableWidth = table.getBoundingClientRect().width;
    table.style.width = 'min-content'; // the least the table needs, for the log
    out.tableMinWidth = table.getBoundingClientRect().width;
    table.style.width = '';
  } catch (e) {
    out.error = String(e);
  }
  var pre = document.createElement('pre');
  pre.id = 'cloudg-measure';
  pre.hidden = true;
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();`

// measured is what the script reports.
type measured struct {
	Error          string `json:"error"`
	DocumentWidth  int    `json:"documentWidth"`
	ViewportWidth  int    `json:"viewportWidth"`
	WindowWidth    int    `json:"windowWidth"`
	BodyBackground string `json:"bodyBackground"`
	Outside        []string
	Cut            []struct{ Element, Text, Title string }
	Abbreviated    []struct{ Text, Title string }
	Split          []string // lost calls whose kind is broken across lines
	Wrapped        []string // lost calls on more than one line
	Lines          []struct {
		Text  string
		Lines []string
	} // the parts of the service · operation cells, each by the lines it is written on
	Reordered []string // texts shown right to left by a bidi control before them
	Turned    []string // elements whose direction is not the page's
	Rows      []struct {
		Scope, Shown, Colour, Text string
		Visible                    bool
	}
	HeadVisible   bool    `json:"headVisible"`
	TableWidth    float64 `json:"tableWidth"`
	TableMinWidth float64 `json:"tableMinWidth"`
}

// serve serves the rendered page on 127.0.0.1 as the handler served it at
// /page, and with the measuring script at /measure: the page's own
// Content-Security-Policy, which must let its style sheet apply, allows
// the script by its hash and nothing else.
func serve(t *testing.T, r rendered) *httptest.Server {
	t.Helper()
	sum := sha256.Sum256([]byte(measure))
	withScript := bytes.Replace(r.html, []byte("</body>"), []byte("<script>"+measure+"</script>\n</body>"), 1)
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, h http.Header, body []byte) {
		for k, v := range h {
			w.Header()[k] = v
		}
		w.Write(body)
	}
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, _ *http.Request) { write(w, r.htmlHeader, r.html) })
	mux.HandleFunc("GET /measure", func(w http.ResponseWriter, _ *http.Request) {
		h := r.htmlHeader.Clone()
		h.Set("Content-Security-Policy", h.Get("Content-Security-Policy")+"; script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		write(w, h, withScript)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

var measureRE = regexp.MustCompile(`(?s)<pre id="cloudg-measure" hidden="">(.*?)</pre>`)

// measureAt renders the page in Chromium in a window of width x 800 and
// returns what the script measured.
func measureAt(t *testing.T, bin string, srv *httptest.Server, width int) measured {
	t.Helper()
	dom := browse(t, bin, srv.URL+"/measure", width, 800, "--dump-dom")
	m := measureRE.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("at %d px the script wrote nothing (blocked by the policy?):\n%s", width, dom)
	}
	var got measured
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
		t.Fatalf("%v: %s", err, m[1])
	}
	if got.Error != "" {
		t.Fatalf("at %d px the script failed: %s", width, got.Error)
	}
	t.Logf("at %d px: document %d px wide in a viewport of %d (window %d); the scopes' table %.0f px, at least %.0f", width, got.DocumentWidth, got.ViewportWidth, got.WindowWidth, got.TableWidth, got.TableMinWidth)
	return got
}

// The status page of a scan fits a 1280 x 800 window in headless
// Chromium: the document is no wider than the window, no element reaches
// beyond it, every value cut short carries the whole in its tooltip, and
// each scope's row shows its state (open with why, half-open, paused with
// the time left, dead as throttled for good, slowed, queued, ok). A
// laptop's window, 1366 or 1440 px, and a desktop's, 1920, cut none of
// the scan's values short:
// it has the room for them (before, europe-west1 and the EC2 operation
// DescribeVpcEndpointServiceConfigurations were cut at 84 and 220 px
// there as in 1280 px, 160 px of the table's width to spare), and 1280
// and 1024 px none of its regions (europe-west1 was cut at 84 px at
// 1280, 2 px short, and at 70 px in every window below 1260, which has
// the room once an operation goes on between its words).
// Narrower
// windows keep the document within the window and every state in view:
// 1024 px and 961 px, the narrowest that still shows a table (its long
// values cut shorter), and 800 and 500 px (a block per row). The page is
// also rendered to a PNG at 1280 x 800:
// to the path in $CLOUDG_SCREENSHOT when it is set (the README's
// screenshot: scripts/render-status-page).
func TestStatusPageInChromium(t *testing.T) {
	bin := chromium(t)
	r := scan(t)
	srv := serve(t, r)

	var scopes struct {
		Scopes []struct {
			Key    string `json:"key"`
			Status string `json:"status"`
		} `json:"scopes"`
	}
	if err := json.Unmarshal(r.json, &scopes); err != nil {
		t.Fatal(err)
	}
	if len(scopes.Scopes) != len(want) {
		t.Fatalf("%d scopes on the page, want %d: %s", len(scopes.Scopes), len(want), r.json)
	}

	for _, width := range []int{1920, 1440, 1366, 1280, 1024, 961, 800, 500} {
		m := measureAt(t, bin, srv, width)
		for _, c := range m.Cut {
			// A laptop's window: the table has the room for the scan's
			// every value, a GCP region and an EC2 operation of 40
			// characters among them; and from 1024 px for its regions.
			if width > 1280 || width >= 1024 && c.Element == "span.cut.reg" {
				t.Errorf("at %d px %s shows %q cut short, with room for the whole (%q)", width, c.Element, c.Text, c.Title)
			}
		}
		if m.BodyBackground != "rgb(245, 247, 250)" {
			t.Errorf("at %d px the style sheet did not apply (the body's background is %s): is its hash in the policy?", width, m.BodyBackground)
		}
		checkFits(t, m, width)
		if width == 1280 && !m.HeadVisible {
			t.Errorf("at 1280 px the scopes are not a table")
		}
		shown := map[string]string{}
		for _, row := range m.Rows {
			shown[row.Scope] = strings.ToLower(row.Shown)
			if !row.Visible {
				t.Errorf("at %d px the state of %s is not in view", width, row.Scope)
			}
		}
		for sc, state := range want {
			if shown[sc.Key()] != state {
				t.Errorf("at %d px %s shows %q, want %q", width, sc, shown[sc.Key()], state)
			}
		}
		if width != 1280 {
			continue
		}
		for _, a := range m.Abbreviated {
			if !holdsWhole(a.Title, a.Text) || len(a.Title) <= len(a.Text) {
				t.Errorf("%q is abbreviated without the whole in its tooltip (%q)", a.Text, a.Title)
			}
		}
		text := map[string]string{}
		for _, row := range m.Rows {
			text[row.Scope] = row.Text
		}
		for sc, says := range map[string][]string{
			ec2Subnets.Key(): {"open", "errors", "5 failed", "2 skipped"},
			gce.Key():        {"half-open", "throttling"},
			iamRoles.Key():   {"58s", "6"},
			keyVault.Key():   {"throttled for good", "skipped"},
			listAssets.Key(): {"1.5 / 1.5"},
		} {
			for _, s := range says {
				if !strings.Contains(strings.ToLower(text[sc]), s) {
					t.Errorf("the row of %s does not say %q: %q", sc, s, text[sc])
				}
			}
		}
	}

	dir := t.TempDir()
	shot := filepath.Join(dir, "status-page.png")
	browse(t, bin, srv.URL+"/page", 1280, 800, "--hide-scrollbars", "--screenshot="+shot)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Fatalf("the screenshot: %v, %dx%d", err, cfg.Width, cfg.Height)
	}
	if out := os.Getenv("CLOUDG_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the screenshot to %s", out)
	}
}

// holdsWhole reports whether title holds the whole of text, a value shown
// cut short by the style sheet or abbreviated in its middle ("head…tail").
func holdsWhole(title, text string) bool {
	text = strings.TrimSpace(text)
	if title == "" || text == "" {
		return false
	}
	head, tail, abbreviated := strings.Cut(text, "…")
	if !abbreviated {
		return strings.HasPrefix(title, text)
	}
	return strings.HasPrefix(title, head) && strings.HasSuffix(title, tail)
}

// checkFits reports what of the page measured at width (m) does not fit
// its window: a document wider than it, an element beyond its edge, a
// value cut short without the whole in its tooltip; and a kind of lost
// calls broken across lines to make room ("3 gave" above "up"), where
// only its count may go above it; an element that does not read in the
// page's direction (left to right).
func checkFits(t *testing.T, m measured, width int) {
	t.Helper()
	if m.DocumentWidth > m.ViewportWidth {
		t.Errorf("at %d px the document is %d px wide, wider than the window's %d px", width, m.DocumentWidth, m.ViewportWidth)
	}
	for _, o := range m.Outside {
		t.Errorf("at %d px an element reaches beyond the window: %s", width, o)
	}
	for _, c := range m.Cut {
		if !holdsWhole(c.Title, c.Text) {
			t.Errorf("at %d px %s shows %q cut short, without the whole in its tooltip (%q)", width, c.Element, c.Text, c.Title)
		}
	}
	for _, s := range m.Split {
		t.Errorf("at %d px the lost calls %q are written with their kind broken across lines", width, s)
	}
	for _, s := range m.Reordered {
		t.Errorf("at %d px %q is shown right to left, turned around by a scope's part before it", width, s)
	}
	for _, s := range m.Turned {
		t.Errorf("at %d px %s does not read in the page's direction", width, s)
	}
}
