// Package panicmark tells a scheduler whether the panic that ended one of
// its tasks is in the task's ledger already. A governed call whose
// function (or an integration's code run for it) panics records itself in
// the ledger its context carries as lost to the panic
// (resilience.LossPanicked), and lets the panic go on, never recovered:
// the scheduler that recovers it cannot tell it from a panic outside every
// governed call by its value. Package pool gives each task's context a
// Mark of the task's ledger, which package resilience notes when a call
// made with that context records a panic in that ledger; the pool records
// the task's panic there only when nothing was noted, so that a panicking
// task counts once.
package panicmark

import (
	"context"
	"sync/atomic"
)

// Mark is what a task's context carries: whether a governed call made
// with it recorded a panic in the task's ledger. It is safe for
// concurrent use. The zero Mark is of no ledger and not noted, and no
// context carries it: With makes the Marks that Note finds.
type Mark struct {
	ledger any // the task's *resilience.Ledger
	noted  atomic.Bool
}

type key struct{}

// markCtx is a context carrying a Mark: both in one allocation.
type markCtx struct {
	context.Context
	m Mark
}

func (c *markCtx) Value(k any) any {
	if k == (key{}) {
		return &c.m
	}
	return c.Context.Value(k)
}

// With returns ctx carrying a new Mark of ledger, the task's
// *resilience.Ledger, and the Mark.
func With(ctx context.Context, ledger any) (context.Context, *Mark) {
	c := &markCtx{Context: ctx}
	c.m.ledger = ledger
	return c, &c.m
}

// Note notes, on the Mark ctx carries (the nearest), that a governed call
// made with ctx recorded a panic in ledger, if ledger is the Mark's. It
// does nothing for a ctx that carries no Mark.
func Note(ctx context.Context, ledger any) {
	if m, ok := ctx.Value(key{}).(*Mark); ok && m.ledger == ledger {
		m.noted.Store(true)
	}
}

// Noted reports whether Note was called for m.
func (m *Mark) Noted() bool { return m.noted.Load() }
