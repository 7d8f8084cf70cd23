//go:build go1.25

package statuspage

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// oddStore is the governor's memory store whose breakers report a state
// that is none of closed, half-open and open, as a Store's breaker
// decoded from a record it cannot read may.
type oddStore struct{ state.Store }

func (s oddStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return oddBreaker{s.Store.Breaker(key, spec)}
}

type oddBreaker struct{ state.Breaker }

func (b oddBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	s := b.Breaker.Snapshot(now)
	s.State = 7
	return s
}

func (oddBreaker) Pristine() bool { return false }

// A scope whose breaker is in an unknown state is not shown ok ("at its
// ceiling, nothing waits"): the governor counts a breaker that is not
// closed as troubled, and the page ranks it with the open ones, saying
// that its state is unknown and naming it.
func TestABreakerInAnUnknownStateIsNotOK(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(oddStore{resilience.MemoryStore()}))
	if err != nil {
		t.Fatal(err)
	}
	sc := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
	if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	h := New(WithGovernor(g))
	s := decode(t, get(t, h, http.MethodGet, "/?format=json"))
	if len(s.Scopes) != 1 || s.Scopes[0].Status != "open" || s.Statuses["ok"] != 0 {
		t.Fatalf("a scope whose breaker is in state.BreakerState(7): scopes %+v, statuses %v; want it open (not closed), none ok", s.Scopes, s.Statuses)
	}
	rows := rowsOf(get(t, h, http.MethodGet, "/").Body.String(), "scopes")
	if want := "unknown state, state.BreakerState(7)"; len(rows) != 1 || !strings.Contains(html.UnescapeString(rows[0]), want) {
		t.Errorf("the scope's row does not say %q:\n%s", want, rows)
	}
}
