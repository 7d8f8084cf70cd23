package cloudgazure

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/internal/cowmap"
	"github.com/cloudg/cloudg/resilience"
)

// GraphQuerier is what QueryResources needs of a Resource Graph client;
// *armresourcegraph.Client and *GraphClient have it. QueryResources calls
// Resources on its caller's goroutine, one page after another: a
// GraphQuerier shared by concurrent queries must be safe for concurrent
// use, as the Azure SDK's clients are. A nil GraphQuerier panics.
type GraphQuerier interface {
	Resources(ctx context.Context, query armresourcegraph.QueryRequest,
		options *armresourcegraph.ClientResourcesOptions) (armresourcegraph.ClientResourcesResponse, error)
}

// GraphClient is a Resource Graph client built by NewGraphClient. It says
// whether its pipeline is governed, so that QueryResources does not pace
// its pages a second time.
//
// A GraphClient is safe for concurrent use, as the Azure SDK's clients are
// (TestConcurrentLoopback queries one from 32 goroutines). The zero
// GraphClient has no client: Governed reports false and Resources panics
// (a nil *armresourcegraph.Client); make one with NewGraphClient.
type GraphClient struct {
	*armresourcegraph.Client
	governed bool
}

// Governed reports whether the client's pipeline carries this package's
// policies (false when armresourcegraph rejected them and the client was
// built plainly).
func (c *GraphClient) Governed() bool { return c != nil && c.governed }

// NewGraphClient builds a Resource Graph client with ClientOptions(base,
// opts...), falling back to base as Build does.
func NewGraphClient(cred azcore.TokenCredential, base *arm.ClientOptions, opts ...Option) (*GraphClient, error) {
	c, governed, err := build(func(o *arm.ClientOptions) (*armresourcegraph.Client, error) {
		return armresourcegraph.NewClient(cred, o)
	}, base, newConfig(opts))
	if err != nil {
		return nil, err
	}
	return &GraphClient{Client: c, governed: governed}, nil
}

// QueryLimits bound the retries QueryResources makes itself, for a page of
// a client that is not governed by this package's policies (a governed
// client retries inside its pipeline, and its final error is final), while
// the azure provider is enabled (a disabled provider's page is fetched
// once). The
// zero QueryLimits is the defaults (5 retries after 2, 4, 8, 16, 30 s). A
// QueryLimits is a plain value, only read by the package: goroutines may
// share one that none of them changes.
type QueryLimits struct {
	// MaxRetries of a throttled page; 0 means 5, a negative value none.
	MaxRetries int
	// Backoff before each retry; nil means 2, 4, 8, 16, 30 s. The last
	// value repeats. A retry waits the longer of the backoff and the
	// server's hint (capped at resilience.MaxPause), and a throttled page
	// also pauses the scope for the hint.
	Backoff []time.Duration
}

var defaultBackoff = []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second}

func (l QueryLimits) resolve() QueryLimits {
	switch {
	case l.MaxRetries == 0:
		l.MaxRetries = 5
	case l.MaxRetries < 0:
		l.MaxRetries = 0
	}
	if len(l.Backoff) == 0 {
		l.Backoff = defaultBackoff
	}
	return l
}

