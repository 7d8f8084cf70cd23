package errread

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The error types of the chains the differential test builds: the shapes
// SDKs and applications make. Every one's message names its node, so
// that a test can say which error a target was set to.
type (
	// ptrErr is a pointer error that wraps one cause (nil: none).
	ptrErr struct {
		id    int
		cause error
	}
	// valErr is a comparable value error: two with the same code are
	// equal, as errors.Is reads them.
	valErr struct{ code int }
	// sliceErr is a value error of a type that is not comparable.
	sliceErr []string
	// nilSafe is a pointer error whose methods read a nil receiver as a
	// value: a typed nil of it is an ordinary error.
	nilSafe struct{ id int }
	// valWrap wraps its cause by value (a value-receiver Unwrap).
	valWrap struct {
		id    int
		cause error
	}
	// multiErr is an application's join: Unwrap() []error, nil entries
	// kept.
	multiErr struct {
		id     int
		causes []error
	}
	// isErr says, through its Is method, that it is says, and wraps cause.
	isErr struct {
		id    int
		says  error
		cause error
	}
	// asErr, through its As method, is a valErr of code val and the
	// *ptrErr asPtr, and an error with an Is method, asIs, and wraps
	// cause.
	asErr struct {
		id    int
		val   int
		cause error
	}
	// coder is an interface target some of the types implement.
	coder interface{ ErrorCode() string }
)

var (
	sentinel1 = errors.New("sentinel 1")
	sentinel2 = errors.New("sentinel 2")
	asPtr     = &ptrErr{id: -1}
	asIs      = &isErr{id: -1, cause: sentinel1}
)

func (e *ptrErr) Error() string {
	if e.cause == nil {
		return fmt.Sprintf("p%d", e.id)
	}
	return fmt.Sprintf("p%d: %v", e.id, e.cause)
}
func (e *ptrErr) Unwrap() error      { return e.cause }
func (e *ptrErr) ErrorCode() string  { return fmt.Sprint("P", e.id) }
func (e valErr) Error() string       { return fmt.Sprint("v", e.code) }
func (e sliceErr) Error() string     { return strings.Join(e, ",") }
func (e *nilSafe) ErrorCode() string { return "nil-safe" }
func (e *nilSafe) Error() string {
	if e == nil {
		return "nil nilSafe"
	}
	return fmt.Sprint("n", e.id)
}
func (e valWrap) Error() string   { return fmt.Sprintf("w%d: %v", e.id, e.cause) }
func (e valWrap) Unwrap() error   { return e.cause }
func (e *multiErr) Error() string { return fmt.Sprintf("m%d: %v", e.id, e.causes) }
func (e *multiErr) Unwrap() []error {
	return e.causes
}
func (e *isErr) Error() string     { return fmt.Sprintf("i%d: %v", e.id, e.cause) }
func (e *isErr) Unwrap() error     { return e.cause }
func (e *isErr) Is(t error) bool   { return t == e.says }
func (e *asErr) Error() string     { return fmt.Sprintf("a%d: %v", e.id, e.cause) }
func (e *asErr) Unwrap() error     { return e.cause }
func (e *asErr) ErrorCode() string { return fmt.Sprint("A", e.id) }
func (e *asErr) As(target any) bool {
	switch t := target.(type) {
	case *valErr:
		*t = valErr{code: e.val}
		return true
	case **ptrErr:
		*t = asPtr
		return true
	case *interface{ Is(error) bool }:
		*t = asIs
		return true
	}
	return false
}

// node is one error of a generated chain: its kind, and its causes,
// indexes of nodes generated before it (so that the chain is acyclic,
// and may share an error between branches, a DAG).
type node struct {
	kind   int
	param  int
	causes []int // -1: a nil cause
}

// The kinds of node.
const (
	kSentinel = iota // sentinel1 or sentinel2 (param)
	kNew             // errors.New, a leaf
	kVal             // valErr{param}
	kSlice           // sliceErr
	kNilSafe         // a typed nil *nilSafe
	kPtr             // *ptrErr wrapping causes[0], or nothing
	kErrorf          // fmt.Errorf with one %w
	kErrorfN         // fmt.Errorf with several %w
	kErrorfV         // fmt.Errorf with %v: a leaf
	kJoin            // errors.Join
	kMulti           // *multiErr, nil entries kept
	kValWrap         // valWrap
	kIs              // *isErr, saying it is sentinel2, valErr{param} or nothing
	kAs              // *asErr
	nKinds
)

