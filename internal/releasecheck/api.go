package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// An API listing describes the exported API of a set of packages, one
// feature a line, in the form of the Go project's api files:
//
//	pkg example.com/r/p, func F(int, ...string) (T, error)
//	pkg example.com/r/p, method (*T) M(context.Context) error
//	pkg example.com/r/p, type T struct
//	pkg example.com/r/p, type T struct, Name string
//	pkg example.com/r/p, type T struct, comparable
//	pkg example.com/r/p, type I interface { M, N }
//	pkg example.com/r/p, type K uint8
//	pkg example.com/r/p, type A = T
//	pkg example.com/r/p, const KindX K = 3
//	pkg example.com/r/p, var ErrX error
//
// A feature is a promise to the package's users: a program that uses it
// keeps compiling only while the feature's line stays the same. A line of
// the previous release's listing that is missing from the tree's is
// therefore an incompatible change: a name removed, a type or a signature
// changed, a method added to an interface others may implement (its line
// names every method), a struct that can no longer be compared with ==.
// A line only in the tree's listing is an addition, which breaks nobody.
// What no line shows, the comparison cannot see: a changed behaviour, a
// field promoted from an embedded unexported struct, an API that differs
// by platform (the listing is the host's).
//
// Types are written as the compiler sees them: an alias by what it
// denotes (so that a signature that spells the same type another way is
// unchanged), byte as uint8 and rune as int32, another package's type by
// its package name, a type parameter by its index ($0, $1). Methods are
// those of the method set of the pointer type, promoted ones included,
// with the receiver the value type has when the method belongs to the
// value's method set too.

// A feature is one line of an API listing.
type feature struct {
	Pkg  string // import path
	Text string // what follows "pkg <Pkg>, "
}

func (f feature) String() string { return "pkg " + f.Pkg + ", " + f.Text }

// parseFeature reads a line written by feature.String.
func parseFeature(line string) (feature, bool) {
	rest, ok := strings.CutPrefix(line, "pkg ")
	if !ok {
		return feature{}, false
	}
	pkg, text, ok := strings.Cut(rest, ", ")
	if !ok || pkg == "" || text == "" {
		return feature{}, false
	}
	return feature{Pkg: pkg, Text: text}, true
}

// A nameKind says which of a package's names a feature describes.
type nameKind int

const (
	kindTop    nameKind = iota // a const, var, func or type of the package
	kindMethod                 // a method of a type (promoted ones too)
	kindField                  // a field of a struct type
	kindMeta                   // a property of a type (comparable)
)

// name returns the name a feature is about (F, T, T.M, T.Field) and its
// kind; a changed signature keeps its name, so that the listing of the
// tree can show what became of a removed line.
func (f feature) name() (string, nameKind) {
	word, rest, _ := strings.Cut(f.Text, " ")
	switch word {
	case "method":
		// method (*T[$0]) M(...)
		recv, after, _ := strings.Cut(strings.TrimPrefix(rest, "("), ") ")
		recv = strings.TrimPrefix(recv, "*")
		recv, _, _ = strings.Cut(recv, "[")
		return recv + "." + identPrefix(after), kindMethod
	case "type":
		name := identPrefix(rest)
		if _, member, ok := strings.Cut(rest, " struct, "); ok {
			if member == "comparable" {
				return name, kindMeta
			}
			if emb, ok := strings.CutPrefix(member, "embedded "); ok {
				// embedded *pkg.T[$0]: the field's name is T.
				emb = strings.TrimLeft(emb, "*")
				emb, _, _ = strings.Cut(emb, "[")
				if i := strings.LastIndexByte(emb, '.'); i >= 0 {
					emb = emb[i+1:]
				}
				return name + "." + emb, kindField
			}
			return name + "." + identPrefix(member), kindField
		}
		return name, kindTop
	}
	return identPrefix(rest), kindTop
}

// identPrefix returns the identifier s begins with.
func identPrefix(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == ' ' || r == '(' || r == '[' || r == ',' })
	if i < 0 {
		return s
	}
	return s[:i]
}

// An apiScope is what a listing covers: the packages a user imports, and
// the internal packages that code of another library module imports.
type apiScope struct {
	Public []string // sorted
	// Internal maps each internal package to the packages of other
	// library modules whose code (not their tests) imports it.
	Internal map[string][]string
	// Module maps every package of a library module to its module path.
	Module map[string]string
}

