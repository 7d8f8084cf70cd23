//go:build go1.25

package pool

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/resilience"
)

// The zero Pool is not usable (its godoc says so): each of its methods
// panics with a message naming the zero Pool and pool.New, not with a nil
// map or a nil pointer.
func TestAZeroPoolPanicsSayingSo(t *testing.T) {
	nop := func(context.Context) error { return nil }
	for name, call := range map[string]func(p *Pool){
		"Go":       func(p *Pool) { p.Go(context.Background(), resilience.Scope{}, nop) },
		"Wait":     func(p *Pool) { p.Wait() },
		"Progress": func(p *Pool) { p.Progress() },
	} {
		msg := func() (msg string) {
			defer func() { msg, _ = recover().(string) }()
			call(new(Pool))
			return ""
		}()
		if !strings.Contains(msg, name+" on a zero Pool") || !strings.Contains(msg, "pool.New") {
			t.Errorf("%s on a zero Pool panicked with %q, want it to say so and name pool.New", name, msg)
		}
	}
}

// A nil Option changes nothing, as in the governor's and the integrations'
// options: the pool New makes runs its tasks on its default workers.
func TestANilOptionChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		p, ctx := New(context.Background(), nil, WithGovernor(g), nil)
		ran := 0
		p.Go(ctx, scope("op"), func(context.Context) error { ran++; return nil })
		if err := p.Wait(); err != nil || ran != 1 || p.limit != 16 {
			t.Fatalf("Wait %v, ran %d, %d workers: want nil, 1 and the default 16", err, ran, p.limit)
		}
	})
}
