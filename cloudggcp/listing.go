package cloudggcp

import (
	"context"
	"errors"
	"iter"

	asset "cloud.google.com/go/asset/apiv1"
	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
)

// Listing is one paced Cloud Asset listing:
//
//  1. before the first page: the breaker check (*resilience.CircuitOpenError,
//     nothing sent), one counted call and one token of
//     gcp/<parent>/*/cloudasset/<Rpc>, then one bulkhead slot of the project or
//     organization, held for the whole listing;
//  2. every page fetch runs with the GCP retry (see Retry): each attempt's
//     answer reported, each page's first two retries free and the rest paid
//     from the retry budget, at most max_retries consecutive retries per
//     page, each page with its own deadline; the pause before a retry ends
//     when the scope's breaker opens meanwhile and would still refuse the
//     retry when it ended, and the retry is refused then
//     (*resilience.CircuitOpenError); after a whole pause the retry asks
//     the breaker too (refused when open; with breaker_wait, held until
//     its verdict);
//  3. before each further page fetch: one counted call and one token, and no
//     second breaker check, so a listing that is a half-open breaker's probe
//     is not rejected by its own breaker on page 2. No token is taken once
//     the last page has arrived (the final iterator.Done costs nothing).
//
// Pages are fetched lazily, as Next needs them. The listing wraps the SDK
// iterator's page fetch, so every request, empty pages included, takes its
// token just before it is sent. Every page that arrives is a success
// (breaker reset, additive recovery, a refund to the retry budget); the
// slot is released when the last one arrives. When the listing fails,
// throttling is recorded as a give-up and throttling or transient errors
// count toward the breaker.
//
// When the gcp provider is disabled, each page is fetched once, directly,
// with the client's own retry settings: nothing paced, retried by the GCP
// retry, or recorded.
//
// A panic of the client while it fetches a page reaches the caller as it
// was, never recovered: the listing ends, its slot given back, recorded as
// lost to the panic (resilience.LossPanicked).
//
// The listing holds a slot of its account while it runs: give it a gRPC
// client (asset.NewClient). A client made with asset.NewRESTClient and
// RESTClientOption sends its paged requests without the listing's context
// (asset v1.30.1), so its Transport's requests wait for a slot of the
// account the listing holds, and, with one slot, never get it.
//
// A Listing is not safe for concurrent use: it is used by one goroutine at
// a time, like the SDK iterator. Call Close when abandoning it early (All
// and Collect do). The zero Listing is not usable (Next, All and Collect
// panic on it); make one with ListAssets, SearchAllResources or
// SearchAllIamPolicies.
type Listing[T any] struct {
	ctx   context.Context
	gov   *resilience.Governor
	st    callState // st.gd is made when the first page is fetched
	opt   stateOption
	it    pageIterator[T]
	fetch func(pageSize int, pageToken string) ([]T, string, error) // the SDK's

	pages int    // pages fetched
	items int    // items returned by Next
	token string // the token of the page being fetched
	err   error  // the error the listing ended with
	ended bool
}

// ErrClosed is returned by Next on a listing closed before its end.
var ErrClosed = errors.New("cloudggcp: listing closed")

// pageIterator is what the GAPIC iterators have in common.
type pageIterator[T any] interface {
	Next() (T, error)
	PageInfo() *iterator.PageInfo
}

// newListing builds a listing: start makes the SDK iterator with the
// listing's call options and returns it with its page fetch, which the
// listing wraps.
func newListing[T any](ctx context.Context, scope resilience.Scope, opts []Option,
	start func(opts ...gax.CallOption) (pageIterator[T], *func(int, string) ([]T, string, error))) *Listing[T] {
	cfg := newConfig(opts)
	gov := cfg.governor()
	p := gov.Policy(scope.Provider)
	l := &Listing[T]{ctx: ctx, gov: gov}
	l.st = callState{ctx: ctx, scope: scope, gov: gov, maxBackoff: p.MaxBackoff, paced: true}
	l.opt.init(&l.st, p.Deadline)
	it, fetch := start(&l.opt)
	l.it, l.fetch = it, *fetch
	*fetch = l.fetchPage
	return l
}

