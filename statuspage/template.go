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
	"unicode"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

//go:embed page.html
var pageSource string

// style is the page's whole style sheet. A region, cut short at 90 pixels
// in a window from 1024 up to 1356 wide (a region such as europe-west1
// whole, in a window of 1024 pixels too, where the provider and the
// account are cut shorter; at 70 pixels below, where a table with a
// long provider that lost five figures of calls needs every pixel), has
// the room a wider window gives (up to 100 pixels at 1366), so that a
// laptop's 1366 or 1440 shows it whole; past 1440
// pixels a provider and a region take 30 and 25 of each pixel more (up
// to 240 and 220 pixels: a desktop's 1920 shows kubernetes-control-plane
// and northamerica-northeast1 whole). A service and its operation are never
// cut short: they take the width the table's other columns leave them,
// and go on a second line when that is less than they need, broken
// between the words of their names (see words), so that no window from
// 1024 pixels up hides a part of an operation's name or breaks one of
// its words; a word is broken inside only when it alone is wider than
// its cell (overflow-wrap), as a name of a hundred small letters may
// be. A scope's part is isolated from
// the text around it (bdi, unicode-bidi), so that a bidi control it holds
// (U+202E) turns around no other text: a provider's name before the
// others' retry budgets, a service before its operation in one cell; and
// it reads in the page's direction, left to right (bdi dir="ltr"), as the
// line it is in does, whatever script it is written in. The
// bars' widths are classes (w0 to w100 in steps of 2) rather than style
// attributes, so that the Content-Security-Policy allows this one sheet
// by its hash and nothing else.
var style = baseStyle + widthClasses()

