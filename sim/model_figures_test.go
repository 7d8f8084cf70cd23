package sim

import (
	"bytes"
	"strings"
	"testing"
)

// A model's figure that is not given leaves its cell of the table empty:
// ModelFigures says a negative Rejected is not given, as a zero
// Efficiency or Makespan is, so the table does not print it as a share of
// -100%.
func TestTheTableLeavesAModelFigureNotGivenEmpty(t *testing.T) {
	sc, ok := Builtin(ScenarioDefault)
	if !ok {
		t.Fatalf("no built-in scenario %q", ScenarioDefault)
	}
	sc.Model = map[string]ModelFigures{
		CloudgAIMD:    {Efficiency: 0.62, Rejected: -1},
		CloudgGoodput: {Rejected: 0.03},
	}
	results := []*Result{
		{Strategy: CloudgAIMD, Calls: 10, Succeeded: 10},
		{Strategy: CloudgGoodput, Calls: 10, Succeeded: 10},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, sc, results); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for line := range strings.Lines(b.String()) {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	// The measured figures are 11 columns; the model's follow.
	if got := rows[CloudgAIMD]; len(got) != 12 || got[11] != "0.62" {
		t.Errorf("the row of %s, whose model gives an efficiency of 0.62 and no rejected share (-1): %q; want its 11 figures, then 0.62 alone", CloudgAIMD, got)
	}
	if got := rows[CloudgGoodput]; len(got) != 12 || got[11] != "3.0%" {
		t.Errorf("the row of %s, whose model gives no efficiency and a rejected share of 0.03: %q; want its 11 figures, then 3.0%% alone", CloudgGoodput, got)
	}
}