// QueryResources runs a Resource Graph query and follows its skip tokens,
// one page after another, and returns the rows (objectArray format, the
// default it sets when query.Options has no ResultFormat; a table's rows
// otherwise). query is not modified.
//
// Every page is paced in Resource Graph's scope (3 rps, burst 15 by
// default): azure/tenants/<tenant id>/*/resourcegraph when the client's
// bearer token names its tenant, since the quota is a user's of that
// tenant, and azure/*/*/resourcegraph (GraphScope) when it names none:
//
//   - a client whose pipeline is governed (a *GraphClient from
//     NewGraphClient, or any client built with ClientOptions, which the
//     policy reports on the first page) is paced by the policy, one token
//     per HTTP attempt, which also honours the quota headers; its final
//     error was recorded by the policy and is returned as it is. The first
//     page of a client that is not a *GraphClient is paced here as well,
//     as below, on a Guard the policy takes over once the page is sent
//     (its first attempt counted and paced here, its slot and the
//     breaker's lease, a half-open breaker's probe among them, held), so
//     that the page is one call, paced by one token per attempt and
//     recorded once, by the policy, whose outcome is the breaker's
//     verdict when the page is the probe;
//   - any other client is paced here: a breaker check, one token and a
//     bulkhead slot per page; a throttled page halves the scope's rate,
//     pauses it for the hint (Retry-After, or x-ms-user-quota-resets-after)
//     and is retried as QueryLimits say; after the last retry it is
//     recorded as given up; a success with x-ms-user-quota-remaining: 0
//     pauses the scope until the quota resets, and one with Resource
//     Manager's x-ms-ratelimit-remaining-tenant-reads under 25 pauses the
//     tenant-level requests of the query's tenant for a second (the
//     account tenants/<tenant id> of the tenant the request's bearer token
//     names; for a token that names none, the scope's account, which the
//     tenant-level requests whose tokens name none share), and
//     -tenant-writes under 10 the scope, as the policies do on a query's
//     answer. Such a client sets its token where QueryResources cannot see
//     it before a page is sent: a page is paced in the scope of the tenant
//     the client's last page named (the first page of a client in
//     azure/*/*/resourcegraph), and a success whose token names another
//     tenant pauses that tenant's scope. The backoff before a retry
//     ends when the scope's breaker opens with a cooldown that outlasts
//     it (resilience.Guard.Backoff), and the retry is refused then.
//
// While the azure provider is disabled (ratelimit.enabled or
// ratelimit.azure.enabled false) each page is fetched once, directly, as
// the core's Do calls its function: nothing is paced, retried by
// QueryResources (QueryLimits do not apply) or recorded; the client's own
// retry options apply (a governed client's steps aside as ClientOptions
// says).
//
// When a page finally fails, QueryResources returns the rows of the pages
// before it together with the error. When every page was answered but the
// rows are not the query's whole result, it returns them with an
// *IncompleteQueryError whose Check says why:
//
//   - ErrSkipTokenRepeated: a page's skip token is one the query had
//     already followed, or started from; following it would page for ever
//     (the tokens followed are kept while the query runs, one per page);
//   - ErrResultTruncated: a page says its result was truncated
//     (resultTruncated true) and gives no skip token: Resource Graph could
//     not page the query, whose output has no id column, or a take, limit
//     or sample operator disables paging, and it matched more rows than a
//     page holds. A truncated page whose count is its totalRecords, or
//     whose rows are all the query's Options.Top asked for, is no error;
//   - ErrSkipTokenMissing: the last page gives no skip token while the rows
//     of a query read from its start are fewer than the records it says
//     the query matched (totalRecords, or Options.Top when smaller, less
//     Options.Skip): Resource Graph stopped paging early. A query the
//     caller started from a skip token of its own is not checked;
//   - ErrPageUnreadable: a page's data is not the shape of the format
//     asked for (a table for an object array or the other way round, a
//     table without rows, null while its count is not 0, or a value of
//     another type); the rows returned are those of the pages before it;
//   - ErrRowCountMismatched: a page's rows are not as many as its count
//     says; the page's rows are returned with the others.
//
// No call was lost, so nothing is recorded in the ledger: the caller has
// the error.
//
// A query whose Options.AllowPartialScopes is true (a tenant's or a
// management group's) lets Resource Graph answer for only some of the
// scope's subscriptions when they are more than it allows, and its answer
// does not say so: QueryResponse's fields (totalRecords, count,
// resultTruncated, $skipToken, data, facets) count the rows of the
// subscriptions it queried, and no field or header it documents names the
// subscriptions left out. QueryResources cannot see such a partial result
// and returns it with a nil error. Leave the option unset and query the
// subscriptions in batches within Resource Graph's limit, so that every
// answer is whole; a caller that sets it reports the query's coverage as
// unknown itself (no resilience.Loss kind describes an answer that may
// be partial).
//
// A panic of client, or of the governor's log handler as a page's answer
// is recorded, reaches the caller as it was, never recovered; the page it
// panicked in is recorded as lost to it (resilience.LossPanicked) and its
// slot given back, unless a governed pipeline had recorded the page's
// outcome already (a client of the caller's that wraps a client built
// with ClientOptions and panics after its request returned: the page
// stays recorded as the pipeline recorded it).
func QueryResources(ctx context.Context, client GraphQuerier, query armresourcegraph.QueryRequest, opts ...Option) ([]any, error) {
	cfg := newConfig(opts)
	q := query
	var o armresourcegraph.QueryRequestOptions
	if query.Options != nil {
		o = *query.Options
	}
	if o.ResultFormat == nil {
		f := armresourcegraph.ResultFormatObjectArray
		o.ResultFormat = &f
	}
	q.Options = &o

	mark := &graphMark{}
	ctx = context.WithValue(ctx, graphMarkKey{}, mark)
	governed := false
	if g, ok := client.(interface{ Governed() bool }); ok {
		governed = g.Governed()
	}
	var rows []any
	// The skip tokens the query started from and followed: a page that
	// returns one of them again would start a cycle.
	seen := map[string]struct{}{}
	fromStart := o.SkipToken == nil || *o.SkipToken == ""
	if !fromStart {
		seen[*o.SkipToken] = struct{}{}
	}
	for pages := 1; ; pages++ {
		var page armresourcegraph.ClientResourcesResponse
		var err error
		if governed || mark.governed.Load() {
			page, err = client.Resources(ctx, q, nil)
		} else if gov := cfg.governor(); !gov.Enabled(Provider) {
			page, err = fetchOnce(ctx, gov, client, q)
		} else {
			page, err = fetchPaced(ctx, &cfg, client, q, mark)
		}
		if err != nil {
			return rows, err
		}
		read, shape, ok := pageRows(*o.ResultFormat, page.Data, page.Count)
		if !ok {
			return rows, &IncompleteQueryError{Check: ErrPageUnreadable, Pages: pages, Rows: len(rows),
				Count: orMinusOne(page.Count), TotalRecords: orMinusOne(page.TotalRecords), DataShape: shape}
		}
		rows = append(rows, read...)
		if page.Count != nil && *page.Count != int64(len(read)) {
			return rows, &IncompleteQueryError{Check: ErrRowCountMismatched, Pages: pages, Rows: len(rows),
				Count: *page.Count, TotalRecords: orMinusOne(page.TotalRecords), PageRows: len(read)}
		}
		if page.SkipToken == nil || *page.SkipToken == "" {
			if truncated(page.QueryResponse, o.Top, len(rows)) {
				return rows, &IncompleteQueryError{Check: ErrResultTruncated, Pages: pages, Rows: len(rows),
					Count: orMinusOne(page.Count), TotalRecords: orMinusOne(page.TotalRecords)}
			}
			if fromStart && endedEarly(page.QueryResponse, o.Top, o.Skip, len(rows)) {
				return rows, &IncompleteQueryError{Check: ErrSkipTokenMissing, Pages: pages, Rows: len(rows),
					Count: orMinusOne(page.Count), TotalRecords: orMinusOne(page.TotalRecords)}
			}
			return rows, nil
		}
		if _, ok := seen[*page.SkipToken]; ok {
			return rows, &IncompleteQueryError{Check: ErrSkipTokenRepeated, Pages: pages, Rows: len(rows),
				SkipToken: *page.SkipToken}
		}
		seen[*page.SkipToken] = struct{}{}
		o.SkipToken = page.SkipToken
	}
}

