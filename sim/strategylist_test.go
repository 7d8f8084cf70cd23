package sim

import (
	"slices"
	"testing"
)

// StrategyList is a read: a caller who edits the list it returns (sorts
// it, writes over a name) changes neither the package's StrategyNames
// nor its EstateStrategyNames, which every later scenario of the family
// runs, nor the scenario's own Strategies.
func TestStrategyListIsACopy(t *testing.T) {
	defer func(names, estate []string) {
		copy(StrategyNames, names)
		copy(EstateStrategyNames, estate)
	}(slices.Clone(StrategyNames), slices.Clone(EstateStrategyNames))
	plain, _ := Builtin(ScenarioDefault)
	estate, _ := Builtin(ScenarioEstateUniform)
	named, _ := Builtin(ScenarioDefault)
	named.Strategies = []string{AWSAdaptive, CloudgGoodput}
	for _, c := range []struct {
		what string
		sc   *Scenario
	}{{"a scenario of the default family", plain}, {"an estate", estate}, {"a scenario naming its strategies", named}} {
		want := slices.Clone(c.sc.StrategyList())
		got := c.sc.StrategyList()
		got[0] = "edited"
		fresh, _ := Builtin(ScenarioDefault)
		if c.sc.Estate != nil {
			fresh, _ = Builtin(ScenarioEstateUniform)
		}
		if c.sc.Strategies != nil {
			fresh = c.sc
		}
		if after := fresh.StrategyList(); !slices.Equal(after, want) {
			t.Errorf("%s: once the list its StrategyList returned was edited, StrategyList (a later scenario's of the family, or its own) returns %v, want %v", c.what, after, want)
		}
	}
}
