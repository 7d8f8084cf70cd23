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

// A run the time limit cut has a makespan that is a bound (">60.0s"), not
// the time its work took, and so has the ratio of the ideal to it: the
// table prints the ideal over the makespan of default cut at 60 s as
// "<1.83", not as 1.83 (faster than the ideal), and an estate's
// makespan over its ideal as ">".
func TestTheTableBoundsTheRatioOfACutRun(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	cut := &Result{Strategy: CloudgAIMD, Calls: 2400, Succeeded: 1300, Lost: 1100, Aborted: true, Makespan: 60e9, Ideal: 110e9}
	var b bytes.Buffer
	if err := WriteTable(&b, sc, []*Result{cut}); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(b.String()) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == CloudgAIMD && f[2] != "<1.83*" {
			t.Errorf("the row of a run cut at 60 s, ideal 110 s: %q; want an ideal/makespan of <1.83*", f)
		}
	}
	es, _ := Builtin(ScenarioEstateUniform)
	cut = &Result{Strategy: Plain, Calls: 2384, Succeeded: 1000, Lost: 1384, Aborted: true, Makespan: 30e9, Ideal: 55e9}
	b.Reset()
	if err := WriteTable(&b, es, []*Result{cut}); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(b.String()) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == Plain && f[2] != ">0.55" {
			t.Errorf("the estate's row of a run cut at 30 s, ideal 55 s: %q; want a makespan/ideal of >0.55", f)
		}
	}
}