// truncated reports whether the last page of a query, r, says the
// query's result was truncated with rows left out that the caller asked
// for: resultTruncated true (Resource Graph could not page the query: its
// output has no id column, or a take, limit or sample operator disables
// paging, and the rows it matched are more than a page holds), unless
// the page's count is its totalRecords (nothing was left out), or the
// caller's $top (top) asked for no more than the rows returned.
func truncated(r armresourcegraph.QueryResponse, top *int32, rows int) bool {
	switch {
	case r.ResultTruncated == nil || *r.ResultTruncated != armresourcegraph.ResultTruncatedTrue:
		return false
	case r.Count != nil && r.TotalRecords != nil && *r.Count >= *r.TotalRecords:
		return false
	case top != nil && int64(rows) >= int64(*top):
		return false
	}
	return true
}

// endedEarly reports whether the last page of a query read from its
// start, r, which gave no skip token, leaves records of the query unread:
// the rows read are fewer than the records it says the query matched
// (totalRecords; top when smaller), less the caller's $skip (skip). A
// page that does not say its totalRecords leaves nothing unread that
// QueryResources can tell.
func endedEarly(r armresourcegraph.QueryResponse, top, skip *int32, rows int) bool {
	if r.TotalRecords == nil {
		return false
	}
	want := *r.TotalRecords
	if skip != nil && *skip > 0 {
		want -= int64(*skip)
	}
	if top != nil && int64(*top) < want {
		want = int64(*top)
	}
	return int64(rows) < want
}