// ListAssets returns the paced listing of client.ListAssets(ctx, req),
// in scope gcp/<req.Parent>/*/cloudasset/ListAssets.
func ListAssets(ctx context.Context, client *asset.Client, req *assetpb.ListAssetsRequest, opts ...Option) *Listing[*assetpb.Asset] {
	return newListing(ctx, Scope(req.GetParent(), RPCListAssets), opts,
		func(o ...gax.CallOption) (pageIterator[*assetpb.Asset], *func(int, string) ([]*assetpb.Asset, string, error)) {
			it := client.ListAssets(ctx, req, o...)
			return it, &it.InternalFetch
		})
}

// SearchAllResources returns the paced listing of
// client.SearchAllResources(ctx, req), in scope
// gcp/<req.Scope>/*/cloudasset/SearchAllResources.
func SearchAllResources(ctx context.Context, client *asset.Client, req *assetpb.SearchAllResourcesRequest, opts ...Option) *Listing[*assetpb.ResourceSearchResult] {
	return newListing(ctx, Scope(req.GetScope(), RPCSearchAllResources), opts,
		func(o ...gax.CallOption) (pageIterator[*assetpb.ResourceSearchResult], *func(int, string) ([]*assetpb.ResourceSearchResult, string, error)) {
			it := client.SearchAllResources(ctx, req, o...)
			return it, &it.InternalFetch
		})
}

// SearchAllIamPolicies returns the paced listing of
// client.SearchAllIamPolicies(ctx, req), in scope
// gcp/<req.Scope>/*/cloudasset/SearchAllIamPolicies.
func SearchAllIamPolicies(ctx context.Context, client *asset.Client, req *assetpb.SearchAllIamPoliciesRequest, opts ...Option) *Listing[*assetpb.IamPolicySearchResult] {
	return newListing(ctx, Scope(req.GetScope(), RPCSearchAllIamPolicies), opts,
		func(o ...gax.CallOption) (pageIterator[*assetpb.IamPolicySearchResult], *func(int, string) ([]*assetpb.IamPolicySearchResult, string, error)) {
			it := client.SearchAllIamPolicies(ctx, req, o...)
			return it, &it.InternalFetch
		})
}

// fetchPage paces one page fetch of the SDK iterator.
func (l *Listing[T]) fetchPage(pageSize int, pageToken string) ([]T, string, error) {
	if l.ended {
		if l.err == nil {
			l.err = ErrClosed // closed before its end: a truncated listing
		}
		return nil, "", ErrClosed
	}
	l.token = pageToken // the page to resume at if this fetch fails, sent or not
	if l.st.gd == nil && !l.st.off && !l.gov.Enabled(l.st.scope.Provider) {
		// A disabled provider: the listing's pages are fetched once each,
		// directly, with the client's own settings, as the core's Do
		// calls its function. Begin decides the admission the listing's
		// context may carry (a scheduler's hold).
		l.st.off = true
		if gd, err := l.gov.Begin(l.ctx, l.st.scope); err == nil {
			gd.End(nil)
		}
	}
	if l.st.off {
		items, next, err := l.fetch(pageSize, pageToken)
		if err != nil {
			l.err, l.ended = err, true
			return nil, "", err
		}
		l.pages++
		l.ended = next == ""
		return items, next, nil
	}
	if l.st.gd == nil {
		// The listing's call starts with its first page.
		gd, err := l.gov.Begin(l.ctx, l.st.scope)
		if err != nil {
			return nil, "", l.fail(err)
		}
		l.st.gd = gd
		l.st.nested.Attach(gd)
	}
	// The first page: breaker, count, token, slot (a rejected listing is
	// counted as rejected, not as a call). A further page, after the
	// success of the one before: count and token.
	if err := l.st.gd.Enter(l.ctx); err != nil {
		return nil, "", l.fail(err)
	}
	l.st.reset()
	items, next, err := l.fetchGuarded(pageSize, pageToken)
	if err != nil {
		return nil, "", l.fail(l.st.outcome(err))
	}
	l.pages++
	l.st.gd.After(nil) // the next page gets its own free retries and deadline
	if next == "" {
		l.ended = true
		l.st.gd.End(nil)
	}
	return items, next, nil
}

