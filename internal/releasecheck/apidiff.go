package main

import (
	"path"
	"strings"
)

// An apiDiff is what changed between a release's listing and the tree's.
type apiDiff struct {
	// Removed are the lines of the release's listing (as written there)
	// that the tree's API lacks: incompatible changes.
	Removed []feature
	// Added are the lines of the tree's listing that the release's lacks.
	Added []feature
	// Now maps a removed line to the tree's lines about the same name (a
	// changed signature, a field of another type), if any.
	Now map[feature][]feature
}

// diffAPI compares the listing of a release (old) with the tree's (cur).
// A line of old is kept when the tree has it, read through the tree's
// aliases (see mover): a type moved to another package, or renamed, with
// an alias left under its old name is the same type, so a signature that
// used it, its fields and its methods are unchanged.
func diffAPI(old []feature, cur *apiListing) apiDiff {
	mv := newMover(old, cur)
	have := map[feature]bool{}
	byName := map[[2]string][]feature{}
	for _, f := range cur.Full {
		have[f] = true
		n, _ := f.name()
		byName[[2]string{f.Pkg, n}] = append(byName[[2]string{f.Pkg, n}], f)
	}
	d := apiDiff{Now: map[feature][]feature{}}
	kept := map[feature]bool{}
	for _, f := range old {
		g := mv.feature(f)
		if have[g] {
			kept[g] = true
			continue
		}
		d.Removed = append(d.Removed, f)
		n, _ := g.name()
		if now := byName[[2]string{g.Pkg, n}]; len(now) > 0 {
			d.Now[f] = now
		}
	}
	for _, f := range cur.Features {
		if !kept[f] {
			d.Added = append(d.Added, f)
		}
	}
	return d
}

// A mover rewrites a line of an older listing into the terms of the
// tree's: where the tree has an alias T = q.U in package P and the older
// listing a type T of P (not an alias), the type moved to q (or was
// renamed U): the older lines of T's declaration, fields and methods
// become lines of q.U, and every signature that named P's T names q.U.
type mover struct {
	to     map[[2]string][2]string // {pkg, name} → {pkg, name}
	byName map[string]string       // package name → import path, for qualified types
	names  map[string]string       // import path → package name
}

func newMover(old []feature, cur *apiListing) *mover {
	defined := map[[2]string]bool{} // types the older listing declares, not as aliases
	for _, f := range old {
		if rest, ok := strings.CutPrefix(f.Text, "type "); ok {
			name := identPrefix(rest)
			if !strings.HasPrefix(rest[len(name):], " = ") {
				defined[[2]string{f.Pkg, name}] = true
			}
		}
	}
	m := &mover{to: map[[2]string][2]string{}, byName: map[string]string{}, names: map[string]string{}}
	for p, n := range cur.Names {
		m.names[p] = n
		m.byName[n] = p
	}
	for _, f := range old {
		if _, ok := m.names[f.Pkg]; !ok {
			// A package the tree no longer lists: its name is, in this
			// repository, its last element.
			m.names[f.Pkg] = path.Base(f.Pkg)
			if _, taken := m.byName[path.Base(f.Pkg)]; !taken {
				m.byName[path.Base(f.Pkg)] = f.Pkg
			}
		}
	}
	for _, a := range cur.Aliases {
		from := [2]string{a.Pkg, a.Name}
		if defined[from] && from != [2]string{a.Target, a.TargetName} {
			m.to[from] = [2]string{a.Target, a.TargetName}
		}
	}
	return m
}