// orMinusOne is *n, or -1 for nil.
func orMinusOne(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}

// graphMark travels in the context of QueryResources' pages; the per-call
// policy sets it, so the helper learns that the client is governed.
type graphMark struct{ governed atomic.Bool }

type graphMarkKey struct{}

func markGoverned(ctx context.Context) {
	if m, ok := ctx.Value(graphMarkKey{}).(*graphMark); ok {
		m.governed.Store(true)
	}
}

// pagedKey is the key of the page fetchPaced sends in the page's context
// (see pagedOf).
type pagedKey struct{}

// paged is the page fetchPaced is sending: its Guard, entered for the
// page's first attempt, the Guard's governor, and its scope. taken is set
// by the per-call policy that takes the Guard over (see take).
type paged struct {
	gov   *resilience.Governor
	gd    *resilience.Guard
	sc    resilience.Scope
	taken atomic.Bool
}

// take reports whether the per-call policy of a pipeline of gov may take
// the page's Guard over: the first request of the page only. A later
// request of the same page (a GraphQuerier of the caller's that calls
// Resources again, its own retry) begins a Guard of its own, nested in
// the page's, which the first request ended.
func (p *paged) take(gov *resilience.Governor) bool {
	return p.gov == gov && p.taken.CompareAndSwap(false, true)
}

// pagedOf returns the page fetchPaced is sending with ctx, if any. A
// governed pipeline found out on that page, whose governor is the page's,
// takes the page's Guard over with the page's first request (see
// perCallPolicy and paged.take): the page is one call, counted once,
// paced by one token, whose outcome the pipeline records; a later request
// of the page begins a Guard of its own, a call of its own.
// A pipeline of another governor (a client built with ClientOptions that
// name a governor other than QueryResources') governs the page in that
// governor, whose slots and breakers are not the page's: the page's
// Guard, left without End, gives its slot back, and, when it had taken
// its breaker's half-open probe, gives that breaker no verdict, so that
// the breaker lets the next probe through only once the probe's lease (a
// cooldown) ends. Give QueryResources the client's governor.
func pagedOf(ctx context.Context) (*paged, bool) {
	p, ok := ctx.Value(pagedKey{}).(*paged)
	return p, ok
}

// fetchOnce fetches one page of a client whose pipeline is not governed,
// for a disabled provider: once, directly, with the client's own retry
// options, as the core's Do calls its function. It begins and ends a
// Guard first, which decides the admission ctx may carry (a scheduler's
// hold on the scope's next task), as the core's calls of a disabled
// provider do; that Guard makes no state and records nothing.
func fetchOnce(ctx context.Context, gov *resilience.Governor, client GraphQuerier,
	q armresourcegraph.QueryRequest) (armresourcegraph.ClientResourcesResponse, error) {
	if gd, err := gov.Begin(ctx, GraphScope()); err == nil {
		gd.End(nil)
	}
	return client.Resources(ctx, q, nil)
}

