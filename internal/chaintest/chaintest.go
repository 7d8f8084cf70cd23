// Package chaintest builds, for the tests of the readers of an error's
// chain (package errread's As and Is, the core classifier, the Guard's
// End, the integrations'), hostile chains an application or an SDK may
// hand the governor: cycles, a DAG that is exponential when walked as a
// tree, a join too wide and a chain too deep to be worth reading whole.
// Their errors count how often they are asked for their causes, so that
// a test states how much of a chain a read may read; and they stop
// unwrapping after Cap such asks, so that a read that is not bounded
// ends all the same, for its test to fail and say how far it went.
package chaintest

import "sync/atomic"

// Cap is how many asks for their causes a chain's errors answer; after
// it they have none.
const Cap = 100_000

// Chain is a hostile chain: Err, named Name, whose errors count in Asks
// the calls of their Unwrap methods (each asks for an error's causes,
// one or several). Chains makes them; the zero Chain has no error and no
// counter. Its errors may be read, and Asks read and reset, from several
// goroutines at once.
type Chain struct {
	Name string
	Err  error
	Asks *atomic.Int64
}

// probe is an error of a chain, counting the asks for its causes.
type probe struct {
	asks  *atomic.Int64
	next  error   // a single's cause
	nexts []error // a joined's causes
}

func (p *probe) Error() string { return "hostile" }

// single and joined are probes that unwrap to one error (Unwrap() error)
// or to several (Unwrap() []error).
type (
	single struct{ *probe }
	joined struct{ *probe }
)

// Unwrap returns the error's cause, until its chain's errors have been
// asked Cap times.
func (s *single) Unwrap() error {
	if s.asks.Add(1) > Cap {
		return nil
	}
	return s.next
}

// Unwrap returns the error's causes, until its chain's errors have been
// asked Cap times.
func (j *joined) Unwrap() []error {
	if j.asks.Add(1) > Cap {
		return nil
	}
	return j.nexts
}

// Chains returns a new set of hostile chains: an error that unwraps to
// itself, two that unwrap to each other, a join of itself twice, a DAG
// of 2^40 errors read as a tree (40 levels, each joining the level below
// twice), a join of 10,000 errors, and a chain 100,000 errors deep. No
// error of theirs is one of the standard library's, or matches any
// target but its own type.
func Chains() []Chain {
	var chains []Chain
	add := func(name string, build func(p func() *probe) error) {
		asks := new(atomic.Int64)
		err := build(func() *probe { return &probe{asks: asks} })
		chains = append(chains, Chain{Name: name, Err: err, Asks: asks})
	}
	add("self", func(p func() *probe) error {
		s := &single{p()}
		s.next = s
		return s
	})
	add("2-cycle", func(p func() *probe) error {
		a, b := &single{p()}, &single{p()}
		a.next, b.next = b, a
		return a
	})
	add("joins itself", func(p func() *probe) error {
		j := &joined{p()}
		j.nexts = []error{j, j}
		return j
	})
	add("DAG of 40 levels", func(p func() *probe) error {
		var e error = &single{p()}
		for range 40 {
			j := &joined{p()}
			j.nexts = []error{e, e}
			e = j
		}
		return e
	})
	add("join of 10,000", func(p func() *probe) error {
		j := &joined{p()}
		for range 10_000 {
			j.nexts = append(j.nexts, &single{p()})
		}
		return j
	})
	add("100,000 deep", func(p func() *probe) error {
		var e error = &single{p()}
		for range 100_000 {
			s := &single{p()}
			s.next = e
			e = s
		}
		return e
	})
	return chains
}