const baseStyle = `
:root{--open:#d62839;--half_open:#f77f00;--paused:#7b2cbf;--dead:#3a3f47;--slowed:#d99a00;--queued:#1f78d1;--ok:#2a9d8f;--ink:#1d232b;--dim:#68737f;--line:#e3e7ec}
*{box-sizing:border-box}
body{margin:0;font:12.5px/1.35 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:#f5f7fa}
header{background:#1d232b;color:#fff;padding:10px 20px}
h1{margin:0;font-size:20px;font-weight:650}
h1 .sub{font-weight:400;color:#aab4c0;margin-left:4px}
.meta{margin:2px 0 0;color:#aab4c0;font-size:12.5px}
.meta a{color:#9ecbff}
.open{--c:var(--open)}.half_open{--c:var(--half_open)}.paused{--c:var(--paused)}.dead{--c:var(--dead)}.slowed{--c:var(--slowed)}.queued{--c:var(--queued)}.ok{--c:var(--ok)}
.cards{display:grid;grid-template-columns:repeat(7,minmax(0,1fr));gap:8px;padding:10px 20px 2px}
.card{background:#fff;border:1px solid var(--line);border-left:5px solid var(--c);border-radius:6px;padding:5px 9px 6px;min-width:0}
.card b{font-size:19px;line-height:1.1;color:var(--c);margin-right:5px}
.card .name{font-size:11px;text-transform:uppercase;letter-spacing:.5px;font-weight:650;color:var(--c)}
.card .means{display:block;color:var(--dim);font-size:11.5px;line-height:1.25;margin-top:1px}
.card.none b,.card.none .name{opacity:.45}
.totals{display:flex;flex-wrap:wrap;gap:2px 18px;padding:8px 20px;color:var(--dim);overflow-wrap:anywhere}
.totals b{color:var(--ink);font-variant-numeric:tabular-nums}
.totals .bad b{color:var(--open)}
.frame{margin:0 20px 10px}
table{border-collapse:separate;border-spacing:0;width:100%;background:#fff;border:1px solid var(--line);border-radius:8px}
th{font-size:11px;color:var(--dim);text-align:left;font-weight:600;padding:5px 5px;border-bottom:1px solid var(--line);background:#fafbfc;vertical-align:bottom;line-height:1.2}
tr.groups th{border-bottom:0;padding-bottom:0;color:#9aa4af;font-size:10px;text-transform:uppercase;letter-spacing:.4px}
th.now,td.now,th.counted,td.counted{border-left:1px solid var(--line)}
td{padding:4px 5px;border-bottom:1px solid var(--line);white-space:nowrap;vertical-align:middle}
tbody tr:last-child td,td[rowspan]{border-bottom-color:var(--line)}
tbody tr{box-shadow:inset 4px 0 0 var(--c)}
td.st{padding-left:9px}
.cut{display:inline-block;vertical-align:bottom;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.pv,.acct,.cut,.svcop,bdi,.totals b{unicode-bidi:isolate}
.svcop{white-space:normal;overflow-wrap:anywhere}
.acct,.acctfull{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:11.5px}
.prov{color:var(--dim)}.pv{max-width:84px}.reg{max-width:clamp(90px,calc(100vw - 1266px),100px)}.acctfull{max-width:340px}
.num{font-variant-numeric:tabular-nums;text-align:right}
.chip{display:inline-block;min-width:60px;text-align:center;padding:1px 5px;border-radius:9px;font-size:9.5px;font-weight:650;text-transform:uppercase;letter-spacing:.4px;color:#fff;background:var(--c)}
.chip.slowed{color:#2e2400}
.breaker{font-weight:650;color:var(--dim)}
.breaker.half_open{color:var(--half_open)}.breaker.open,.breaker.unknown{color:var(--open)}
td.brk{line-height:1.2}
.why{display:block;font-size:11.5px;color:var(--c)}
.bar{display:inline-block;vertical-align:middle;width:36px;height:8px;border-radius:4px;background:#e9edf1;overflow:hidden;margin-right:6px}
.fill{display:block;height:100%;border-radius:4px}
.fill.full{background:var(--ok)}.fill.below{background:var(--slowed)}.fill.stop{background:var(--paused)}
td.hot{color:var(--c);font-weight:650}
td.hot.paused,td.hot.queued{white-space:normal}
.bad{color:var(--open);font-weight:650}
td.lost{line-height:1.2}
td.lost>span{display:block}
.kind{white-space:nowrap}
.dim{color:var(--dim);font-weight:400}
th.r{text-align:right}
.empty{margin:20px;color:var(--dim)}
footer{margin:2px 20px 20px;color:var(--dim);font-size:11.5px;line-height:1.4}
footer .breaker{font-weight:600}
@media (min-width:1441px){
.pv{max-width:min(calc(84px + (100vw - 1440px)*.3),240px)}.reg{max-width:min(calc(100px + (100vw - 1440px)*.25),220px)}
}
@media (max-width:1259px){
.frame{margin:0 12px 10px}.cards,.totals{padding-left:12px;padding-right:12px}
.bar,.calls,tr.groups{display:none}
th,td{padding-left:4px;padding-right:4px}
.pv{max-width:56px}.acct{display:inline-block;vertical-align:bottom;max-width:100px;overflow:hidden;text-overflow:ellipsis}
}
@media (max-width:1023px){.reg{max-width:70px}}
@media (max-width:960px){
.cards{grid-template-columns:repeat(4,minmax(0,1fr))}
table,thead,tbody,tr,td{display:block}
thead{display:none}
tbody tr{display:flex;flex-wrap:wrap;align-items:baseline;gap:3px 14px;padding:7px 10px 7px 14px;border-bottom:1px solid var(--line)}
td,td.now,td.counted{border:0;padding:0;max-width:100%;min-width:0}
td::before{content:attr(data-label) " ";color:var(--dim);font-size:10.5px}
td.st::before{content:none}
td.zero{display:none}
td.who,.cut,.acct{white-space:normal;overflow-wrap:anywhere;max-width:100%}
.cut{display:inline}
.why,td.lost>span{display:inline;margin-left:4px}
.bar{display:inline-block}.calls{display:block}
}
@media (max-width:560px){.cards{grid-template-columns:repeat(2,minmax(0,1fr))}}
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
	"meaning":  func(s status) string { return meanings[s] },
	"explain":  explain,
	"breaker":  func(s state.BreakerState) string { return strings.ReplaceAll(s.String(), "_", "-") },
	"brkClass": breakerClass,
	"part":     part,
	"words":    words,
	"short":    short,
	"rate":     rate,
	"duration": duration,
	"seconds":  func(s int64) string { return duration(time.Duration(s) * time.Second) },
	"paused":   pausedFor,
	"pausedBy": func(on string) string { return pausedWhere[on] },
	"mark":     func(on string) string { return marks[on] },
	"width":    func(s state.ScopeSnapshot) int { return 2 * int(math.Round(share(s)*50)) },
	"level":    level,
	"budget":   budget,
	"count":    count,
	"whole":    whole,
	"lost":     lost,
	"clock":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(strings.Replace(pageSource, "/*STYLE*/", style, 1)))

// meanings says what each status means, on its card: the page's legend.
var meanings = [numStatuses]string{
	statusOpen:     "the breaker refuses calls until its probe",
	statusHalfOpen: "one probe call is out",
	statusPaused:   "a pause holds every call",
	statusDead:     "every answer fails: throttled for good, or down",
	statusSlowed:   "the rate is held below its ceiling",
	statusQueued:   "callers wait for a token",
	statusOK:       "at its ceiling, nothing waits",
}

// explain says in a sentence where a row's scope stands, for its state's
// tooltip.
func explain(r row) string {
	s := r.State
	switch r.Status {
	case statusOpen:
		if st := s.Breaker.State; !knownBreaker(st) {
			what := "open: its breaker is in an unknown state, " + st.String() + ", none of closed, half-open and open (as a store's breaker decoded from a corrupt record may report), which the governor takes for not closed"
			if s.Breaker.Wait <= 0 {
				return what + "; it reports no wait, and calls go as the breaker lets them" + because(r.Reason)
			}
			return what + ": calls are refused for " + duration(s.Breaker.Wait) + " more" + because(r.Reason)
		}
		if s.Breaker.Wait <= 0 {
			return "open: its cooldown is over, and the next call goes as its probe" + because(r.Reason)
		}
		if r.BreakerWait {
			return "open: calls wait " + duration(s.Breaker.Wait) + " more for its verdict (breaker_wait), within their deadline, then one goes as its probe" + because(r.Reason)
		}
		return "open: calls are refused for " + duration(s.Breaker.Wait) + " more, then one probe goes" + because(r.Reason)
	case statusHalfOpen:
		if s.Breaker.Wait <= 0 {
			return "half-open: the lease of its probe ran out, and the next call goes as a new probe" + because(r.Reason)
		}
		return "half-open: one probe call is out; its answer closes or reopens the breaker" + because(r.Reason)
	case statusPaused:
		return "paused: every call is held for " + duration(pausedFor(s)) + " more" + pausedWhere[pausedOn(s)]
	case statusDead:
		what := "dead"
		if r.Reason != "" {
			what += ", " + r.Reason
		}
		if s.Breaker.State == state.Closed {
			// Found dead without a new answer: the next call's admission
			// opens the breaker, and refuses the call.
			return what + ": every answer failed for at least the provider's breaker_dead_seconds; its breaker opens at its next call, which it refuses"
		}
		return what + ": every answer failed for at least the provider's breaker_dead_seconds, and its breaker opened at once"
	case statusSlowed:
		return "slowed: " + rate(s.Leaf.Rate) + " of its " + rate(s.Leaf.Ceiling) + " calls per second"
	case statusQueued:
		return "queued: " + strconv.Itoa(queuedFor(s)) + " callers wait for a token" + queuedWhere[queuedOn(s)]
	}
	return "ok: at its ceiling, nothing waits"
}

// queuedWhere says, by queuedOn's name, on which bucket a scope's
// callers wait when it is not its own.
var queuedWhere = map[string]string{
	onAccount:  " of its account's bucket",
	onProvider: " of the provider's bucket (global_max_rps)",
}

// pausedWhere says, by pausedOn's name, which bucket's pause holds a
// scope when it is not its own.
var pausedWhere = map[string]string{
	onAccount:  " by its account's pause",
	onProvider: " by its provider's pause (global_max_rps)",
}

// because says why a breaker opened, when it is known.
func because(reason string) string {
	if reason == "" {
		return ""
	}
	return "; it opened after " + reason
}

// part shows an empty scope part as the scope's string form does.
func part(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// words writes a service's or an operation's name as text with a break
// opportunity (an HTML wbr element, which is no text: the name is copied
// and found in the page as it is) between each two of its words, so that
// a name too long for its cell goes on to a next line between words
// rather than inside one (DescribeVpcEndpoint<wbr>Service<wbr>...). A word
// of a CamelCase name starts at a capital after a small letter or a digit
// (Describe<wbr>Vpcs, Ipv6<wbr>Pools) and at the last capital of a run
// before a small letter (DB<wbr>Instances); one also starts at a letter
// or a digit after a punctuation mark or a symbol
// (RegionInstanceGroupManagers.<wbr>List, compute.<wbr>instances). A
// mark (an accent written after its letter, an Indic vowel sign or
// virama) is part of the character before it: no break goes before it,
// and the rules read that character in its place. A byte that is not
// UTF-8 is written as U+FFFD, as the page writes it elsewhere.
func words(s string) template.HTML {
	word := func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }
	r := []rune(s)
	// base returns the character before i, its marks passed over.
	base := func(i int) rune {
		for i--; i > 0 && unicode.IsMark(r[i]); i-- {
		}
		return r[i]
	}
	// next returns the character after i, its marks passed over (0: none).
	next := func(i int) rune {
		for i++; i < len(r) && unicode.IsMark(r[i]); i++ {
		}
		if i < len(r) {
			return r[i]
		}
		return 0
	}
	var b strings.Builder
	start := 0
	for i := 1; i < len(r); i++ {
		this := r[i]
		if unicode.IsMark(this) {
			continue // one character with the one before it
		}
		prev := base(i)
		switch {
		case unicode.IsUpper(this) && (unicode.IsLower(prev) || unicode.IsDigit(prev)),
			unicode.IsUpper(this) && unicode.IsUpper(prev) && unicode.IsLower(next(i)),
			word(this) && !word(prev) && !unicode.IsSpace(prev):
		default:
			continue
		}
		b.WriteString(template.HTMLEscapeString(string(r[start:i])))
		b.WriteString("<wbr>")
		start = i
	}
	b.WriteString(template.HTMLEscapeString(string(r[start:])))
	return template.HTML(b.String())
}

// short abbreviates a long account in its middle, where ids differ least
// (an Azure subscription's GUID keeps its first nine characters and its
// last eight), and shows a GCP project by its id (projects/p1 as p1); the
// page puts the whole value in a tooltip.
func short(s string) string {
	const head, tail = 9, 8
	if id, ok := strings.CutPrefix(s, "projects/"); ok && id != "" {
		s = id
	}
	r := []rune(part(s))
	if len(r) <= head+tail+3 {
		return string(r)
	}
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// rate writes a rate with three significant digits at most below 1000,
// as a whole number from 1000, and from compactFrom in three figures and
// a unit as count does (123k, 12.3M), never in exponent form: a cell
// holds at most five characters from 0.1 up, so that a scope or an
// account configured at a million calls per second keeps the table's
// width. A rate that is no finite number (a Store of the user's may
// answer one) is written NaN, +Inf or -Inf.
func rate(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return strconv.FormatFloat(r, 'f', -1, 64) // NaN, +Inf or -Inf: a Store's answer that is no rate
	}
	if r < 1000 {
		// Rounded to three significant digits, which 'g' alone would
		// write 999.7 as 1e+03.
		r, _ = strconv.ParseFloat(strconv.FormatFloat(r, 'g', 3, 64), 64)
	}
	if r >= 1000 {
		if r = math.Round(r); r >= compactFrom {
			return compact(r)
		}
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// budget writes a retry budget's tokens left to a tenth, rounded down,
// and from compactFrom in three figures and a unit, as rate writes a
// rate: a budget a Store answered, 1e300, keeps the cell's width.
func budget(f float64) string {
	if f >= compactFrom {
		return compact(f)
	}
	return strconv.FormatFloat(math.Floor(f*10)/10, 'f', -1, 64)
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

// share returns the leaf's rate as a share of its ceiling, 0 to 1.
func share(s state.ScopeSnapshot) float64 {
	if s.Leaf.Ceiling <= 0 {
		return 1
	}
	return min(1, max(0, s.Leaf.Rate/s.Leaf.Ceiling))
}

// level names the bar's colour: paused, at the ceiling, or below it.
func level(s state.ScopeSnapshot) string {
	switch {
	case pausedFor(s) > 0:
		return "stop"
	case s.Leaf.Rate < s.Leaf.Ceiling:
		return "below"
	}
	return "full"
}

// count writes zero as a dot, so that the rows with counts stand out.
func count(n any) string {
	v := int64Of(n)
	switch {
	case v == 0:
		return "·"
	case v < 0 || v < compactFrom:
		return strconv.FormatInt(v, 10)
	}
	return compact(float64(v))
}

// compact writes f, compactFrom or more, in three significant figures
// and a unit: 123k, 1.23M, 12.3M, 123M; past the largest unit (a rate or
// a budget a Store answered, 1e300), in three figures and an exponent,
// 1e+300, not in the number's every digit.
func compact(f float64) string {
	if f >= 999.5e18 {
		return strconv.FormatFloat(f, 'g', 3, 64)
	}
	unit := 0
	for f >= 999.5 && unit < len(units)-1 {
		f /= 1000
		unit++
	}
	prec := 0
	switch {
	case f < 9.995:
		prec = 2
	case f < 99.95:
		prec = 1
	}
	return strconv.FormatFloat(f, 'f', prec, 64) + units[unit]
}

// compactFrom is the least count (or rate) a cell shows in three figures
// and a unit (see count and rate): a cell holds at most five characters,
// so that a long-running governor's counts (12,345,678 calls) do not
// widen the table past a laptop's window.
const compactFrom = 100_000

var units = [...]string{"", "k", "M", "G", "T", "P", "E"}

// whole returns n's every digit when count shows it cut short (in three
// figures and a unit), for the cell's title, and "" when count shows it
// whole.
func whole(n any) string {
	if v := int64Of(n); v >= compactFrom {
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// int64Of is n, an int or an int64, as an int64.
func int64Of(n any) int64 {
	switch n := n.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	}
	return 0
}

// loss is one kind of lost calls and how many.
type loss struct {
	N    int64
	Kind string
}

// lost returns the kinds of calls c lost, those with any, in the order
// of the ledger's kinds.
func lost(c resilience.Counters) []loss {
	var out []loss
	for _, l := range []loss{{c.GaveUp, "gave up"}, {c.Rejected, "skipped"}, {c.Failed, "failed"}, {c.Refused, "refused"}, {c.Cancelled, "cancelled"},
		{c.Errored, "errored"}, {c.Panicked, "panicked"}, {c.Denied, "denied"}} {
		if l.N > 0 {
			out = append(out, l)
		}
	}
	return out
}