// fetchPaced fetches one page of a client whose pipeline is not governed,
// on a Guard of its own: per attempt Enter (breaker, deadline, count,
// token, slot), send, After and give the slot back once the answer's
// pauses are set (a success's before After); a throttled page is
// retried as QueryLimits say, after the longer of the backoff and the
// server's hint. Other errors end the page at once. A page whose pipeline
// turns out to be governed is the pipeline's: its per-call policy takes
// this Guard over, entered for the page's first attempt (see pagedOf),
// drives azcore's retries on it and ends it, and the page is returned as
// it is. The Guard's retry policy is the pipeline's (azcoreLoop): the
// bounds of a page of a client that is not governed, throttling only and
// QueryLimits.MaxRetries, are applied here.
func fetchPaced(ctx context.Context, cfg *config, client GraphQuerier, q armresourcegraph.QueryRequest,
	mark *graphMark) (armresourcegraph.ClientResourcesResponse, error) {
	var zero armresourcegraph.ClientResourcesResponse
	gov := cfg.governor()
	limits := cfg.limits.resolve()
	sc := tenantScope(GraphScope(), pacedTenant(client))
	if cfg.graph == nil || cfg.graphGov != gov || cfg.graph.Scope() != sc {
		// The pages of the query are calls of the same scope: resolved
		// once, so that the later pages skip hashing it.
		b, err := gov.Bind(sc)
		if err != nil {
			return zero, err
		}
		cfg.graph, cfg.graphGov = b, gov
	}
	gd, err := cfg.graph.Begin(ctx, azcoreLoop)
	if err != nil {
		return zero, err
	}
	var raw *http.Response
	// A governed pipeline found out on this page takes this Guard over:
	// the context says so. A call nested in the attempt finds the Guard
	// too, and never waits for the slot it holds, nor is refused by the
	// half-open breaker whose probe it took (it borrows the probe).
	sctx := context.WithValue(policy.WithCaptureResponse(ctx, &raw), gov, gd)
	sctx = context.WithValue(sctx, pagedKey{}, &paged{gov: gov, gd: gd, sc: sc})
	for i := 0; ; i++ {
		if err := gd.Enter(ctx); err != nil {
			gd.End(err)
			return zero, err
		}
		raw = nil
		page, kind, err := sendPage(sctx, gov, gd, sc, client, q, mark, &raw)
		if mark.governed.Load() {
			// The pipeline is governed: its per-call policy took this
			// Guard over and ended it, having recorded the page's
			// outcome (a success, a give-up, a cancellation); or, a
			// pipeline of another governor, its own Guard paced this
			// page in that governor, and recorded its outcome there. This
			// Guard is not ended here, which would record the outcome a
			// second time (the answer again, or a cancellation once the
			// context is done): a Guard never ended records nothing more,
			// its slot goes back here, and a half-open probe it took of
			// this governor's breaker gets no verdict (see pagedOf).
			gd.Release()
			return page, err
		}
		if err == nil {
			gd.End(nil)
			return page, nil
		}
		if kind != resilience.Throttled || i >= limits.MaxRetries {
			// A fatal answer or a local error, which nothing here would
			// change (the Guard's Retry would let an SDK retry it); a
			// transient one, which a page of a client that is not
			// governed does not retry (its client's own retry options
			// may have); or the last retry's throttle: the page ends,
			// recorded as the client's loop giving up.
			gd.End(err)
			return zero, err
		}
		delay, rerr := gd.Retry(limits.Backoff[min(i, len(limits.Backoff)-1)])
		if rerr == nil {
			// The backoff ends early when the scope's breaker opens
			// meanwhile and would still refuse the retry when it ended
			// (a dead scope): the next Enter refuses the retry then, as
			// it would have after the backoff.
			_, rerr = gd.Backoff(ctx, delay)
		}
		if rerr != nil {
			gd.End(err)
			return zero, rerr
		}
	}
}

// sendPage sends one page and remembers the tenant its bearer token named
// (the request of the response *raw captured) as the client's
// (pacedTenant). Unless the client's pipeline turned out to be governed
// (fetchPaced gives that page's slot back), it learns from the answer and
// gives the slot back: a success's spent quota (Resource Graph's, or
// Resource Manager's tenant buckets', read as the policies read them)
// pauses the scope, or its account, before the slot goes back, so that a
// page waiting for it sees the pause (the scope of the tenant the token
// named: gd's, sc, unless the client's token named another tenant than
// the one remembered, see pauseTenant), and the slot goes back
// before After, which records the success at once; a failure's slot goes
// back once After recorded it (kind is its kind), so that a page waiting
// for the slot sees the pause a throttle's hint set. When the client
// panics, or what recording the answer calls (the governor's log
// handler), the page is lost to the panic, which goes on: gd ends it,
// unless the client's pipeline turned out to be governed (its own Guard
// ended the page), and gives the slot back.
func sendPage(ctx context.Context, gov *resilience.Governor, gd *resilience.Guard, sc resilience.Scope, client GraphQuerier,
	q armresourcegraph.QueryRequest, mark *graphMark, raw **http.Response) (page armresourcegraph.ClientResourcesResponse, kind resilience.Kind, err error) {
	returned := false
	defer func() {
		switch {
		case returned:
		case !mark.governed.Load():
			gd.EndPanicked()
		default:
			gd.Release()
		}
	}()
	page, err = client.Resources(ctx, q, nil)
	account := sc.Account
	if r := *raw; r != nil && r.Request != nil {
		account = tenantAccount(r.Request.Header.Get("Authorization"))
		rememberTenant(client, account)
	}
	switch {
	case mark.governed.Load():
	case err == nil:
		if r := *raw; r != nil {
			// As the policies read a query's answer (a query is a
			// tenant-level request): Resource Manager's tenant headers,
			// then Resource Graph's quota.
			p := armQuotaLow(r.Header, true)
			d, reset := quotaReset(r.Header)
			if account == sc.Account {
				pauseFor(gd, p)
				if reset {
					gd.Pause(d)
				}
			} else if p != pauseNothing || reset {
				pauseTenant(ctx, gov, account, p, d, reset)
			}
		}
		gd.Release()
		gd.After(nil)
	default:
		kind = gd.After(err)
		gd.Release()
	}
	returned = true
	return page, kind, err
}

