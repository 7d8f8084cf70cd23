package test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// graphClients are the clients QueryResources pages, each made in e: a
// *GraphClient, and a plain client it paces itself (with the test's
// governor).
func graphClients(e *env) []struct {
	name   string
	client cloudgazure.GraphQuerier
	opts   []cloudgazure.Option
} {
	return []struct {
		name   string
		client cloudgazure.GraphQuerier
		opts   []cloudgazure.Option
	}{
		{"governed", e.graph(), nil},
		{"ungoverned", e.plainGraph(policy.RetryOptions{MaxRetries: -1}), e.opts()},
	}
}

// A server whose skip tokens go round in a cycle of two (p1, p2, p1, ...)
// ends the query at the first token it returns a second time, with the
// rows of the pages before and an *IncompleteQueryError saying which
// token repeated: three pages asked, not a query paging (and paced) for
// ever. The test's minute bounds the query the check would not.
func TestQueryResourcesStopsOnACycleOfSkipTokens(t *testing.T) {
	for _, c := range []string{"governed", "ungoverned"} {
		t.Run(c, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{})
				e.srv.graphNext = map[string]string{"": "p1", "p1": "p2", "p2": "p1"}
				var client cloudgazure.GraphQuerier
				var opts []cloudgazure.Option
				for _, gc := range graphClients(e) {
					if gc.name == c {
						client, opts = gc.client, gc.opts
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				ctx, ledger := resilience.WithLedger(ctx, "azure_graph")
				rows, err := cloudgazure.QueryResources(ctx, client, query, opts...)
				pages := e.srv.count(routeGraph)
				var ie *cloudgazure.IncompleteQueryError
				if pages != 3 || !errors.Is(err, cloudgazure.ErrSkipTokenRepeated) || !errors.As(err, &ie) {
					t.Fatalf("skip tokens p1, p2, p1: %d pages asked in a minute, %d rows, error %v; "+
						"want 3 pages, and an *IncompleteQueryError (ErrSkipTokenRepeated)", pages, len(rows), err)
				}
				if got := fmt.Sprint(rowIDs(rows)); got != "[/r/0-0 /r/0-1 /r/1-0 /r/1-1 /r/2-0 /r/2-1]" {
					t.Fatalf("rows %s, want the three pages'", got)
				}
				if ie.SkipToken != "p1" || ie.Pages != 3 || ie.Rows != 6 {
					t.Fatalf("%+v: want token p1 repeated on page 3, 6 rows", *ie)
				}
				if ledger.Lost() != 0 {
					t.Fatalf("ledger %q: the caller has the error, no call was lost", ledger.Describe())
				}
			})
		})
	}
}

// A page that says its result was truncated (resultTruncated true: a
// query Resource Graph cannot page, whose output has no id column) and
// gives no skip token ends the query with its rows and an
// *IncompleteQueryError (ErrResultTruncated), not the rows alone, as if
// they were all the query matched. A truncation the caller asked for
// ($top 2, and 2 rows came back), or a page whose count is its
// totalRecords (nothing left out), is no error.
func TestQueryResourcesReportsATruncatedResult(t *testing.T) {
	for _, c := range []string{"governed", "ungoverned"} {
		t.Run(c, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{})
				e.srv.graphPages = 1
				e.srv.graphTruncated = true
				e.srv.graphTotal = 1000
				var client cloudgazure.GraphQuerier
				var opts []cloudgazure.Option
				for _, gc := range graphClients(e) {
					if gc.name == c {
						client, opts = gc.client, gc.opts
					}
				}
				rows, err := cloudgazure.QueryResources(context.Background(), client, query, opts...)
				var ie *cloudgazure.IncompleteQueryError
				if !errors.Is(err, cloudgazure.ErrResultTruncated) || !errors.As(err, &ie) || len(rows) != 2 {
					t.Fatalf("a page of 2 of 1000 records, resultTruncated true, no skip token: %d rows, error %v; "+
						"want 2 rows and an *IncompleteQueryError (ErrResultTruncated)", len(rows), err)
				}
				if ie.Count != 2 || ie.TotalRecords != 1000 || ie.Pages != 1 || ie.Rows != 2 {
					t.Fatalf("%+v: want page 1, 2 of 1000 records, 2 rows", *ie)
				}

				top := query
				top.Options = &armresourcegraph.QueryRequestOptions{Top: ptr(int32(2))}
				rows, err = cloudgazure.QueryResources(context.Background(), client, top, opts...)
				if err != nil || len(rows) != 2 {
					t.Fatalf("$top 2, 2 rows of 1000 truncated: %d rows, %v; want the 2 rows asked for, no error", len(rows), err)
				}

				e.srv.graphTotal = 2
				rows, err = cloudgazure.QueryResources(context.Background(), client, query, opts...)
				if err != nil || len(rows) != 2 {
					t.Fatalf("resultTruncated true, count 2 of 2 records: %d rows, %v; want 2 rows, no error", len(rows), err)
				}
			})
		})
	}
}