// apiPackages returns the packages whose API the listing covers: every
// package a consumer can import from a library module, and every internal
// package of a library module that the code of another library module
// imports. A release tags every library module at once, but a user's build
// may select different releases of them (the newest any of its
// dependencies requires), so a library module built against an internal
// package of another module relies on that package's API in any release a
// user may pair it with.
func apiPackages(root string, mods []*repoModule) (*apiScope, error) {
	sc := &apiScope{Internal: map[string][]string{}, Module: map[string]string{}}
	var all []string
	for _, m := range mods {
		if !m.Library {
			continue
		}
		sc.Public = append(sc.Public, m.Packages...)
		for _, p := range append(slices.Clip(m.Packages), m.Internal...) {
			sc.Module[p] = m.Path
			all = append(all, p)
		}
	}
	sort.Strings(sc.Public)
	sort.Strings(all)
	if len(all) == 0 {
		return sc, nil
	}
	out, err := goCmd(root, nil, append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, all...)...)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		from := sc.Module[fields[0]]
		for _, imp := range fields[1:] {
			if to, ok := sc.Module[imp]; ok && to != from && isInternal(imp) {
				sc.Internal[imp] = append(sc.Internal[imp], fields[0])
			}
		}
	}
	return sc, nil
}

// importerModules returns the modules whose packages import the
// internal package p.
func (sc *apiScope) importerModules(p string) []string {
	var mods []string
	for _, q := range sc.Internal[p] {
		if m := sc.Module[q]; !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	sort.Strings(mods)
	return mods
}

// An apiListing is the API of a tree: its listing, and what a comparison
// with an older listing needs to know of the tree.
type apiListing struct {
	// Features is the listing: every feature of the packages a user
	// imports, and of each internal package the features of the names
	// (top-level; a type with all its fields and methods) that another
	// library module's code uses.
	Features []feature
	// Full is every feature of the packages a user imports and of every
	// internal package of a library module: a line of an older listing is
	// kept if it is here.
	Full []feature
	// Names maps the import path of each package read to its name.
	Names map[string]string
	// Aliases are the exported aliases of the listed packages that
	// denote a named type of a listed package.
	Aliases []typeAlias
	// Scope is what the listing covers.
	Scope *apiScope
}

// A typeAlias is an exported alias Pkg.Name of the named type
// Target.TargetName: a type that moved there, or was renamed, leaving an
// alias behind, is the same type under its old name.
type typeAlias struct {
	Pkg, Name          string
	Target, TargetName string
}

// listTree lists the API of the library modules of the tree at root (mods,
// as discover read them), built in its workspace. It reads each package's
// export data, which `go list -export` has the go command compile (or find
// in its build cache), and type-checks the code of the packages that
// import another module's internal packages, to learn which of their
// names they use.
func listTree(root string, mods []*repoModule) (*apiListing, error) {
	sc, err := apiPackages(root, mods)
	if err != nil {
		return nil, err
	}
	l := &apiListing{Names: map[string]string{}, Scope: sc}
	// Every internal package is read: one no other module imports now
	// may be one an older release's module imports (its names are kept
	// if Full has them).
	var internal, importing []string
	for p := range sc.Module {
		if isInternal(p) {
			internal = append(internal, p)
		}
	}
	for _, by := range sc.Internal {
		for _, q := range by {
			if !slices.Contains(importing, q) {
				importing = append(importing, q)
			}
		}
	}
	sort.Strings(internal)
	sort.Strings(importing)
	pkgs := append(slices.Clip(sc.Public), internal...)
	if len(pkgs) == 0 {
		return l, nil
	}
	out, err := goCmd(root, nil, append([]string{"list", "-export", "-deps", "-f",
		"{{.ImportPath}}\t{{.Export}}\t{{.Dir}}\t{{join .GoFiles \",\"}}"}, append(slices.Clip(pkgs), importing...)...)...)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	sources := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		if f[1] != "" {
			exports[f[0]] = f[1]
		}
		for _, name := range strings.Split(f[3], ",") {
			if name != "" {
				sources[f[0]] = append(sources[f[0]], filepath.Join(f[2], name))
			}
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	used := map[string]map[string]bool{} // internal package → top-level names other modules use
	for _, p := range importing {
		if err := usedNames(fset, imp, p, sources[p], sc, used); err != nil {
			return nil, err
		}
	}
	for _, p := range pkgs {
		tp, err := imp.Import(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		l.add(tp, isInternal(p), used[p])
	}
	l.Features = sortFeatures(l.Features)
	l.Full = sortFeatures(l.Full)
	return l, nil
}

// add lists the package tp in Full, and in Features all of it or, if it
// is internal, the names in used (see usedFeatures).
func (l *apiListing) add(tp *types.Package, internal bool, used map[string]bool) {
	p := tp.Path()
	l.Names[p] = tp.Name()
	fs := packageFeatures(tp)
	l.Full = append(l.Full, fs...)
	if internal {
		l.Features = append(l.Features, usedFeatures(fs, used)...)
	} else {
		l.Features = append(l.Features, fs...)
	}
	for _, name := range tp.Scope().Names() {
		obj, ok := tp.Scope().Lookup(name).(*types.TypeName)
		if !ok || !obj.Exported() || !obj.IsAlias() {
			continue
		}
		if n, ok := types.Unalias(obj.Type()).(*types.Named); ok && n.Obj().Pkg() != nil && n.TypeArgs().Len() == 0 {
			l.Aliases = append(l.Aliases, typeAlias{Pkg: p, Name: name, Target: n.Obj().Pkg().Path(), TargetName: n.Obj().Name()})
		}
	}
}

// usedFeatures returns the features of a package's names in used, and of
// the names their lines mention, and so on: a function another module
// calls with a value of an interface type of the package relies on the
// interface's methods as much as on the function.
func usedFeatures(fs []feature, used map[string]bool) []feature {
	top := func(f feature) string {
		n, _ := f.name()
		return strings.SplitN(n, ".", 2)[0]
	}
	names := map[string]bool{}
	for _, f := range fs {
		names[top(f)] = true
	}
	mark := map[string]bool{}
	var queue []string
	for n := range used {
		if names[n] && !mark[n] {
			mark[n] = true
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, f := range fs {
			if top(f) != n {
				continue
			}
			for _, id := range bareIdents(f.Text) {
				if names[id] && !mark[id] {
					mark[id] = true
					queue = append(queue, id)
				}
			}
		}
	}
	var out []feature
	for _, f := range fs {
		if mark[top(f)] {
			out = append(out, f)
		}
	}
	return out
}

// quotedEnd returns the index just past the Go string literal (quoted or
// raw) that starts at s[i], or len(s) when it is not closed.
func quotedEnd(s string, i int) int {
	c := s[i]
	j := i + 1
	for j < len(s) && s[j] != c {
		if s[j] == '\\' && c == '"' {
			j++
		}
		j++
	}
	return min(j+1, len(s))
}

// bareIdents returns the exported identifiers of a listing's line that no
// package name qualifies: the package's own names.
func bareIdents(s string) []string {
	var ids []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '`':
			i = quotedEnd(s, i)
		case isLetter(c) || isDigit(c):
			j := i
			for j < len(s) && (isLetter(s[j]) || isDigit(s[j])) {
				j++
			}
			id := s[i:j]
			qualifier := j+1 < len(s) && s[j] == '.' && isLetter(s[j+1])
			qualified := i > 0 && s[i-1] == '.'
			if !qualifier && !qualified && 'A' <= id[0] && id[0] <= 'Z' {
				ids = append(ids, id)
			}
			i = j
		default:
			i++
		}
	}
	return ids
}

// usedNames type-checks the package p from its files and adds to used the
// top-level names of other modules' internal packages that it uses: the
// names it writes, and the types whose fields and methods it selects (a
// method called on a value whose type it never names).
func usedNames(fset *token.FileSet, imp types.Importer, p string, files []string, sc *apiScope, used map[string]map[string]bool) error {
	var syntax []*ast.File
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		syntax = append(syntax, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(p, fset, syntax, info); err != nil {
		return fmt.Errorf("type-checking %s: %w", p, err)
	}
	mark := func(obj types.Object) {
		if obj == nil || obj.Pkg() == nil || !obj.Exported() {
			return
		}
		path := obj.Pkg().Path()
		if _, ok := sc.Internal[path]; !ok || sc.Module[path] == sc.Module[p] {
			return
		}
		if obj.Parent() != obj.Pkg().Scope() {
			return // a field or a method: its type is marked by its selection
		}
		if used[path] == nil {
			used[path] = map[string]bool{}
		}
		used[path][obj.Name()] = true
	}
	for _, obj := range info.Uses {
		mark(obj)
	}
	for _, sel := range info.Selections {
		t := sel.Recv()
		if ptr, ok := t.Underlying().(*types.Pointer); ok {
			t = ptr.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok {
			mark(n.Origin().Obj())
		}
	}
	return nil
}

// sortFeatures sorts a listing by package and line, without duplicates.
func sortFeatures(fs []feature) []feature {
	slices.SortFunc(fs, func(a, b feature) int {
		if c := strings.Compare(a.Pkg, b.Pkg); c != 0 {
			return c
		}
		return strings.Compare(a.Text, b.Text)
	})
	return slices.Compact(fs)
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		args := strings.Join(args, " ")
		if len(args) > 120 {
			args = args[:120] + "..."
		}
		return "", fmt.Errorf("go %s: %w\n%s", args, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// packageFeatures lists the exported API of pkg.
func packageFeatures(pkg *types.Package) []feature {
	w := &apiWriter{self: pkg}
	var fs []feature
	add := func(text string) { fs = append(fs, feature{Pkg: pkg.Path(), Text: text}) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			add(fmt.Sprintf("const %s %s = %s", name, w.typ(obj.Type()), obj.Val().ExactString()))
		case *types.Var:
			add(fmt.Sprintf("var %s %s", name, w.typ(obj.Type())))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			add("func " + name + w.typeParams(sig.TypeParams()) + w.signature(sig))
		case *types.TypeName:
			for _, text := range w.typeFeatures(obj) {
				add(text)
			}
		}
	}
	return fs
}

// typeFeatures lists a type: its declaration, and its exported fields and
// methods.
func (w *apiWriter) typeFeatures(obj *types.TypeName) []string {
	name := obj.Name()
	if obj.IsAlias() {
		return []string{"type " + name + " = " + w.typ(types.Unalias(obj.Type()))}
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return nil
	}
	decl := "type " + name + w.typeParams(named.TypeParams())
	recv := name
	if tps := named.TypeParams(); tps.Len() > 0 {
		args := make([]string, tps.Len())
		for i := range args {
			args[i] = "$" + strconv.Itoa(i)
		}
		recv += "[" + strings.Join(args, ", ") + "]"
	}
	var lines []string
	switch u := named.Underlying().(type) {
	case *types.Struct:
		lines = append(lines, decl+" struct")
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded() && f.Exported():
				lines = append(lines, decl+" struct, embedded "+w.typ(f.Type()))
			case f.Exported():
				lines = append(lines, decl+" struct, "+f.Name()+" "+w.typ(f.Type()))
			}
		}
		if types.Comparable(named) {
			lines = append(lines, decl+" struct, comparable")
		}
	case *types.Interface:
		var names []string
		sealed := false
		for i := range u.NumMethods() {
			m := u.Method(i)
			if m.Exported() {
				names = append(names, m.Name())
				lines = append(lines, "method ("+recv+") "+m.Name()+w.signature(m.Type().(*types.Signature)))
			} else {
				sealed = true
			}
		}
		sort.Strings(names)
		switch {
		case sealed:
			// No other package can implement it: a method added breaks
			// nobody, so the declaration does not list them.
			lines = append(lines, decl+" interface, unexported methods")
		case !u.IsMethodSet():
			lines = append(lines, decl+" "+w.typ(u))
		default:
			lines = append(lines, decl+" interface { "+strings.Join(names, ", ")+" }")
		}
		return lines
	default:
		lines = append(lines, decl+" "+w.typ(u))
	}
	value := types.NewMethodSet(named)
	ptr := types.NewMethodSet(types.NewPointer(named))
	for i := range ptr.Len() {
		sel := ptr.At(i)
		m := sel.Obj()
		if !m.Exported() {
			continue
		}
		r := "*" + recv
		if value.Lookup(m.Pkg(), m.Name()) != nil {
			r = recv
		}
		lines = append(lines, "method ("+r+") "+m.Name()+w.signature(sel.Type().(*types.Signature)))
	}
	return lines
}

// An apiWriter writes types for a listing of the package self.
type apiWriter struct {
	self *types.Package
}

func (w *apiWriter) typ(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *apiWriter) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		w.writeType(b, types.Unalias(t))
	case *types.Basic:
		switch t.Kind() {
		case types.Byte:
			b.WriteString("uint8")
		case types.Rune:
			b.WriteString("int32")
		default:
			b.WriteString(t.Name())
		}
	case *types.Pointer:
		b.WriteString("*")
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteString("]")
		w.writeType(b, t.Elem())
	case *types.Chan:
		parens := false
		switch t.Dir() {
		case types.SendRecv:
			b.WriteString("chan ")
			if c, ok := types.Unalias(t.Elem()).(*types.Chan); ok && c.Dir() == types.RecvOnly {
				parens = true
			}
		case types.SendOnly:
			b.WriteString("chan<- ")
		case types.RecvOnly:
			b.WriteString("<-chan ")
		}
		if parens {
			b.WriteString("(")
		}
		w.writeType(b, t.Elem())
		if parens {
			b.WriteString(")")
		}
	case *types.Signature:
		b.WriteString("func")
		b.WriteString(w.signature(t))
	case *types.Struct:
		b.WriteString("struct{")
		for i := range t.NumFields() {
			if i > 0 {
				b.WriteString("; ")
			}
			f := t.Field(i)
			if !f.Embedded() {
				b.WriteString(f.Name())
				b.WriteString(" ")
			}
			w.writeType(b, f.Type())
			if tag := t.Tag(i); tag != "" {
				b.WriteString(" ")
				b.WriteString(strconv.Quote(tag))
			}
		}
		b.WriteString("}")
	case *types.Interface:
		var parts []string
		for i := range t.NumMethods() {
			m := t.Method(i)
			parts = append(parts, m.Name()+w.signature(m.Type().(*types.Signature)))
		}
		sort.Strings(parts)
		for i := range t.NumEmbeddeds() {
			if e := t.EmbeddedType(i); !types.IsInterface(e) {
				parts = append(parts, w.typ(e))
			} else if n, ok := types.Unalias(e).(*types.Named); ok && n.Obj().Pkg() == nil && n.Obj().Name() == "comparable" {
				parts = append(parts, "comparable")
			}
		}
		if len(parts) == 0 {
			b.WriteString("any")
			return
		}
		b.WriteString("interface{ ")
		b.WriteString(strings.Join(parts, "; "))
		b.WriteString(" }")
	case *types.Union:
		for i := range t.Len() {
			if i > 0 {
				b.WriteString(" | ")
			}
			term := t.Term(i)
			if term.Tilde() {
				b.WriteString("~")
			}
			w.writeType(b, term.Type())
		}
	case *types.Named:
		obj := t.Obj()
		if pkg := obj.Pkg(); pkg != nil && pkg != w.self {
			b.WriteString(pkg.Name())
			b.WriteString(".")
		}
		b.WriteString(obj.Name())
		if args := t.TypeArgs(); args.Len() > 0 {
			b.WriteString("[")
			for i := range args.Len() {
				if i > 0 {
					b.WriteString(", ")
				}
				w.writeType(b, args.At(i))
			}
			b.WriteString("]")
		}
	case *types.TypeParam:
		fmt.Fprintf(b, "$%d", t.Index())
	case *types.Tuple:
		b.WriteString(w.tuple(t, false))
	default:
		b.WriteString(t.String())
	}
}

// typeParams writes a type parameter list: [$0 any, $1 comparable].
func (w *apiWriter) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	parts := make([]string, tps.Len())
	for i := range parts {
		tp := tps.At(i)
		parts[i] = fmt.Sprintf("$%d %s", tp.Index(), w.typ(tp.Constraint()))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// signature writes a signature without func, names or receiver:
// (int, ...string) (T, error).
func (w *apiWriter) signature(sig *types.Signature) string {
	s := w.tuple(sig.Params(), sig.Variadic())
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		s += " " + w.typ(res.At(0).Type())
	default:
		s += " " + w.tuple(res, false)
	}
	return s
}

func (w *apiWriter) tuple(t *types.Tuple, variadic bool) string {
	parts := make([]string, t.Len())
	for i := range parts {
		typ := t.At(i).Type()
		if variadic && i == len(parts)-1 {
			if s, ok := types.Unalias(typ).(*types.Slice); ok {
				parts[i] = "..." + w.typ(s.Elem())
				continue
			}
		}
		parts[i] = w.typ(typ)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