// maxPacedTenants bounds pacedTenants, and so the clients it keeps
// alive: past it, a client it holds, chosen at random, makes room for a
// new one.
const maxPacedTenants = 256

// pacedTenants maps a client QueryResources paces (a pointer) to the
// tenant account its bearer token named on its last page (tenantAccount's,
// "" for none). A client that is not governed sends its token where
// QueryResources cannot see it before the page is sent: the tenant its
// last page named is taken for its next page's. The map holds the client
// itself, so that no other client made where a dropped one was is taken
// for it; it keeps at most maxPacedTenants clients alive.
var pacedTenants cowmap.Map[GraphQuerier, string]

// remembered reports whether pacedTenants may hold client: a pointer,
// which is comparable (a map key of another kind might not be, and would
// panic).
func remembered(client GraphQuerier) bool {
	return reflect.ValueOf(client).Kind() == reflect.Pointer
}

// pacedTenant returns the tenant account client's last page named, or ""
// when none did or the client has no page yet.
func pacedTenant(client GraphQuerier) string {
	if !remembered(client) {
		return ""
	}
	a, _ := pacedTenants.Load(client)
	return a
}

// rememberTenant records the tenant account client's page named.
func rememberTenant(client GraphQuerier, account string) {
	if !remembered(client) {
		return
	}
	if a, ok := pacedTenants.Load(client); ok && a == account {
		return
	}
	if pacedTenants.Len() >= maxPacedTenants {
		// Full: one client, chosen at random (a map's order), makes room,
		// so that the others keep their tenants.
		for k := range pacedTenants.Snapshot() {
			pacedTenants.Delete(k)
			break
		}
	}
	pacedTenants.Store(client, account)
}

// pauseTenant sets the pauses a query's success asks for (p, and the
// quota's reset after d when reset) in the Resource Graph scope of the
// tenant its token named (tenantScope's, GraphScope for account ""), when
// it was paced in another tenant's, the one its client's last page named:
// through a Guard of that scope begun with ctx for the pauses alone, which
// sends nothing and records nothing else.
func pauseTenant(ctx context.Context, gov *resilience.Governor, account string, p armPause, d time.Duration, reset bool) {
	tg, err := gov.Begin(ctx, tenantScope(GraphScope(), account))
	if err != nil {
		return
	}
	pauseFor(tg, p)
	if reset {
		tg.Pause(d)
	}
	tg.End(nil)
}

// pageRows returns the rows of a page's data in the format the query
// asked for: an objectArray page's data is a []any of rows; a table
// page's, {"columns": ..., "rows": [...]}. ok is false when the data is
// not that shape (another format's, a table without rows, null, or a
// value of another type), and shape then says what it was; a page with
// no data that says its count is 0 has no rows and is read. A format
// other than these two accepts either shape.
func pageRows(format armresourcegraph.ResultFormat, data any, count *int64) (rows []any, shape string, ok bool) {
	switch d := data.(type) {
	case nil:
		if count != nil && *count == 0 {
			return nil, "", true
		}
		return nil, "null", false
	case []any:
		if format == armresourcegraph.ResultFormatTable {
			break
		}
		return d, "", true
	case map[string]any:
		if format == armresourcegraph.ResultFormatObjectArray {
			break
		}
		if r, ok := d["rows"].([]any); ok {
			return r, "", true
		}
		return nil, "a table without rows", false
	}
	return nil, fmt.Sprintf("%T", data), false
}
