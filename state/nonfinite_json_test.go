package state

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// A snapshot a Store answered with values that are no finite number
// (NaN, +Inf, -Inf: a Store is user code) still has a JSON form: each
// such value is null there, which no finite value is, so that a reader
// tells a broken value from a real 0; read back, it is NaN. The other
// values of the snapshot are written and read back as they are.
func TestAValueThatIsNoNumberIsNullInJSONAndReadsBackAsNaN(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		want := ScopeSnapshot{
			Scope:       Scope{Provider: "aws", Account: "1", Region: "r", Service: "s"},
			Leaf:        BucketSnapshot{Rate: v, Ceiling: 10, Tokens: v},
			Account:     BucketSnapshot{Rate: 5, Ceiling: v, Tokens: 2},
			Provider:    BucketSnapshot{Rate: v, Ceiling: v, Tokens: v},
			RetryBudget: v,
			MaxInFlight: 7,
		}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatalf("a snapshot holding %v: %v", v, err)
		}
		for _, field := range []string{`"rate_rps":null`, `"tokens":null`, `"ceiling_rps":null`, `"retry_budget":null`, `"ceiling_rps":10`, `"max_in_flight":7`} {
			if !strings.Contains(string(b), field) {
				t.Errorf("a snapshot holding %v is %s: no %s", v, b, field)
			}
		}
		var got ScopeSnapshot
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		nan := math.IsNaN
		if !nan(got.Leaf.Rate) || !nan(got.Leaf.Tokens) || got.Leaf.Ceiling != 10 ||
			got.Account.Rate != 5 || !nan(got.Account.Ceiling) || got.Account.Tokens != 2 ||
			!nan(got.Provider.Rate) || !nan(got.Provider.Ceiling) || !nan(got.Provider.Tokens) ||
			!nan(got.RetryBudget) || got.MaxInFlight != 7 || got.Scope != want.Scope {
			t.Errorf("%s read back as %+v; want each value that was no number NaN, the others as written", b, got)
		}
		var leaf BucketSnapshot
		if err := json.Unmarshal([]byte(`{"rate_rps":null,"ceiling_rps":3,"tokens":null,"paused_seconds":1}`), &leaf); err != nil ||
			!nan(leaf.Rate) || leaf.Ceiling != 3 || !nan(leaf.Tokens) || leaf.Paused.Seconds() != 1 {
			t.Errorf("a bucket's JSON with null rate and tokens read as %+v, %v; want them NaN", leaf, err)
		}
	}
}