// fetchGuarded fetches a page the guard entered. When the client panics,
// the listing ends, lost to the panic (its slot given back), and the
// panic goes on.
func (l *Listing[T]) fetchGuarded(pageSize int, pageToken string) ([]T, string, error) {
	returned := false
	defer func() {
		if !returned {
			l.ended = true
			l.st.gd.EndPanicked()
		}
	}()
	items, next, err := l.fetch(pageSize, pageToken)
	returned = true
	return items, next, err
}

// fail ends the listing with err; the guard records it unless the retry
// or the breaker already did.
func (l *Listing[T]) fail(err error) error {
	l.err, l.ended = err, true
	if l.st.gd != nil {
		l.st.gd.End(err)
	}
	return err
}

// Next returns the next item, iterator.Done after the last one, or the
// error the listing ended with (a *resilience.CircuitOpenError before
// anything was sent, or wrapping the provider's error when the breaker
// opened while a page's retry waited, a
// *resilience.RetryBudgetExhaustedError when the retry budget ran out or
// max_retries consecutive retries failed, wrapping then a
// *RetriesExhaustedError, a *RetryStoppedError when the deadline stopped
// it, a *resilience.WouldWaitError when a page would have waited longer
// than the listing's context allows (resilience.WithMaxWait), or the
// provider's error). Items of the pages that arrived before an error are
// all returned first.
func (l *Listing[T]) Next() (T, error) {
	v, err := l.it.Next()
	if err == nil {
		l.items++
	}
	return v, err
}

// All returns the items as an iterator; it stops after yielding an error
// (iterator.Done is not yielded) and closes the listing.
func (l *Listing[T]) All() iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		defer l.Close()
		for {
			v, err := l.Next()
			if err == iterator.Done {
				return
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// Collect drains the listing and returns every item that came back, with
// the error it ended with (nil when it reached the end). A listing that
// failed on page 40 returns pages 1-39 and the error.
func (l *Listing[T]) Collect() ([]T, error) {
	defer l.Close()
	var out []T
	for {
		v, err := l.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
}

// Close releases the listing's bulkhead slot if it still holds one. It is
// safe to call more than once; the listing must not be used after it.
func (l *Listing[T]) Close() {
	l.ended = true
	if l.st.gd != nil {
		l.st.gd.End(nil)
	}
}

// Scope returns the listing's scope.
func (l *Listing[T]) Scope() resilience.Scope { return l.st.scope }

// Pages returns the number of pages that arrived.
func (l *Listing[T]) Pages() int { return l.pages }

// Err returns the error the listing ended with, or nil.
func (l *Listing[T]) Err() error { return l.err }

// ResumeToken returns, after the listing failed, the page token of the page
// that failed, whether it was sent or refused before it was (the request's
// own PageToken for the first page, "" unless it resumed another listing):
// a new listing whose request carries it as PageToken resumes there. It is
// "" for a listing that did not fail.
func (l *Listing[T]) ResumeToken() string {
	if l.err == nil {
		return ""
	}
	return l.token
}

// Coverage returns the coverage record of the listing so far: SUCCESS,
// PARTIAL when it failed after items came back, FAILED when nothing did.
func (l *Listing[T]) Coverage() Coverage {
	return NewCoverage(l.st.scope.String(), l.items, l.err)
}
