package resilience

import (
	"errors"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/errread"
)

// ownBugErr is an error the test reader below answers for with a verdict
// out of errread's range: the classifier's own code (its table of
// verdicts), not the error's methods, then panics reading it.
type ownBugErr struct{}

func (ownBugErr) Error() string { return "own bug" }

func init() {
	errread.Register(func(e error) (errread.Details, bool) {
		if _, ok := e.(ownBugErr); ok {
			return errread.Details{Kind: errread.Kind(200)}, true
		}
		return errread.Details{}, false
	})
}

// The recover of the classifier's walk is for a panic of the methods of
// the error it reads (see TestAnErrorWhoseMethodsPanicReadsAsFatal): a
// panic of the classifier's own code is a bug of cloudg's, which must not
// be hidden as an "unreadable error" of the caller's, named after a type
// whose methods never panicked.
func TestAPanicOfTheClassifiersOwnCodeIsNotTheErrors(t *testing.T) {
	for _, err := range []error{ownBugErr{}, errors.Join(errors.New("outer"), ownBugErr{})} {
		func() {
			var k Kind
			defer func() {
				r := recover()
				if r == nil {
					t.Errorf("Classify(%q) = %v, %q: the panic of the classifier's own code was recovered as the error's; want it to go on", err.Error(), k, DescribeError(err))
					return
				}
				if re, ok := r.(error); !ok || !strings.Contains(re.Error(), "index out of range") {
					t.Errorf("Classify(%q) panicked with %v, want the classifier's own index out of range", err.Error(), r)
				}
			}()
			k = Classify(err)
		}()
	}
}

// callsBack is an error whose ErrorCode calls back into the classifier
// (as an error or a reader that classifies what it wraps may), which
// then meets ownBugErr: the panic is of the classifier's own code, run
// from inside an error's method.
type callsBack struct{}

func (callsBack) Error() string { return "calls back" }
func (callsBack) ErrorCode() string {
	Classify(ownBugErr{})
	return "Throttling"
}

// A panic of the classifier's own code is cloudg's bug even when that
// code runs inside a method of the error an outer walk reads: the outer
// walk must not take it for that error's panic and hide it as an
// "unreadable error".
func TestAPanicOfTheClassifiersOwnCodeUnderAnErrorsMethodIsNotTheErrors(t *testing.T) {
	var k Kind
	defer func() {
		r := recover()
		if r == nil {
			t.Errorf("Classify(callsBack) = %v, %q: the panic of the classifier's own code, under callsBack's ErrorCode, was recovered as callsBack's; want it to go on", k, DescribeError(callsBack{}))
			return
		}
		if re, ok := r.(error); !ok || !strings.Contains(re.Error(), "index out of range") {
			t.Errorf("Classify(callsBack) panicked with %v, want the classifier's own index out of range", r)
		}
	}()
	k = Classify(callsBack{})
}
