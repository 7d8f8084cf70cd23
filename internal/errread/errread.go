// Package errread is the registry through which the SDK integration
// modules teach the core classifier (resilience.Classify) error shapes it
// cannot read by method sets: SDK structs such as azcore.ResponseError,
// gRPC status errors, smithy's HTTP response errors. An integration
// registers a Reader from its package's init, so importing it is enough.
package errread

import (
	"net/http"
	"reflect"
	"sync"
	"time"
)

// Kind is a reader's verdict on an error, when it knows better than the
// code and status tables (gRPC's ResourceExhausted, say). The zero Kind is
// None.
type Kind uint8

// The verdicts; None leaves the decision to the tables.
const (
	None Kind = iota
	Fatal
	Transient
	Throttled
)

// Details is what one error of a chain says about itself. The zero
// Details says nothing: no code, status, header or verdict, and not an
// answer. A Details is a value whose Header may be the error's own map:
// several goroutines may read one at once, and none may change its
// Header.
type Details struct {
	Code   string      // the provider's error code ("Throttling", "SubscriptionRequestsThrottled")
	Status int         // the HTTP status; 0 when none
	Header http.Header // response headers, for Retry-After style hints
	Kind   Kind        // a verdict that overrides the tables; None when the tables decide

	// RetryAfter, when HasRetryAfter is set, is a delay the provider asked
	// for outside headers (gRPC RetryInfo).
	RetryAfter    time.Duration
	HasRetryAfter bool

	// Answer marks the error as the provider's answer even without a code
	// or status (a gRPC status the server sent).
	Answer bool
}

// A Reader inspects one error of a chain (the classifier walks the chain
// itself) and returns what it knows, or false for a shape it does not
// handle. Readers must be fast and must not classify.
type Reader func(err error) (Details, bool)

// readers only grows: a slice returned by Readers stays valid, since a
// later append never writes within its length.
var (
	mu      sync.Mutex
	readers []Reader
)

// Register adds r to the readers every classification consults. It is safe
// for concurrent use.
func Register(r Reader) {
	if r == nil {
		return
	}
	mu.Lock()
	readers = append(readers, r)
	mu.Unlock()
}

// Readers returns the registered readers. The slice must not be modified.
func Readers() []Reader {
	mu.Lock()
	defer mu.Unlock()
	return readers
}

// Message returns err's message. When err's Error method panics (a typed
// nil pointer whose Error reads its receiver, say), the message is "" and
// panicked is the panic's value, never nil: the governor reads the
// messages of errors a caller or an SDK made, and such a panic is theirs,
// not a crash of the governor's.
func Message(err error) (msg string, panicked any) {
	return Read(err, error.Error)
}

// Read returns read(err), for a read of an error a caller or an SDK made
// that runs the methods of the errors of its chain (Error, Unwrap, As,
// Is, GRPCStatus: errors.As, errors.Is, grpc's status.Code). When one of
// them panics (a typed nil pointer in the chain whose method reads its
// receiver: a nil *smithy.OperationError, *googleapi.Error or
// *apierror.APIError), Read returns the zero T and the panic's value,
// never nil: such a panic is the error's, not a crash of the governor's.
// read must only read err: a panic of its own code is recovered alike.
func Read[T any](err error, read func(error) T) (v T, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, panicked = zero, r
		}
	}()
	return read(err), nil
}

// MaxDepth and MaxNodes bound every read of a chain the governor makes
// (As, Is, and the core classifier's walk): an error's causes are read
// to MaxDepth levels below it, and MaxNodes errors in all, depth first,
// outer error first, as errors.As and errors.Is read them. An
// application or an SDK may hand the governor a chain that cycles (an
// error that unwraps to itself), where errors.As and errors.Is never end,
// or a DAG of joins that is exponential as a tree, or a chain far wider
// or deeper than any SDK's: the governor reads it on its caller's
// behalf, and ends. A match further down is not found. As and Is read a
// chain none of whose methods panics once; a chain one of whose methods
// panics they read a second time, with the same bounds, each method on
// its own (see As).
const (
	MaxDepth = 10
	MaxNodes = 64
)

// As is errors.As(err, target) for a chain a caller or an SDK made, read
// as deep as MaxDepth and MaxNodes allow, through Read: each error of the
// chain is matched as errors.As matches it (its type, then its As method)
// and asked for its causes on its own, so that a method that panics (an
// Unwrap that reads a nil pointer) ends the read of that error's causes
// only, or of that error's match for a panic of its As, and the errors
// beside it (the other branches of an errors.Join) and above it are read
// all the same. As reports whether one matched, and the value of the
// first panic it recovered, nil when none did. An error of the chain
// that matches target but is a nil pointer (a typed nil
// *awshttp.ResponseError, or one in an interface target) is no such
// error: its causes are not read (its Unwrap would read the nil), the
// errors beside it are, and when nothing else matches, As reports false
// and *target holds no such nil (As leaves it as it was, or sets it to
// its zero value when an As method set it to the nil), so that the
// caller never reads a nil pointer's fields. A chain one of whose
// methods panics is read twice: once whole, as errors.As reads it, and
// again each method on its own; the methods of the errors before the
// panic run twice. A caller to which such a nil is the
// error all the same (a type whose methods read a nil receiver as a
// value, as cloudgaws's *ThrottlingError) runs errors.As through Read
// instead. target must be a non-nil pointer to an interface or to a type
// that implements error, as errors.As requires; As panics otherwise,
// before reading err, as errors.As does: such a target is its caller's
// bug, not the error's, and no read of the chain may report it as no
// match.
func As(err error, target any) (found bool, panicked any) {
	t := reflect.ValueOf(target)
	if !t.IsValid() || t.Kind() != reflect.Pointer || t.IsNil() {
		panic("errread: target must be a non-nil pointer")
	}
	if e := t.Type().Elem(); e.Kind() != reflect.Interface && !e.Implements(errorType) {
		panic("errread: *target must be interface or implement error")
	}
	if err == nil {
		return false, nil
	}
	v := t.Elem()
	vt := v.Type()
	return walk(err, func(e error) matched {
		if ev := reflect.ValueOf(e); ev.Type().AssignableTo(vt) {
			if nilMatch(ev) {
				return matchNil
			}
			v.Set(ev)
			return matchFound
		}
		if x, ok := e.(interface{ As(any) bool }); ok && x.As(target) {
			if nilMatch(v) {
				v.SetZero()
				return matchNil
			}
			return matchFound
		}
		return matchNone
	})
}

