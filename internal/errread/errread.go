// Package errread is the registry through which the SDK integration
// modules teach the core classifier (resilience.Classify) error shapes it
// cannot read by method sets: SDK structs such as azcore.ResponseError,
// gRPC status errors, smithy's HTTP response errors. An integration
// registers a Reader from its package's init, so importing it is enough.
package errread

import (
	"errors"
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

// As is errors.As(err, target) read through Read, and past a panic: a
// method of an error of err's chain that panics (an Unwrap that reads a
// nil pointer) ends the read of that error's causes only, and the errors
// beside it (the other branches of an errors.Join) and above it are read
// all the same, to a depth of maxDepth. As reports whether one matched,
// and the value of the first panic it recovered, nil when none did. An
// error of the chain that matches target but is a nil pointer (a typed
// nil *awshttp.ResponseError, or one in an interface target) is no such
// error either: As reports false and sets *target to its zero value, so
// that the caller never reads a nil pointer's fields. A caller to which
// such a nil is the error all the same (a type whose methods read a nil
// receiver as a value, as cloudgaws's *ThrottlingError) runs errors.As
// through Read instead. target must be a non-nil pointer to an interface
// or to a type that implements error, as errors.As requires; As panics
// otherwise, before reading err, as errors.As does: such a target is its
// caller's bug, not the error's, and no read of the chain may report it
// as no match.
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
	return readPast(err, 0, func(e error) (found bool, panicked any) {
		found, panicked = Read(e, func(e error) bool { return errors.As(e, target) })
		if found && nilMatch(t.Elem()) {
			t.Elem().SetZero()
			found = false
		}
		return found, panicked
	})
}

// errorType is the type of error, which a target of As must implement
// unless it is an interface.
var errorType = reflect.TypeFor[error]()

// nilMatch reports whether v, the error errors.As set a target to, is a
// nil pointer, alone or in an interface.
func nilMatch(v reflect.Value) bool {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	}
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Is is errors.Is(err, target) read through Read, and past a panic as As
// reads it: a method of an error of err's chain that panics ends the read
// of that error's causes only. Is reports whether one matched, and the
// value of the first panic it recovered, nil when none did.
func Is(err, target error) (found bool, panicked any) {
	if err == nil {
		return target == nil, nil
	}
	return readPast(err, 0, func(e error) (bool, any) {
		return Read(e, func(e error) bool { return errors.Is(e, target) })
	})
}

// maxDepth is how deep As and Is read the causes of an error whose
// chain panicked, as deep as the core classifier reads a chain.
const maxDepth = 10

// readPast is match(err) and, when that read panicked without a match
// (err itself did not match, or its own As or Is panicked), the read of
// each of err's causes on its own, at depth+1, to maxDepth: a panic ends
// the read of the panicking error's causes only. It reports whether one
// matched, and the first panic's value. An error's causes are read only
// when its chain panicked, so that a readable chain is read once, by
// errors.As or errors.Is alone.
func readPast(err error, depth int, match func(error) (bool, any)) (found bool, panicked any) {
	found, panicked = match(err)
	if found || panicked == nil || depth >= maxDepth {
		return found, panicked
	}
	causes, p := Read(err, func(e error) []error {
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			return u.Unwrap()
		case interface{ Unwrap() error }:
			return []error{u.Unwrap()}
		}
		return nil
	})
	if p != nil {
		return false, panicked
	}
	for _, c := range causes {
		if c == nil {
			continue
		}
		if ok, _ := readPast(c, depth+1, match); ok {
			return true, panicked
		}
	}
	return false, panicked
}