// A page Resource Graph answered whose rows QueryResources cannot read
// (its data not the shape of the format the query asked for: a table for
// an object array, a table without rows, an object array for a table,
// null, a string), or whose rows are not as many as its count says, ends
// the query with the rows read so far and an *IncompleteQueryError
// (ErrPageUnreadable, ErrRowCountMismatched) naming the page: not fewer
// rows with a nil error, as if they were all the query matched. Nothing
// is lost to the ledger: the caller has the error. A table asked for and
// answered, or an empty result (its data empty, or null with a count of
// 0), is no error.
func TestQueryResourcesReportsAPageItCouldNotRead(t *testing.T) {
	table := armresourcegraph.ResultFormatTable
	onPage2 := func(edit func(page map[string]any)) func(string, map[string]any) {
		return func(skip string, page map[string]any) {
			if skip == "p1" {
				edit(page)
			}
		}
	}
	setData := func(v any) func(string, map[string]any) {
		return onPage2(func(page map[string]any) { page["data"] = v })
	}
	cases := []struct {
		name   string
		format *armresourcegraph.ResultFormat
		pages  int
		edit   func(skip string, page map[string]any)
		check  error // nil: no error
		rows   int
		data   string // IncompleteQueryError.DataShape
		count  int64
		read   int // IncompleteQueryError.PageRows
	}{
		{name: "object array asked, a table answered", pages: 3, check: cloudgazure.ErrPageUnreadable, rows: 2,
			data: "map[string]interface {}",
			edit: setData(map[string]any{"columns": []any{map[string]any{"name": "id"}}, "rows": []any{[]any{"/r/1-0"}, []any{"/r/1-1"}}})},
		{name: "table without rows", format: &table, pages: 3, check: cloudgazure.ErrPageUnreadable, rows: 2,
			data: "a table without rows",
			edit: onPage2(func(page map[string]any) { delete(page["data"].(map[string]any), "rows") })},
		{name: "table asked, an object array answered", format: &table, pages: 3, check: cloudgazure.ErrPageUnreadable, rows: 2,
			data: "[]interface {}", edit: setData([]any{map[string]any{"id": "/r/1-0"}, map[string]any{"id": "/r/1-1"}})},
		{name: "data null", pages: 3, check: cloudgazure.ErrPageUnreadable, rows: 2, data: "null", edit: setData(nil)},
		{name: "data a string", pages: 3, check: cloudgazure.ErrPageUnreadable, rows: 2, data: "string", edit: setData("rows")},
		{name: "count 2, one row", pages: 3, check: cloudgazure.ErrRowCountMismatched, rows: 3, count: 2, read: 1,
			edit: setData([]any{map[string]any{"id": "/r/1-0"}})},
		{name: "count 2, three rows", pages: 3, check: cloudgazure.ErrRowCountMismatched, rows: 5, count: 2, read: 3,
			edit: setData([]any{map[string]any{"id": "/r/1-0"}, map[string]any{"id": "/r/1-1"}, map[string]any{"id": "/r/1-2"}})},
		{name: "table asked and answered", format: &table, pages: 3, rows: 6},
		{name: "empty result", pages: 1, rows: 0, edit: func(_ string, page map[string]any) {
			page["data"], page["count"], page["totalRecords"] = []any{}, 0, 0
		}},
		{name: "empty result, data null", pages: 1, rows: 0, edit: func(_ string, page map[string]any) {
			page["data"], page["count"], page["totalRecords"] = nil, 0, 0
		}},
	}
	for _, c := range cases {
		for _, client := range []string{"governed", "ungoverned"} {
			t.Run(c.name+"/"+client, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := memEnv(t, resilience.Config{})
					e.srv.graphPages = c.pages
					e.srv.graphEdit = c.edit
					var gq cloudgazure.GraphQuerier
					var opts []cloudgazure.Option
					for _, gc := range graphClients(e) {
						if gc.name == client {
							gq, opts = gc.client, gc.opts
						}
					}
					q := query
					q.Options = &armresourcegraph.QueryRequestOptions{ResultFormat: c.format}
					ctx, ledger := resilience.WithLedger(context.Background(), "azure_graph")
					rows, err := cloudgazure.QueryResources(ctx, gq, q, opts...)
					if c.check == nil {
						if err != nil || len(rows) != c.rows {
							t.Fatalf("%d rows, error %v; want %d rows, no error", len(rows), err, c.rows)
						}
						return
					}
					var ie *cloudgazure.IncompleteQueryError
					if !errors.Is(err, c.check) || !errors.As(err, &ie) || len(rows) != c.rows {
						t.Fatalf("page 2 answered 200 (%s): %d rows, error %v; want %d rows and an *IncompleteQueryError (%v)",
							c.name, len(rows), err, c.rows, c.check)
					}
					if ie.Pages != 2 || ie.Rows != c.rows || ie.DataShape != c.data || ie.PageRows != c.read || (c.count != 0 && ie.Count != c.count) {
						t.Fatalf("%+v: want page 2, %d rows, data %q, count %d, %d rows read of the page", *ie, c.rows, c.data, c.count, c.read)
					}
					if !strings.Contains(err.Error(), "page 2") {
						t.Fatalf("error %q, want it to name page 2", err)
					}
					if n := e.srv.count(routeGraph); n != 2 {
						t.Fatalf("%d pages asked, want the query to end at page 2", n)
					}
					if ledger.Lost() != 0 {
						t.Fatalf("ledger %q: the caller has the error, no call was lost", ledger.Describe())
					}
				})
			})
		}
	}
}

