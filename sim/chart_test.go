package sim

import (
	"slices"
	"testing"
)

// Every strategy a chart can draw has a color of its own, opaque, told
// apart from the others a chart of its family draws beside it: a strategy
// without one would be drawn in the zero color, transparent, its lines
// invisible (the oracle reference, every estate scheduler).
func TestChartColorsEveryStrategy(t *testing.T) {
	for _, family := range [][]string{slices.Concat(StrategyNames, ReferenceNames), EstateStrategyNames} {
		seen := map[[3]uint8]string{}
		for _, name := range family {
			c, ok := strategyColors[name]
			if !ok || c.A != 0xff {
				t.Errorf("strategy %s: color %v, want an opaque one of its own", name, c)
				continue
			}
			rgb := [3]uint8{c.R, c.G, c.B}
			if other, dup := seen[rgb]; dup {
				t.Errorf("strategies %s and %s share the color %v", other, name, c)
			}
			seen[rgb] = name
		}
	}
}