// chainGen draws a chain, its root the last node, whose read as a tree
// (a shared error read once per path to it) holds at most MaxNodes
// errors, none deeper than MaxDepth levels below the root: within the
// bounds of As and Is.
func chainGen(t *rapid.T) []node {
	var (
		nodes  []node
		size   []int // errors in a node's tree
		height []int // levels below it
	)
	budget := MaxNodes - rapid.IntRange(0, MaxNodes-1).Draw(t, "budget short") // errors the tree may still hold
	var gen func(depth int) int
	gen = func(depth int) int {
		budget--
		nd := node{param: rapid.IntRange(0, 2).Draw(t, "param")}
		if depth == MaxDepth || budget == 0 || rapid.IntRange(0, 7).Draw(t, "leaf") == 0 {
			nd.kind = rapid.SampledFrom([]int{kSentinel, kNew, kVal, kSlice, kNilSafe, kErrorfV}).Draw(t, "leaf kind")
		} else {
			nd.kind = rapid.SampledFrom([]int{kPtr, kErrorf, kErrorfN, kJoin, kMulti, kValWrap, kIs, kAs}).Draw(t, "kind")
		}
		want := 0
		switch nd.kind {
		case kErrorfN, kJoin, kMulti:
			want = 4 - rapid.IntRange(0, 3).Draw(t, "fewer causes")
		case kPtr, kErrorf, kValWrap, kIs, kAs:
			want = 1
		}
		sz, h := 1, 0
		for range want {
			if (nd.kind == kPtr || nd.kind == kMulti) && rapid.IntRange(0, 5).Draw(t, "nil cause") == 0 {
				nd.causes = append(nd.causes, -1)
				continue
			}
			var shared []int // errors made already that fit here
			for j := range nodes {
				if size[j] <= budget && depth+1+height[j] <= MaxDepth {
					shared = append(shared, j)
				}
			}
			var j int
			switch {
			case len(shared) > 0 && rapid.IntRange(0, 3).Draw(t, "share") == 0:
				j = rapid.SampledFrom(shared).Draw(t, "shared cause")
				budget -= size[j]
			case budget > 0:
				j = gen(depth + 1)
			default:
				continue
			}
			nd.causes = append(nd.causes, j)
			sz += size[j]
			h = max(h, height[j]+1)
		}
		if len(nd.causes) == 0 && want > 0 && nd.kind != kPtr && nd.kind != kMulti {
			nd.kind = kNew
		}
		nodes, size, height = append(nodes, nd), append(size, sz), append(height, h)
		return len(nodes) - 1
	}
	gen(0)
	return nodes
}

// build makes the chain's errors and returns its root. With opaque set,
// a typed nil *nilSafe is made as errors.New instead: a leaf that no
// target but *error matches.
func build(nodes []node, opaque bool) error {
	errs := make([]error, len(nodes))
	cause := func(j int) error {
		if j < 0 {
			return nil
		}
		return errs[j]
	}
	causes := func(nd node) []any {
		cs := make([]any, len(nd.causes))
		for i, j := range nd.causes {
			cs[i] = cause(j)
		}
		return cs
	}
	for i, nd := range nodes {
		var e error
		switch nd.kind {
		case kSentinel:
			e = sentinel1
			if nd.param > 0 {
				e = sentinel2
			}
		case kNew:
			e = fmt.Errorf("e%d", i)
		case kVal:
			e = valErr{code: nd.param}
		case kSlice:
			e = sliceErr{fmt.Sprint("s", i)}
		case kNilSafe:
			e = (*nilSafe)(nil)
			if opaque {
				e = errors.New("nil nilSafe") // its message, for describe
			}
		case kPtr:
			var c error
			if len(nd.causes) > 0 {
				c = cause(nd.causes[0])
			}
			e = &ptrErr{id: i, cause: c}
		case kErrorf:
			e = fmt.Errorf("f%d: %w", i, cause(nd.causes[0]))
		case kErrorfN:
			e = fmt.Errorf("F%d:"+strings.Repeat(" %w", len(nd.causes)), append([]any{i}, causes(nd)...)...)
		case kErrorfV:
			e = fmt.Errorf("V%d: %v", i, sentinel1)
		case kJoin:
			cs := make([]error, len(nd.causes))
			for k, j := range nd.causes {
				cs[k] = cause(j)
			}
			e = errors.Join(cs...)
		case kMulti:
			cs := make([]error, len(nd.causes))
			for k, j := range nd.causes {
				cs[k] = cause(j)
			}
			e = &multiErr{id: i, causes: cs}
		case kValWrap:
			e = valWrap{id: i, cause: cause(nd.causes[0])}
		case kIs:
			var says error
			switch nd.param {
			case 1:
				says = sentinel2
			case 2:
				says = valErr{code: 2}
			}
			e = &isErr{id: i, says: says, cause: cause(nd.causes[0])}
		case kAs:
			e = &asErr{id: i, val: nd.param, cause: cause(nd.causes[0])}
		}
		errs[i] = e
	}
	return errs[len(errs)-1]
}

