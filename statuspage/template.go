package statuspage

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cloudg/cloudg/state"
)

//go:embed page.html
var pageSource string

// style is the page's whole style sheet. The bars' widths are classes
// (w0 to w100 in steps of 2) rather than style attributes, so that the
// Content-Security-Policy allows this one sheet by its hash and nothing
// else.
var style = baseStyle + widthClasses()

const baseStyle = `
:root{--open:#d62839;--half_open:#f77f00;--paused:#7b2cbf;--slowed:#e0a100;--queued:#1f78d1;--ok:#2a9d8f;--ink:#1d232b;--dim:#6b7683;--line:#e3e7ec}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:#f5f7fa}
header{background:#1d232b;color:#fff;padding:14px 24px}
h1{margin:0;font-size:22px;font-weight:650;letter-spacing:.2px}
h1 .sub{font-weight:400;color:#aab4c0;margin-left:6px}
.meta{margin:4px 0 0;color:#aab4c0;font-size:13px}
.meta a{color:#9ecbff}
.cards{display:flex;gap:12px;padding:16px 24px 4px;flex-wrap:wrap}
.card{background:#fff;border:1px solid var(--line);border-left:6px solid var(--c);border-radius:8px;padding:8px 16px;min-width:118px}
.card b{display:block;font-size:24px;line-height:1.1;color:var(--c)}
.card span{color:var(--dim);font-size:12px;text-transform:uppercase;letter-spacing:.6px}
.card.none{opacity:.45}
.open{--c:var(--open)}.half_open{--c:var(--half_open)}.paused{--c:var(--paused)}.slowed{--c:var(--slowed)}.queued{--c:var(--queued)}.ok{--c:var(--ok)}
.totals{display:flex;gap:22px;padding:10px 24px 12px;color:var(--dim);flex-wrap:wrap}
.totals b{color:var(--ink);font-variant-numeric:tabular-nums}
.totals .bad b{color:var(--open)}
table{border-collapse:separate;border-spacing:0;width:100%;background:#fff;border:1px solid var(--line);border-radius:8px;overflow:hidden}
th{font-size:10.5px;text-transform:uppercase;letter-spacing:.4px;color:var(--dim);text-align:left;font-weight:600;padding:8px 8px;border-bottom:1px solid var(--line);background:#fafbfc;vertical-align:bottom;line-height:1.25}
td{padding:6px 8px;font-size:13px;border-bottom:1px solid var(--line);white-space:nowrap;vertical-align:middle}
tbody tr:last-child td{border-bottom:0}
tbody tr{box-shadow:inset 4px 0 0 var(--c)}
tr.ok td{color:#3b4550}
.part{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12px;max-width:190px;overflow:hidden;text-overflow:ellipsis}
.num{font-variant-numeric:tabular-nums;text-align:right}
.chip{display:inline-block;min-width:70px;text-align:center;padding:2px 7px;border-radius:10px;font-size:10px;font-weight:650;text-transform:uppercase;letter-spacing:.4px;color:#fff;background:var(--c)}
.chip.slowed{color:#3a2c00}
.breaker{font-weight:650}
.breaker.closed{color:var(--ok)}.breaker.half_open{color:var(--half_open)}.breaker.open{color:var(--open)}
.ratecol{min-width:176px}
.bar{display:inline-block;vertical-align:middle;width:72px;height:10px;border-radius:5px;background:#e9edf1;overflow:hidden;margin-right:8px}
.fill{height:100%;border-radius:5px}
.fill.full{background:var(--ok)}.fill.mid{background:var(--slowed)}.fill.low{background:var(--open)}.fill.stop{background:var(--paused)}
td.num.hot{color:var(--paused);font-weight:650}
td.num.bad{color:var(--open);font-weight:650}
.dim{color:var(--dim)}
th.r{text-align:right}
th.slots{min-width:84px}
.wrap{overflow-x:auto;margin:0 24px 16px}

.empty{margin:24px;color:var(--dim)}
footer{margin:0 24px 24px;color:var(--dim);font-size:12px}
`

func widthClasses() string {
	var b strings.Builder
	for w := 0; w <= 100; w += 2 {
		fmt.Fprintf(&b, ".w%d{width:%d%%}", w, w)
	}
	return b.String() + "\n"
}

// contentPolicy allows the page's style sheet and nothing else: no script,
// no image, no font, no frame, no form, nothing fetched from anywhere.
var contentPolicy = func() string {
	sum := sha256.Sum256([]byte(style))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"statusOrder": func() []status {
		out := make([]status, numStatuses)
		for i := range out {
			out[i] = status(i)
		}
		return out
	},
	"label":    func(s status) string { return strings.ReplaceAll(s.String(), "_", "-") },
	"breaker":  func(s state.BreakerState) string { return strings.ReplaceAll(s.String(), "_", "-") },
	"part":     part,
	"rate":     rate,
	"duration": duration,
	"seconds":  func(s float64) string { return duration(time.Duration(s * float64(time.Second))) },
	"paused":   pausedFor,
	"width":    func(s state.ScopeSnapshot) int { return 2 * int(math.Round(share(s)*50)) },
	"level":    level,
	"budget":   func(f float64) string { return strconv.FormatFloat(math.Floor(f*10)/10, 'f', -1, 64) },
	"count":    count,
	"clock":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(strings.Replace(pageSource, "/*STYLE*/", style, 1)))

// part shows an empty scope part as the scope's string form does.
func part(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// rate writes a rate with three significant digits at most.
func rate(r float64) string {
	if r >= 1000 {
		return strconv.FormatFloat(math.Round(r), 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}

// duration writes d as a person reads it at a glance: "—" for none, tenths
// of a second under ten seconds, whole seconds beyond.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < 10*time.Second:
		return strconv.FormatFloat(math.Ceil(d.Seconds()*10)/10, 'f', -1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// level names the bar's colour: paused, at the ceiling, held a little
// below it, or far below.
func level(s state.ScopeSnapshot) string {
	switch f := share(s); {
	case pausedFor(s) > 0:
		return "stop"
	case f >= 0.95:
		return "full"
	case f >= 0.5:
		return "mid"
	}
	return "low"
}

// count writes zero as a dot, so that the rows with counts stand out.
func count(n int64) string {
	if n == 0 {
		return "·"
	}
	return strconv.FormatInt(n, 10)
}
