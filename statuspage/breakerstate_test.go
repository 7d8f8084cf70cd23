//go:build go1.25

package statuspage

import (
	"context"
	"html"
	"net/http"
	"regexp"
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

// oddEstate makes a governor on an oddStore with one scope, EC2's
// DescribeVpcs, called once: its breaker reports state.BreakerState(7).
func oddEstate(t *testing.T) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(oddStore{resilience.MemoryStore()}))
	if err != nil {
		t.Fatal(err)
	}
	sc := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
	if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	return g
}

// A scope whose breaker is in an unknown state is not shown ok ("at its
// ceiling, nothing waits"): the governor counts a breaker that is not
// closed as troubled, and the page ranks it with the open ones, saying
// that its state is unknown and naming it.
func TestABreakerInAnUnknownStateIsNotOK(t *testing.T) {
	g := oddEstate(t)
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

// The breaker cell of a scope whose breaker is in an unknown state has a
// class the style sheet can name, "breaker unknown", coloured as an open
// breaker's (the page counts it open), not the state's Go name, whose
// dot and parentheses make a class no rule selects: every class of the
// row is a plain name.
func TestAnUnknownBreakersCellHasAPlainClass(t *testing.T) {
	g := oddEstate(t)
	body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
	rows := rowsOf(body, "scopes")
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	plain := regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	for _, m := range regexp.MustCompile(`class="([^"]*)"`).FindAllStringSubmatch(rows[0], -1) {
		for _, c := range strings.Fields(m[1]) {
			if !plain.MatchString(c) {
				t.Errorf("the row of a breaker in state.BreakerState(7) has the class %q (of class=%q), no plain name", c, m[1])
			}
		}
	}
	if want := `<span class="breaker unknown">state.BreakerState(7)</span>`; !strings.Contains(rows[0], want) {
		t.Errorf("the row does not hold %s:\n%s", want, rows[0])
	}
	if !strings.Contains(body, ".breaker.unknown") {
		t.Error("the style sheet has no rule for .breaker.unknown")
	}
}
