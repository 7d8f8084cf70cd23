package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/cloudg/cloudg/resilience"
)

// collect is the script of the sweep's page: once every frame has loaded
// (each one the page at one width, measured by measure), it writes what
// each measured into the document as one JSON array, for --dump-dom to
// print.
const collect = `window.addEventListener('load', function () {
  var all = [];
  document.querySelectorAll('iframe').forEach(function (f) {
    var pre = f.contentDocument && f.contentDocument.getElementById('cloudg-measure');
    all.push(pre ? JSON.parse(pre.textContent) : {error: 'nothing measured in the frame ' + f.width + ' px wide'});
  });
  var pre = document.createElement('pre');
  pre.id = 'cloudg-sweep';
  pre.hidden = true;
  pre.textContent = JSON.stringify(all);
  document.body.appendChild(pre);
});`

var refreshRE = regexp.MustCompile(`<meta http-equiv="refresh"[^>]*>\n?`)

var sweepRE = regexp.MustCompile(`(?s)<pre id="cloudg-sweep" hidden="">(.*?)</pre>`)

// sweep renders the page of r in one headless Chromium at each of widths,
// each in a frame of that width and 800 px high (a viewport as a window
// of that size gives it: its media queries, its vw and its scroll bar),
// and returns what measure measured in each, in the order of widths: a
// Chromium started for each width takes seconds.
func sweep(t *testing.T, bin string, r rendered, widths []int) []measured {
	t.Helper()
	script := sha256.Sum256([]byte(measure))
	// Without its refresh, which would load a frame again every few
	// seconds while the others load, so that the sweep's page never would.
	still := refreshRE.ReplaceAll(r.html, nil)
	withScript := bytes.Replace(still, []byte("</body>"), []byte("<script>"+measure+"</script>\n</body>"), 1)
	var frames strings.Builder
	for _, w := range widths {
		fmt.Fprintf(&frames, "<iframe src=\"/framed\" width=\"%d\" height=\"800\" style=\"border:0;display:block\"></iframe>\n", w)
	}
	page := "<!doctype html><html><head><meta charset=\"utf-8\"></head><body style=\"margin:0\">\n" + frames.String() + "<script>" + collect + "</script></body></html>"
	collected := sha256.Sum256([]byte(collect))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /framed", func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range r.htmlHeader {
			w.Header()[k] = v
		}
		// The page's own policy, with the measuring script and the sweep's
		// page, of the same origin, as the one that may frame it.
		policy := strings.Replace(r.htmlHeader.Get("Content-Security-Policy"), "frame-ancestors 'none'", "frame-ancestors 'self'", 1)
		w.Header().Set("Content-Security-Policy", policy+"; script-src 'sha256-"+base64.StdEncoding.EncodeToString(script[:])+"'")
		w.Header().Del("X-Frame-Options")
		w.Write(withScript)
	})
	mux.HandleFunc("GET /sweep", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; frame-src 'self'; style-src 'unsafe-inline'; script-src 'sha256-"+base64.StdEncoding.EncodeToString(collected[:])+"'")
		w.Write([]byte(page))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dom := browse(t, bin, srv.URL+"/sweep", slices.Max(widths)+40, 800, "--dump-dom")
	m := sweepRE.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the sweep's script wrote nothing:\n%.4000s", dom)
	}
	var got []measured
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
		t.Fatalf("%v: %.2000s", err, m[1])
	}
	if !refreshRE.Match(r.html) || refreshRE.Match(still) {
		t.Fatalf("the page's refresh was not taken out of the frames")
	}
	if len(got) != len(widths) {
		t.Fatalf("the sweep measured %d frames, want %d", len(got), len(widths))
	}
	for i, g := range got {
		if g.Error != "" {
			t.Fatalf("at %d px the script failed: %s", widths[i], g.Error)
		}
	}
	return got
}