// feature rewrites one line of the older listing.
func (m *mover) feature(f feature) feature {
	if len(m.to) == 0 {
		return f
	}
	pkg := f.Pkg
	word, rest, _ := strings.Cut(f.Text, " ")
	var text string
	switch word {
	case "const":
		// const Name T = value
		name, rest, _ := strings.Cut(rest, " ")
		typ, val, _ := strings.Cut(rest, " = ")
		text = "const " + name + " " + m.types(f.Pkg, pkg, typ) + " = " + val
	case "var":
		name, typ, _ := strings.Cut(rest, " ")
		text = "var " + name + " " + m.types(f.Pkg, pkg, typ)
	case "func":
		name := identPrefix(rest)
		text = "func " + name + m.types(f.Pkg, pkg, rest[len(name):])
	case "method":
		// method (*T[$0]) M(...) ...
		recv, after, _ := strings.Cut(strings.TrimPrefix(rest, "("), ") ")
		star := ""
		if strings.HasPrefix(recv, "*") {
			star, recv = "*", recv[1:]
		}
		base := identPrefix(recv)
		if to, ok := m.to[[2]string{f.Pkg, base}]; ok {
			pkg, base = to[0], to[1]
		}
		recv = base + m.types(f.Pkg, pkg, recv[len(identPrefix(recv)):])
		name := identPrefix(after)
		text = "method (" + star + recv + ") " + name + m.types(f.Pkg, pkg, after[len(name):])
	case "type":
		name := identPrefix(rest)
		rest = rest[len(name):]
		if to, ok := m.to[[2]string{f.Pkg, name}]; ok {
			pkg, name = to[0], to[1]
		}
		params := ""
		if strings.HasPrefix(rest, "[") {
			end := closing(rest)
			params, rest = m.types(f.Pkg, pkg, rest[:end]), rest[end:]
		}
		switch {
		case rest == " struct" || rest == " struct, comparable" || strings.HasPrefix(rest, " interface {") || rest == " interface, unexported methods":
		case strings.HasPrefix(rest, " struct, embedded "):
			rest = " struct, embedded " + m.types(f.Pkg, pkg, strings.TrimPrefix(rest, " struct, embedded "))
		case strings.HasPrefix(rest, " struct, "):
			field, typ, _ := strings.Cut(strings.TrimPrefix(rest, " struct, "), " ")
			rest = " struct, " + field + " " + m.types(f.Pkg, pkg, typ)
		case strings.HasPrefix(rest, " = "):
			rest = " = " + m.types(f.Pkg, pkg, strings.TrimPrefix(rest, " = "))
		default:
			rest = m.types(f.Pkg, pkg, rest)
		}
		text = "type " + name + params + rest
	default:
		return f
	}
	return feature{Pkg: pkg, Text: text}
}

// closing returns the index just past the bracket that closes s[0].
func closing(s string) int {
	depth := 0
	for i, r := range s {
		switch r {
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// types rewrites the types in s, written in a listing of package from, for
// a listing of package to: a type that moved is written as its new
// package and name, and a type of from is qualified if to is another
// package. An identifier is a type of from when it is unqualified and
// exported (lowercase ones are predeclared, or unexported and so out of
// reach); strings are copied as they are.
func (m *mover) types(from, to, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '`':
			j := quotedEnd(s, i)
			b.WriteString(s[i:j])
			i = j
		case isLetter(c):
			j := i
			for j < len(s) && (isLetter(s[j]) || isDigit(s[j])) {
				j++
			}
			ident := s[i:j]
			if j+1 < len(s) && s[j] == '.' && isLetter(s[j+1]) {
				k := j + 1
				for k < len(s) && (isLetter(s[k]) || isDigit(s[k])) {
					k++
				}
				b.WriteString(m.ref(m.byName[ident], ident, s[j+1:k], to))
				i = k
				continue
			}
			if ident[0] >= 'A' && ident[0] <= 'Z' {
				b.WriteString(m.ref(from, "", ident, to))
			} else {
				b.WriteString(ident)
			}
			i = j
		case isDigit(c):
			j := i
			for j < len(s) && (isLetter(s[j]) || isDigit(s[j])) {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// ref writes the type name of package pkg (written qual.name, or name if
// qual is "") as seen from package to.
func (m *mover) ref(pkg, qual, name, to string) string {
	if pkg == "" {
		return qual + "." + name // a package the listings do not cover
	}
	if t, ok := m.to[[2]string{pkg, name}]; ok {
		pkg, name = t[0], t[1]
	}
	if pkg == to {
		return name
	}
	if n, ok := m.names[pkg]; ok {
		return n + "." + name
	}
	return qual + "." + name
}

func isLetter(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