// describe names the error v (an As target's value) by its type and its
// message, which names its node: the same for an error of two builds of
// one chain.
func describe(v reflect.Value) string {
	if v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "<nil interface>"
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Sprintf("%v(nil)", v.Type())
	}
	if v.Kind() == reflect.Slice && v.IsNil() {
		return fmt.Sprintf("%v(nil)", v.Type())
	}
	return fmt.Sprintf("%v %q", v.Type(), v.Interface().(error).Error())
}

// asTargets are the types of As's targets the test reads chains for.
var asTargets = []reflect.Type{
	reflect.TypeFor[*ptrErr](),
	reflect.TypeFor[valErr](),
	reflect.TypeFor[sliceErr](),
	reflect.TypeFor[*nilSafe](),
	reflect.TypeFor[valWrap](),
	reflect.TypeFor[*isErr](),
	reflect.TypeFor[*asErr](),
	reflect.TypeFor[*multiErr](),
	reflect.TypeFor[*fs.PathError](),
	reflect.TypeFor[error](),
	reflect.TypeFor[coder](),
	reflect.TypeFor[interface{ Is(error) bool }](),
	reflect.TypeFor[interface{ Unwrap() []error }](),
}

// Over an ordinary chain within MaxDepth and MaxNodes (pointer and value
// errors, errors of types that are not comparable, Is and As methods,
// errors.Join, fmt.Errorf with one %w or several, an application's
// Unwrap() []error with nil entries, an error shared by two branches),
// As and Is are errors.As and errors.Is: the same answer, and As sets
// its target to the same error, the first in errors.As's order. The one
// difference is As's, documented: a typed nil pointer that matches the
// target is no such error, as though it were an error no target matches.
func TestAsAndIsAreErrorsAsAndIsWithinTheBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := chainGen(t)
		err := build(nodes, false)

		tt := rapid.SampledFrom(asTargets).Draw(t, "As target")
		nilMatches := reflect.TypeFor[*nilSafe]().AssignableTo(tt)
		if tt == reflect.TypeFor[error]() && nodes[len(nodes)-1].kind == kNilSafe {
			// Every error is an error: no opaque error stands for the nil.
			var target error
			if found, p := As(err, &target); found || p != nil || target != nil {
				t.Fatalf("As(a typed nil, *error) = %v, %v, %v; want false, no panic, nil", found, p, target)
			}
		} else {
			oracle := err
			if nilMatches {
				oracle = build(nodes, true)
			}
			got, want := reflect.New(tt), reflect.New(tt)
			found, p := As(err, got.Interface())
			wantFound := errors.As(oracle, want.Interface())
			if found != wantFound || p != nil || describe(got.Elem()) != describe(want.Elem()) {
				t.Fatalf("As(%q, *%v) = %v, %v, target %s; errors.As = %v, target %s",
					err.Error(), tt, found, p, describe(got.Elem()), wantFound, describe(want.Elem()))
			}
		}

		targets := []error{sentinel1, sentinel2, valErr{code: 0}, valErr{code: 2},
			sliceErr{"s0"}, (*nilSafe)(nil), errors.New("elsewhere"), asPtr}
		if nodes[len(nodes)-1].kind != kValWrap {
			// (a valWrap whose cause is not comparable does not compare
			// with itself: errors.Is panics)
			targets = append(targets, err)
		}
		target := rapid.SampledFrom(targets).Draw(t, "Is target")
		found, p := Is(err, target)
		if want := errors.Is(err, target); found != want || p != nil {
			t.Fatalf("Is(%q, %q) = %v, %v; errors.Is = %v", err.Error(), target.Error(), found, p, want)
		}
	})
}
