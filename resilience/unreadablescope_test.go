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