// The scan's every service and operation, and every region, is shown
// whole in every window from 1024 to 1920 px wide, measured every 16 px
// (below 1260 px europe-west1 was cut at 70 px, with 120 px of the
// table's width to spare at 1024), and the page fits each
// (as checkFits holds it): a laptop's and a desktop's window cuts no
// operation short, however much of the table's width the other columns
// take. An operation on more than one line goes from one to the next
// between its words, and its row's text (what is copied and found)
// holds it whole: before, DescribeVpcEndpointServiceConfigurations was
// broken inside a word from 1024 to 1120 px and at 1264
// ("DescribeVpcEndpointServic" above "eConfigurations" at 1024).
func TestNoOperationIsCutFrom1024To1920(t *testing.T) {
	bin := chromium(t)
	var widths []int
	for w := 1024; w <= 1920; w += 16 {
		widths = append(widths, w)
	}
	for i, m := range sweep(t, bin, scan(t), widths) {
		width := widths[i]
		checkFits(t, m, width)
		for _, w := range m.Wrapped {
			// The operations' second line is no reason for the lost
			// calls to leave theirs, where the table has every column.
			if width >= 1264 {
				t.Errorf("at %d px the lost calls %q are written on more than one line", width, w)
			}
		}
		for _, c := range m.Cut {
			if strings.Contains(c.Element, "svcop") || strings.Contains(c.Element, "reg") {
				t.Errorf("at %d px %s shows %q cut short, in a table %.0f px wide that needs %.0f", width, c.Element, c.Text, m.TableWidth, m.TableMinWidth)
			}
		}
		for _, row := range m.Rows {
			// Broken between its words, the name is still one: the
			// row's text, as it is copied and found, holds it whole.
			for sc := range want {
				name := sc.Service
				if sc.Operation != "" {
					name += " · " + sc.Operation
				}
				if row.Scope == sc.Key() && !strings.Contains(row.Text, name) {
					t.Errorf("at %d px the row of %s does not hold its service and operation whole: %q", width, sc, row.Text)
				}
			}
		}
		for _, p := range m.Lines {
			if at, ok := betweenWords(p.Text, p.Lines); !ok {
				t.Errorf("at %d px %q is written on %d lines, %q, broken inside a word at %q, in a table %.0f px wide that needs %.0f", width, p.Text, len(p.Lines), p.Lines, at, m.TableWidth, m.TableMinWidth)
			}
		}
	}
}

// betweenWords reports whether a scope's part, text, written on lines,
// goes from one line to the next only between two of its words, and
// where it does not (the end of the line and the start of the next).
// Its words are those of a CamelCase name (Describe, Vpc, Endpoint of
// DescribeVpcEndpoint; DB and Instances of DBInstances; Ipv6 and Pools of
// Ipv6Pools) and those a punctuation mark or a space ends
// (RegionInstanceGroupManagers. of RegionInstanceGroupManagers.List); a
// part without two words, in which there is nowhere else to break, may be
// broken anywhere.
func betweenWords(text string, lines []string) (string, bool) {
	r := []rune(text)
	boundary := func(i int) bool {
		if i <= 0 || i >= len(r) {
			return true
		}
		prev, this := r[i-1], r[i]
		switch {
		case !unicode.IsLetter(prev) && !unicode.IsDigit(prev):
			return true
		case unicode.IsUpper(this) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			return true
		case unicode.IsUpper(this) && unicode.IsUpper(prev) && i+1 < len(r) && unicode.IsLower(r[i+1]):
			return true
		}
		return false
	}
	words := false
	for i := 1; i < len(r); i++ {
		words = words || boundary(i)
	}
	at := 0
	for i, l := range lines[:max(len(lines)-1, 0)] {
		at += len([]rune(l))
		if words && !boundary(at) {
			return l + " / " + lines[i+1], false
		}
	}
	return "", true
}

// A scope's parts in a right-to-left script (Hebrew: a provider, an
// account, a region, a service and its operation) read in the page's
// direction wherever the page shows them, in the totals' retry budgets as
// in the table's cells, at 1920, 1280, 1024, 800 and 500 px: isolated
// from the text around them, not turned to read right to left by what
// they hold.
func TestHebrewPartsReadInThePagesDirection(t *testing.T) {
	bin := chromium(t)
	hebrew := resilience.Scope{Provider: "ספק-1", Account: "חשבון-1", Region: "אזור-1", Service: "שירות", Operation: "קריאה"}
	widths := []int{1920, 1280, 1024, 800, 500}
	for i, m := range sweep(t, bin, scanWith(t, more{perOperation: true}, hebrew), widths) {
		checkFits(t, m, widths[i])
	}
}
