package cloudgazure

import (
	"errors"
	"fmt"
)

// The checks of QueryResources that find a query's result incomplete
// although Resource Graph answered every page it was asked for; an
// *IncompleteQueryError unwraps to one of them, for errors.Is.
var (
	// ErrSkipTokenRepeated: a page's skip token is one the query had
	// already followed (or the one the caller's query started from), so
	// that following it would fetch the same pages again, for ever.
	ErrSkipTokenRepeated = errors.New("cloudgazure: Resource Graph returned a skip token it had returned before")
	// ErrResultTruncated: a page said its result was truncated
	// (resultTruncated true) and gave no skip token to fetch the rest.
	ErrResultTruncated = errors.New("cloudgazure: Resource Graph truncated the result and gave no skip token")
	// ErrSkipTokenMissing: the last page gave no skip token (and did not
	// say its result was truncated) while the rows read of a query read
	// from its start are fewer than the records the page said the query
	// matched (totalRecords, or the query's Options.Top when smaller,
	// less its Options.Skip).
	ErrSkipTokenMissing = errors.New("cloudgazure: Resource Graph gave no skip token with records of the query left to read")
	// ErrPageUnreadable: a page's data is not the shape of the format the
	// query asked for (a table for an object array, or the other way
	// round, a table without rows, null, or a value of another type), so
	// that none of its rows could be read.
	ErrPageUnreadable = errors.New("cloudgazure: Resource Graph answered a page whose rows could not be read")
	// ErrRowCountMismatched: a page's rows are not as many as its count
	// says (fewer: rows left out; more: a page that contradicts itself).
	ErrRowCountMismatched = errors.New("cloudgazure: Resource Graph answered a page whose rows are not as many as its count")
)

// IncompleteQueryError is the error QueryResources returns, with the rows
// it has, when Resource Graph answered every page but the rows are not
// the query's whole result. Check is ErrSkipTokenRepeated,
// ErrResultTruncated, ErrSkipTokenMissing, ErrPageUnreadable or
// ErrRowCountMismatched, the
// check that found it: errors.Is finds it, and errors.As the
// *IncompleteQueryError.
//
// Its methods only read it: any number of goroutines may use one at once
// while none changes it. The zero IncompleteQueryError, which
// QueryResources never returns, names no check (errors.Is finds none of
// the five in it) and reads "cloudgazure: Resource Graph query
// incomplete: 0 rows".
type IncompleteQueryError struct {
	// Check is ErrSkipTokenRepeated, ErrResultTruncated,
	// ErrSkipTokenMissing, ErrPageUnreadable or ErrRowCountMismatched.
	Check error
	// Pages is the number of pages answered, the one the check failed on
	// included.
	Pages int
	// Rows is the number of rows QueryResources returns with the error:
	// those of the pages before the one the check failed on, and that
	// page's own unless they could not be read (ErrPageUnreadable).
	Rows int
	// SkipToken is the repeated skip token (ErrSkipTokenRepeated); ""
	// otherwise.
	SkipToken string
	// Count and TotalRecords are what the page the check failed on said
	// (ErrResultTruncated, ErrSkipTokenMissing, ErrPageUnreadable,
	// ErrRowCountMismatched): its
	// own records, and the records the query matched, -1 when it did not
	// say; zero otherwise.
	Count, TotalRecords int64
	// PageRows is the number of rows read from the page whose count did
	// not match them (ErrRowCountMismatched); zero otherwise.
	PageRows int
	// DataShape says what the unreadable page's data was (ErrPageUnreadable):
	// "null", "a table without rows", or its Go type as fmt's %T prints
	// it; "" otherwise.
	DataShape string
}

// Error says which check failed and where: Check's message, then the
// repeated skip token and its page, the truncated page's count and
// totalRecords, the rows read of the records the last page said the query
// matched, what the unreadable page's data was, or the mismatched page's
// count and the rows read of it, then the rows returned. The zero
// IncompleteQueryError reads "cloudgazure: Resource Graph query
// incomplete: 0 rows".
func (e *IncompleteQueryError) Error() string {
	switch e.Check {
	case ErrSkipTokenRepeated:
		return fmt.Sprintf("%v (%q, on page %d): %d rows", e.Check, e.SkipToken, e.Pages, e.Rows)
	case ErrResultTruncated:
		return fmt.Sprintf("%v (page %d: %d of %d records): %d rows", e.Check, e.Pages, e.Count, e.TotalRecords, e.Rows)
	case ErrSkipTokenMissing:
		return fmt.Sprintf("%v (page %d: %d of %d records read): %d rows", e.Check, e.Pages, e.Rows, e.TotalRecords, e.Rows)
	case ErrPageUnreadable:
		return fmt.Sprintf("%v (page %d: data %s): %d rows", e.Check, e.Pages, e.DataShape, e.Rows)
	case ErrRowCountMismatched:
		return fmt.Sprintf("%v (page %d: count %d, %d rows read): %d rows", e.Check, e.Pages, e.Count, e.PageRows, e.Rows)
	case nil:
		return fmt.Sprintf("cloudgazure: Resource Graph query incomplete: %d rows", e.Rows)
	}
	return fmt.Sprintf("%v: %d rows", e.Check, e.Rows)
}

// Unwrap returns Check.
func (e *IncompleteQueryError) Unwrap() error { return e.Check }