// errorType is the type of error, which a target of As must implement
// unless it is an interface.
var errorType = reflect.TypeFor[error]()

// nilMatch reports whether v, an error matched, is a nil pointer, alone
// or in an interface.
func nilMatch(v reflect.Value) bool {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	}
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Is is errors.Is(err, target) for a chain a caller or an SDK made, read
// as As reads it: to MaxDepth and MaxNodes, each error matched (equal to
// target, then its Is method) and asked for its causes on its own, a
// panic ending the read of that error's causes, or match, only. Is
// reports whether one matched, and the value of the first panic it
// recovered, nil when none did. As errors.Is, Is(nil, nil) is true.
func Is(err, target error) (found bool, panicked any) {
	if err == nil || target == nil {
		return err == target, nil
	}
	comparable := reflect.TypeOf(target).Comparable()
	return walk(err, func(e error) matched {
		if comparable && e == target {
			return matchFound
		}
		if x, ok := e.(interface{ Is(error) bool }); ok && x.Is(target) {
			return matchFound
		}
		return matchNone
	})
}

// matched is what As's or Is's match says of one error of a chain.
type matched uint8

const (
	matchNone  matched = iota // no match: its causes are read
	matchFound                // the match: the read ends
	matchNil                  // a nil pointer that matches As's target: no match, and its causes are not read
)

// walk reads err's chain for As and Is: depth first, outer error first,
// to MaxDepth levels below err and MaxNodes errors in all. It reports
// whether match, which reads one error and never its causes, found one,
// and the value of the first panic it recovered: of match on an error
// (that error's causes are read all the same), or of an error's Unwrap
// (its causes are not read). A chain none of whose methods panics, every
// SDK's, is read once, under one recover for the whole read, so that As
// and Is cost little more than errors.As and errors.Is (see the
// package's benchmarks); a chain one of whose methods panics is read
// again, each method then through Read, so that the panic ends the read
// of that error's match or causes only.
func walk(err error, match func(error) matched) (ok bool, panicked any) {
	w := walker{match: match}
	if found, clean := w.once(err); clean {
		return found, nil
	}
	w = walker{match: match, safe: true, panicked: &panicked}
	return w.visit(err, 0), panicked
}

// walker is one read of a chain by walk. The zero walker has no match.
// A walker is used by one goroutine at a time.
type walker struct {
	match    func(error) matched
	nodes    int  // the errors read so far
	safe     bool // each method is run through Read, a panic ending that error's read only
	panicked *any // the first panic Read recovered, when safe
}

// once is w.visit(err, 0) for a walker that is not safe: clean is false
// when a method of the chain (or match) panicked, and found then says
// nothing.
func (w *walker) once(err error) (found, clean bool) {
	defer func() {
		if recover() != nil {
			found, clean = false, false
		}
	}()
	return w.visit(err, 0), true
}

// visit reads e, at depth levels below the chain's first error, and its
// causes, and reports whether match found one.
func (w *walker) visit(e error, depth int) bool {
	for ; e != nil && w.nodes < MaxNodes; depth++ {
		w.nodes++
		var m matched
		if w.safe {
			var p any
			if m, p = Read(e, w.match); p != nil && m != matchFound {
				w.note(p)
				m = matchNone // its causes are read all the same
			}
		} else {
			m = w.match(e)
		}
		switch m {
		case matchFound:
			return true
		case matchNil:
			return false
		}
		if depth == MaxDepth {
			return false
		}
		var (
			one     error
			several []error
		)
		if w.safe {
			c, p := Read(e, func(e error) causes {
				one, several := causesOf(e)
				return causes{one, several}
			})
			if p != nil {
				w.note(p)
				return false
			}
			one, several = c.one, c.several
		} else {
			one, several = causesOf(e)
		}
		for _, x := range several {
			if w.visit(x, depth+1) {
				return true
			}
		}
		e = one
	}
	return false
}

// note keeps p, a panic's value, when it is the walk's first.
func (w *walker) note(p any) {
	if *w.panicked == nil {
		*w.panicked = p
	}
}

// causes are an error's causes, as causesOf returns them. The zero
// causes are none.
type causes struct {
	one     error
	several []error
}

// causesOf asks e for its causes: one (Unwrap() error) or several
// (Unwrap() []error).
func causesOf(e error) (one error, several []error) {
	switch u := e.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap(), nil
	case interface{ Unwrap() []error }:
		return nil, u.Unwrap()
	}
	return nil, nil
}
