//go:build go1.25

package statuspage

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// noNumberStore is the governor's memory store whose buckets' snapshots
// answer v for their rate and tokens, and whose retry budgets answer v
// for what is left: a Store of the user's that answers garbage.
type noNumberStore struct {
	state.Store
	v float64
}

func (s noNumberStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return noNumberBucket{s.Store.Bucket(key, spec, now), s.v}
}

func (s noNumberStore) Budget(provider string, size int) state.Budget {
	return noNumberBudget{s.Store.Budget(provider, size), s.v}
}

type noNumberBucket struct {
	state.Bucket
	v float64
}

func (b noNumberBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	s := b.Bucket.Snapshot(now)
	s.Rate, s.Tokens = b.v, b.v
	return s
}

type noNumberBudget struct {
	state.Budget
	v float64
}

func (b noNumberBudget) Remaining() float64 { return b.v }

// A Store that answers values that are no number (NaN, +Inf, -Inf) for
// one scope's bucket and its provider's budget does not take the JSON
// page down: it serves every scope, that one's values null (which a real
// 0 never is), the others' as they are (the ceiling a number).
func TestTheJSONPageServesAStoresValuesThatAreNoNumber(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(noNumberStore{resilience.MemoryStore(), v}))
			if err != nil {
				t.Fatal(err)
			}
			sc := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
			if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
			w := get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json")
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			var s struct {
				Scopes []struct {
					Key   string `json:"key"`
					State struct {
						Leaf struct {
							Rate    *float64 `json:"rate_rps"`
							Ceiling *float64 `json:"ceiling_rps"`
							Tokens  *float64 `json:"tokens"`
						} `json:"leaf"`
						RetryBudget *float64 `json:"retry_budget"`
					} `json:"state"`
				} `json:"scopes"`
				Providers []struct {
					Name        string   `json:"name"`
					RetryBudget *float64 `json:"retry_budget"`
				} `json:"providers"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
				t.Fatalf("%v in %s", err, w.Body)
			}
			// -Inf reads every provider's budget spent: azure's and gcp's
			// are listed too.
			if len(s.Scopes) != 1 || len(s.Providers) == 0 || s.Providers[0].Name != "aws" {
				t.Fatalf("%s: want the scope and its provider", w.Body)
			}
			st := s.Scopes[0].State
			if st.Leaf.Rate != nil || st.Leaf.Tokens != nil || st.RetryBudget != nil || s.Providers[0].RetryBudget != nil ||
				st.Leaf.Ceiling == nil || *st.Leaf.Ceiling <= 0 {
				t.Errorf("%s: want the rate, the tokens and the budgets null, the ceiling its number", w.Body)
			}
			// The HTML writes such a value as Go does: NaN, +Inf, -Inf.
			body := html.UnescapeString(get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String())
			if want := `<span class="num">` + strconv.FormatFloat(v, 'f', -1, 64) + " / "; !strings.Contains(body, want) {
				t.Errorf("the HTML page has no %q:\n%s", want, rowsOf(body, "scopes"))
			}
		})
	}
}

// A rate and a retry budget a Store answered far past any real one
// (1e300) are written in a few characters, as a rate of a million is
// (three figures and a unit), not in the 301 digits of the number.
func TestTheHTMLPageWritesAHugeRateOrBudgetShort(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(noNumberStore{resilience.MemoryStore(), 1e300}))
	if err != nil {
		t.Fatal(err)
	}
	sc := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
	if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
	if run := regexp.MustCompile(`[0-9]{20,}`).FindString(body); run != "" {
		t.Errorf("the HTML page writes a number of %d digits (%s): want a rate and a budget of 1e300 short", len(run), run)
	}
	for _, v := range []float64{1e21, 1e300, math.MaxFloat64} {
		if s := rate(v); len(s) > 8 {
			t.Errorf("rate(%v) = %q: want a few characters", v, s)
		}
	}
}
