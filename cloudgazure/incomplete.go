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
)

// IncompleteQueryError is the error QueryResources returns, with the rows
// it has, when Resource Graph answered every page but the rows are not
// the query's whole result. Check is ErrSkipTokenRepeated or
// ErrResultTruncated, the check that found it: errors.Is finds it, and
// errors.As the *IncompleteQueryError.
//
// Its methods only read it: any number of goroutines may use one at once
// while none changes it.
type IncompleteQueryError struct {
	// Check is ErrSkipTokenRepeated or ErrResultTruncated.
	Check error
	// Pages is the number of pages answered, the one the check failed on
	// included.
	Pages int
	// Rows is the number of rows QueryResources returns with the error.
	Rows int
	// SkipToken is the repeated skip token (ErrSkipTokenRepeated); ""
	// otherwise.
	SkipToken string
	// Count and TotalRecords are what the truncated page said
	// (ErrResultTruncated): its own records, and the records the query
	// matched, -1 when it did not say; zero otherwise.
	Count, TotalRecords int64
}

// Error says which check failed and where: Check's message, then the
// repeated skip token and its page, or the truncated page's count and
// totalRecords, then the rows returned. The zero IncompleteQueryError
// reads "cloudgazure: Resource Graph query incomplete: 0 rows".
func (e *IncompleteQueryError) Error() string {
	switch e.Check {
	case ErrSkipTokenRepeated:
		return fmt.Sprintf("%v (%q, on page %d): %d rows", e.Check, e.SkipToken, e.Pages, e.Rows)
	case ErrResultTruncated:
		return fmt.Sprintf("%v (page %d: %d of %d records): %d rows", e.Check, e.Pages, e.Count, e.TotalRecords, e.Rows)
	case nil:
		return fmt.Sprintf("cloudgazure: Resource Graph query incomplete: %d rows", e.Rows)
	}
	return fmt.Sprintf("%v: %d rows", e.Check, e.Rows)
}

// Unwrap returns Check.
func (e *IncompleteQueryError) Unwrap() error { return e.Check }