// A page that gives no skip token, and does not say its result was
// truncated, while the rows read of a query read from its start are
// fewer than the records it says the query matched (totalRecords; the
// query's $top when smaller, less its $skip), ends the query with the
// rows and an *IncompleteQueryError (ErrSkipTokenMissing), not the rows
// alone as if they were all: Resource Graph stopped paging early. A query
// whose $top, or $skip, accounts for the rows, or one the caller started
// from a skip token of its own (the rows before it are not QueryResources'
// to count), is no error.
func TestQueryResourcesReportsPagingEndedEarly(t *testing.T) {
	cases := []struct {
		name    string
		options armresourcegraph.QueryRequestOptions
		rows    int
		missing bool
	}{
		{name: "no skip token on page 2 of 3", rows: 4, missing: true},
		{name: "$top 4", options: armresourcegraph.QueryRequestOptions{Top: ptr(int32(4))}, rows: 4},
		{name: "$top 5", options: armresourcegraph.QueryRequestOptions{Top: ptr(int32(5))}, rows: 4, missing: true},
		{name: "$skip 2", options: armresourcegraph.QueryRequestOptions{Skip: ptr(int32(2))}, rows: 4},
		{name: "started from the caller's skip token", options: armresourcegraph.QueryRequestOptions{SkipToken: ptr("p1")}, rows: 2},
	}
	for _, c := range cases {
		for _, client := range []string{"governed", "ungoverned"} {
			t.Run(c.name+"/"+client, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := memEnv(t, resilience.Config{})
					// Three pages of two records (totalRecords 6), but
					// page 2 (p1) gives no skip token.
					e.srv.graphPages = 3
					e.srv.graphNext = map[string]string{"": "p1"}
					var gq cloudgazure.GraphQuerier
					var opts []cloudgazure.Option
					for _, gc := range graphClients(e) {
						if gc.name == client {
							gq, opts = gc.client, gc.opts
						}
					}
					q := query
					o := c.options
					q.Options = &o
					ctx, ledger := resilience.WithLedger(context.Background(), "azure_graph")
					rows, err := cloudgazure.QueryResources(ctx, gq, q, opts...)
					if !c.missing {
						if err != nil || len(rows) != c.rows {
							t.Fatalf("%d rows, error %v; want %d rows, no error", len(rows), err, c.rows)
						}
						return
					}
					var ie *cloudgazure.IncompleteQueryError
					if !errors.Is(err, cloudgazure.ErrSkipTokenMissing) || !errors.As(err, &ie) || len(rows) != c.rows {
						t.Fatalf("page 2 of 3 (6 records) without a skip token, %s: %d rows, error %v; "+
							"want %d rows and an *IncompleteQueryError (ErrSkipTokenMissing)", c.name, len(rows), err, c.rows)
					}
					if ie.Pages != 2 || ie.Rows != c.rows || ie.Count != 2 || ie.TotalRecords != 6 || !strings.Contains(err.Error(), "page 2") {
						t.Fatalf("%+v (%q): want page 2, its count 2 of 6 records, %d rows", *ie, err, c.rows)
					}
					if ledger.Lost() != 0 {
						t.Fatalf("ledger %q: the caller has the error, no call was lost", ledger.Describe())
					}
				})
			})
		}
	}
}
