package main

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
)

// srcImporter imports the packages it type-checked, and the standard
// library from export data.
type srcImporter struct {
	pkgs map[string]*types.Package
	std  types.Importer
}

func (i *srcImporter) Import(path string) (*types.Package, error) {
	if p, ok := i.pkgs[path]; ok {
		return p, nil
	}
	return i.std.Import(path)
}

var stdImporter = importer.Default()

// typecheck type-checks packages given as pairs of import path and source,
// in order: each may import the standard library and those before it.
func typecheck(t *testing.T, pathsAndSources ...string) []*types.Package {
	t.Helper()
	imp := &srcImporter{pkgs: map[string]*types.Package{}, std: stdImporter}
	fset := token.NewFileSet()
	var out []*types.Package
	for i := 0; i < len(pathsAndSources); i += 2 {
		path, src := pathsAndSources[i], pathsAndSources[i+1]
		f, err := parser.ParseFile(fset, path+"/x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		conf := types.Config{Importer: imp}
		p, err := conf.Check(path, fset, []*ast.File{f}, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		imp.pkgs[path] = p
		out = append(out, p)
	}
	return out
}

// listing lists packages as listTree lists public ones.
func listing(pkgs ...*types.Package) *apiListing {
	l := &apiListing{Names: map[string]string{}}
	for _, p := range pkgs {
		l.add(p, false, nil)
	}
	l.Features = sortFeatures(l.Features)
	l.Full = sortFeatures(l.Full)
	return l
}

func lines(fs []feature) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

func TestListingWritesEveryKindOfName(t *testing.T) {
	pkgs := typecheck(t, "example.com/p", `package p

import (
	"context"
	"time"
)

const (
	Untyped = 1.5
	Typed   Kind = 3
	Name    = "x"
	hidden  = 2
)

var ErrX error

type Kind uint8

func (Kind) String() string { return "" }

type Base struct{ ID int }

func (*Base) Close() error { return nil }

type hiddenBase struct{ Inner int }

func (hiddenBase) Promoted() {}

type T struct {
	Base
	hiddenBase
	A     []byte
	R     rune
	C     <-chan chan<- int
	F     func(context.Context, ...string) (int, error)
	Tags  struct{ N int "json:\"n\"" }
	inner int
}

func (T) Value()                {}
func (*T) Pointer(time.Duration) {}
func (*T) hidden()              {}

type NotComparable struct{ f func() }

type Open interface {
	B()
	A(int) bool
}

type Sealed interface {
	M()
	seal()
}

type Number interface{ ~int | ~float64 }

type Alias = T

type List[E any] struct{ Items []E }

func (l *List[E]) Push(e E) {}

func Map[S ~[]E, E any, R comparable](s S, f func(E) R) []R { return nil }

func Do(ctx context.Context, opts ...Open) (T, error) { return T{}, nil }

func hiddenFunc() {}
`)
	got := lines(listing(pkgs...).Features)
	want := []string{
		`pkg example.com/p, const Name untyped string = "x"`,
		`pkg example.com/p, const Typed Kind = 3`,
		`pkg example.com/p, const Untyped untyped float = 3/2`,
		`pkg example.com/p, func Do(context.Context, ...Open) (T, error)`,
		`pkg example.com/p, func Map[$0 interface{ ~[]$1 }, $1 any, $2 comparable]($0, func($1) $2) []$2`,
		`pkg example.com/p, method (*Base) Close() error`,
		`pkg example.com/p, method (*List[$0]) Push($0)`,
		`pkg example.com/p, method (*T) Close() error`,
		`pkg example.com/p, method (*T) Pointer(time.Duration)`,
		`pkg example.com/p, method (Kind) String() string`,
		`pkg example.com/p, method (Open) A(int) bool`,
		`pkg example.com/p, method (Open) B()`,
		`pkg example.com/p, method (Sealed) M()`,
		`pkg example.com/p, method (T) Promoted()`,
		`pkg example.com/p, method (T) Value()`,
		`pkg example.com/p, type Alias = T`,
		`pkg example.com/p, type Base struct`,
		`pkg example.com/p, type Base struct, ID int`,
		`pkg example.com/p, type Base struct, comparable`,
		`pkg example.com/p, type Kind uint8`,
		`pkg example.com/p, type List[$0 any] struct`,
		`pkg example.com/p, type List[$0 any] struct, Items []$0`,
		`pkg example.com/p, type NotComparable struct`,
		`pkg example.com/p, type Number interface{ ~int | ~float64 }`,
		`pkg example.com/p, type Open interface { A, B }`,
		`pkg example.com/p, type Sealed interface, unexported methods`,
		`pkg example.com/p, type T struct`,
		`pkg example.com/p, type T struct, A []uint8`,
		`pkg example.com/p, type T struct, C <-chan chan<- int`,
		`pkg example.com/p, type T struct, F func(context.Context, ...string) (int, error)`,
		`pkg example.com/p, type T struct, R int32`,
		`pkg example.com/p, type T struct, Tags struct{N int "json:\"n\""}`,
		`pkg example.com/p, type T struct, embedded Base`,
		`pkg example.com/p, var ErrX error`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct {
		line string
		name string
		kind nameKind
	}{
		{`pkg p, method (*List[$0]) Push($0)`, "List.Push", kindMethod},
		{`pkg p, type T struct, embedded *q.Base[$0]`, "T.Base", kindField},
		{`pkg p, type T struct, A []uint8`, "T.A", kindField},
		{`pkg p, type T struct, comparable`, "T", kindMeta},
		{`pkg p, type List[$0 any] struct`, "List", kindTop},
		{`pkg p, func Map[$0 any]($0)`, "Map", kindTop},
		{`pkg p, const Typed Kind = 3`, "Typed", kindTop},
	} {
		f, ok := parseFeature(tc.line)
		if !ok {
			t.Fatalf("parseFeature(%q) failed", tc.line)
		}
		if name, kind := f.name(); name != tc.name || kind != tc.kind {
			t.Errorf("%q: name %q kind %d, want %q %d", tc.line, name, kind, tc.name, tc.kind)
		}
	}
}

// TestDiffAPI states what the check takes for an incompatible change: a
// line of the release's listing that the tree lacks, read through the
// tree's aliases.
func TestDiffAPI(t *testing.T) {
	const old = `package p

import "context"

type Option interface{ option() }

func WithX(int) Option { return nil }
func WithY(int) Option { return nil }
func Do(context.Context, ...Option) error { return nil }

type Config struct{ Rate float64 }

type Store interface{ Get(string) int }

type sealed interface{ seal() }

type Sealed interface {
	sealed
	Get() int
}

type Key struct{ A, B string }

const Mode = "adaptive"

func Removed() {}
`
	for _, tc := range []struct {
		name    string
		new     string
		removed []string // lines of the old listing the diff reports
		added   []string
	}{
		{
			name:    "unchanged",
			new:     old,
			removed: nil,
		},
		{
			name:    "a function removed, a constant's value changed",
			new:     strings.Replace(strings.Replace(old, "func Removed() {}\n", "", 1), `"adaptive"`, `"standard"`, 1),
			removed: []string{`pkg example.com/p, const Mode untyped string = "adaptive"`, `pkg example.com/p, func Removed()`},
			added:   []string{`pkg example.com/p, const Mode untyped string = "standard"`},
		},
		{
			name:  "a field and a function added, a method added to a sealed interface",
			new:   strings.Replace(strings.Replace(old, "Rate float64", "Rate, Floor float64", 1), "Get() int\n}", "Get() int\n\tPut(int)\n}", 1) + "func New() {}\n",
			added: []string{"pkg example.com/p, func New()", "pkg example.com/p, method (Sealed) Put(int)", "pkg example.com/p, type Config struct, Floor float64"},
		},
		{
			name:    "a method added to an interface others implement",
			new:     strings.Replace(old, "interface{ Get(string) int }", "interface {\n\tGet(string) int\n\tSet(string, int)\n}", 1),
			removed: []string{"pkg example.com/p, type Store interface { Get }"},
			added:   []string{"pkg example.com/p, method (Store) Set(string, int)", "pkg example.com/p, type Store interface { Get, Set }"},
		},
		{
			name:    "a struct that can no longer be compared",
			new:     strings.Replace(old, "struct{ A, B string }", "struct {\n\tA, B string\n\tf  func()\n}", 1),
			removed: []string{"pkg example.com/p, type Key struct, comparable"},
		},
		{
			name:    "a field renamed",
			new:     strings.Replace(old, "Rate float64", "RateRPS float64", 1),
			removed: []string{"pkg example.com/p, type Config struct, Rate float64"},
			added:   []string{"pkg example.com/p, type Config struct, RateRPS float64"},
		},
		{
			// Option renamed CallOption, with Option left as its alias:
			// Do's signature is the same; WithX returning another type
			// is not.
			name: "a type renamed, an alias left behind",
			new: strings.Replace(strings.Replace(old, "type Option interface{ option() }", "type CallOption interface{ option() }\n\ntype Option = CallOption\n\ntype GovernorOption interface{ governor() }", 1),
				"func WithX(int) Option { return nil }", "func WithX(int) GovernorOption { return nil }", 1),
			removed: []string{"pkg example.com/p, func WithX(int) Option"},
			added: []string{"pkg example.com/p, func WithX(int) GovernorOption", "pkg example.com/p, type GovernorOption interface, unexported methods",
				"pkg example.com/p, type Option = CallOption"},
		},
		{
			name:    "a type alias removed",
			new:     strings.Replace(old, "type Option interface{ option() }", "type option interface{ option() }\n\ntype Option = option", 1),
			removed: []string{"pkg example.com/p, type Option interface, unexported methods"},
			added:   []string{"pkg example.com/p, type Option = option"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := diffAPI(listing(typecheck(t, "example.com/p", old)...).Features, listing(typecheck(t, "example.com/p", tc.new)...))
			if got := lines(d.Removed); !slices.Equal(got, tc.removed) {
				t.Errorf("removed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.removed, "\n"))
			}
			if got := lines(d.Added); !slices.Equal(got, tc.added) {
				t.Errorf("added:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.added, "\n"))
			}
		})
	}
}

// TestDiffAPIFollowsATypeThatMoved: a type moved to another package with
// an alias left under its old name is the same type: its fields and
// methods, and the signatures that used it, here and in other packages,
// are unchanged.
func TestDiffAPIFollowsATypeThatMoved(t *testing.T) {
	oldPkgs := typecheck(t,
		"example.com/core", `package core

type Scope struct{ Provider string }

func (Scope) Key() string { return "" }

func Inspect(Scope) int { return 0 }

type Guard struct{}

func (*Guard) Scope() Scope { return Scope{} }
`,
		"example.com/lib", `package lib

import "example.com/core"

func ScopeOf(string) core.Scope { return core.Scope{} }
`)
	newPkgs := typecheck(t,
		"example.com/state", `package state

type Scope struct{ Provider string }

func (Scope) Key() string { return "" }
`,
		"example.com/core", `package core

import "example.com/state"

type Scope = state.Scope

func Inspect(state.Scope) int { return 0 }

type Guard struct{}
`,
		"example.com/lib", `package lib

import "example.com/core"

func ScopeOf(string) core.Scope { return core.Scope{} }
`)
	d := diffAPI(listing(oldPkgs...).Features, listing(newPkgs...))
	if got, want := lines(d.Removed), []string{"pkg example.com/core, method (*Guard) Scope() Scope"}; !slices.Equal(got, want) {
		t.Errorf("removed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := lines(d.Added), []string{"pkg example.com/core, type Scope = state.Scope"}; !slices.Equal(got, want) {
		t.Errorf("added:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestUsedFeaturesFollowsWhatTheUsedNamesMention: another module that
// calls Apply relies on Store, which Apply takes, and on its methods; not
// on Other.
func TestUsedFeaturesFollowsWhatTheUsedNamesMention(t *testing.T) {
	pkgs := typecheck(t, "example.com/r/internal/x", `package x

type Store interface{ Get() Value }

type Value struct{ N int }

func Apply(Store) {}

func Other() {}
`)
	fs := packageFeatures(pkgs[0])
	got := lines(usedFeatures(fs, map[string]bool{"Apply": true}))
	want := []string{
		"pkg example.com/r/internal/x, func Apply(Store)",
		"pkg example.com/r/internal/x, method (Store) Get() Value",
		"pkg example.com/r/internal/x, type Store interface { Get }",
		"pkg example.com/r/internal/x, type Value struct",
		"pkg example.com/r/internal/x, type Value struct, N int",
		"pkg example.com/r/internal/x, type Value struct, comparable",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("used:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
