//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/observe"
)

// A Guard's call ends once. End, EndDenied and EndPanicked close it, and
// one of them called again with no step of a new call between (the
// ending verb of an integration's second hook, a deferred End after an
// explicit one) records nothing more, whatever it is given: no second
// call counted, lost, denied, throttled or failed, no event, no ledger
// line, no breaker failure, as a second Release gives nothing back. A
// new call on the same Guard, begun with one of its steps (Enter, here),
// is recorded as any call is.
func TestAGuardsCallEndsOnce(t *testing.T) {
	localErr := errors.New("local: the request could not be built")
	endings := []struct {
		name string
		end  func(gd *Guard)
	}{
		{"End(nil)", func(gd *Guard) { gd.End(nil) }},
		{"End(throttle)", func(gd *Guard) { gd.End(throttle()) }},
		{"End(transient)", func(gd *Guard) { gd.End(transientErr()) }},
		{"End(local)", func(gd *Guard) { gd.End(localErr) }},
		{"End(denied)", func(gd *Guard) { gd.End(accessDenied()) }},
		{"EndDenied", func(gd *Guard) { gd.EndDenied(accessDenied()) }},
		{"EndPanicked", func(gd *Guard) { gd.EndPanicked() }},
	}
	for _, first := range endings {
		for _, second := range endings {
			t.Run(first.name+" then "+second.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var mu sync.Mutex
					var events []observe.Event
					g := newGov(t, Config{}, WithObserver(observe.Func(func(e observe.Event) {
						mu.Lock()
						events = append(events, e)
						mu.Unlock()
					})))
					r := newRun(context.Background())
					gd, _ := g.Begin(r.ctx, ec2Vpcs)
					if err := gd.Enter(r.ctx); err != nil {
						t.Fatal(err)
					}
					first.end(gd)

					before := lookEnded(g, r, &mu, &events)
					second.end(gd)
					if d := diffEnded(before, lookEnded(g, r, &mu, &events)); d != "" {
						t.Errorf("%s after %s recorded more (%s), want nothing more", second.name, first.name, d)
					}

					// A new call on the Guard is recorded.
					if err := gd.Enter(r.ctx); err != nil {
						t.Fatal(err)
					}
					gd.After(throttle())
					gd.End(throttle())
					if after := g.Summary(r.stats).Scopes[serviceScope(ec2Vpcs)]; after.Calls != before.Run.Calls+1 ||
						after.GaveUp != before.Run.GaveUp+1 {
						t.Errorf("a new call on the Guard, throttled and given up: the scope's stats %+v, want one more call and one more give-up than %+v",
							after, before.Run)
					}
				})
			})
		}
	}
}

// ended is what TestAGuardsCallEndsOnce reads of what a call recorded:
// the run's counters of the scope, the governor's lifetime totals, the
// task's ledger, the events heard, the breaker's failures and the rate.
type ended struct {
	Run, Lifetime Counters
	Ledger        string
	Events        int
	Failures      int
	Rate          float64
}

func lookEnded(g *Governor, r run, mu *sync.Mutex, events *[]observe.Event) ended {
	mu.Lock()
	defer mu.Unlock()
	life, _ := g.Lifetime()
	s := g.Inspect(ec2Vpcs)
	return ended{g.Summary(r.stats).Scopes[serviceScope(ec2Vpcs)], life, r.ledger.Describe(), len(*events), s.Breaker.Failures, s.Leaf.Rate}
}

// diffEnded words what changed between two looks: the fields, and the
// counters' fields, that differ ("" when none).
func diffEnded(before, after ended) string {
	var d []string
	var walk func(path string, b, a reflect.Value)
	walk = func(path string, b, a reflect.Value) {
		if b.Kind() == reflect.Struct && b.Type() != reflect.TypeOf(Scope{}) {
			for i := range b.NumField() {
				walk(path+b.Type().Field(i).Name+".", b.Field(i), a.Field(i))
			}
			return
		}
		if !reflect.DeepEqual(b.Interface(), a.Interface()) {
			d = append(d, fmt.Sprintf("%s %v -> %v", strings.TrimSuffix(path, "."), b.Interface(), a.Interface()))
		}
	}
	walk("", reflect.ValueOf(before), reflect.ValueOf(after))
	return strings.Join(d, ", ")
}
