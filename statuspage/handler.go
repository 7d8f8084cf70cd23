package statuspage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudg/cloudg/resilience"
)

// An Option configures the page's handler. An Option is a value that
// changes nothing once made: any number of goroutines may give the same
// one to New at once. A nil Option is ignored.
type Option interface{ apply(*config) }

type config struct {
	gov     *resilience.Governor // nil: resilience.Default() at each request
	refresh time.Duration
	limit   int
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithGovernor shows g instead of the process governor
// (resilience.Default, looked up at each request).
func WithGovernor(g *resilience.Governor) Option {
	return optionFunc(func(c *config) { c.gov = g })
}

// WithRefresh sets how often the page reloads itself; the default is 2 s,
// and d <= 0 keeps it. A browser counts the refresh in whole seconds, so
// the page asks for d rounded up to whole seconds, at least one, and says
// that refresh in its header and in its JSON.
func WithRefresh(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.refresh = d
		}
	})
}

// WithLimit shows at most n scopes, the most troubled first, at most n
// accounts, the most troubled kept and shown by provider, at most n
// providers' retry budgets, those nearest their end, and at most n
// providers disabled, the first by name, so that a governor with a
// million live scopes, or a program calling many providers by name,
// still serves a page a browser renders; the default is 500, and n <= 0
// keeps it. The counts of every status cover all the live scopes, and
// the page says what the limit left out.
func WithLimit(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.limit = n
		}
	})
}

// New returns the handler of the status page. It serves GET and HEAD
// only: the page as HTML (also at ?format=html), or as JSON with
// ?format=json; any other format, or a query that does not parse, is
// refused with 400 Bad Request. It is safe for concurrent use; each
// request reads the governor afresh. A request whose context ends while
// its page is read stops the reading there, and is answered 503 Service
// Unavailable.
func New(opts ...Option) http.Handler {
	c := config{refresh: 2 * time.Second, limit: 500}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return &handler{c: c}
}

type handler struct {
	c     config
	known knownProviders
}

// wholeSeconds returns d in seconds, rounded up, and at least 1: the
// refresh a browser reads, which takes only the integer part. The largest
// durations round down instead, so that the seconds still make a
// time.Duration.
func wholeSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 && s < int64(math.MaxInt64/time.Second) {
		s++
	}
	return max(1, s)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// No answer is stored: the page is of the moment it was read, and a
	// refusal or a page not read is no lasting answer either.
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the status page is read-only", http.StatusMethodNotAllowed)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		// URL.Query drops the pairs it cannot decode: ?format=json;x=1
		// would be served as HTML.
		http.Error(w, fmt.Sprintf("the status page's query does not parse (%v): it is HTML, or JSON with ?format=json", err), http.StatusBadRequest)
		return
	}
	asJSON := false
	switch f := q["format"]; {
	case len(f) == 0 || len(f) == 1 && (f[0] == "" || f[0] == "html"):
	case len(f) == 1 && f[0] == "json":
		asJSON = true
	default:
		http.Error(w, fmt.Sprintf("the status page has no format %q: it is HTML, or JSON with ?format=json", strings.Join(f, ",")), http.StatusBadRequest)
		return
	}
	g := h.c.gov
	if g == nil {
		g = resilience.Default()
	}
	p, err := collect(r.Context(), g, h.c.limit, &h.known)
	if err != nil {
		// The client went away, or gave up: no page for it, and no more
		// scopes read for one.
		http.Error(w, "the status page was not read: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	p.RefreshSeconds = wholeSeconds(h.c.refresh)
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	var buf bytes.Buffer
	if asJSON {
		enc := json.NewEncoder(&buf) // escapes <, > and & in strings
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		hd.Set("Content-Type", "application/json")
	} else {
		if err := pageTemplate.Execute(&buf, p.clipped()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		hd.Set("Content-Type", "text/html; charset=utf-8")
		hd.Set("Content-Security-Policy", contentPolicy)
	}
	if r.Method == http.MethodHead {
		return
	}
	out := buf.Bytes()
	if !utf8.Valid(out) {
		// A scope's parts may hold any bytes, which html/template writes
		// as they are: the page is UTF-8, as it says, with U+FFFD for
		// each run of bytes that are not (the JSON's encoder writes no
		// others).
		out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	w.Write(out)
}
