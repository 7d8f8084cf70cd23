package sim_test

import (
	"errors"
	"fmt"

	"github.com/cloudg/cloudg/sim"
)

// A scenario file starts from a built-in scenario and replaces what it sets;
// a mistake is a *sim.Error naming its key path, the governor's ratelimit
// section included.
func ExampleParse() {
	sc, err := sim.Parse([]byte(`
name: half
base: default
provider: {rate: 5}
strategies: [aws-adaptive, cloudg-goodput]
ratelimit:
  aws: {max_rps: 10}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sc.Summary())
	fmt.Println("ideal makespan:", sc.IdealMakespan())
	fmt.Println("strategies:", sc.StrategyList())
	fmt.Println("governor max_rps:", sc.Governor.AWS.MaxRPS)

	for _, doc := range []string{"provider: {rat: 5}", "ratelimit: {aws: {max_rps: 0}}"} {
		_, err := sim.Parse([]byte(doc))
		var se *sim.Error
		if errors.As(err, &se) {
			fmt.Printf("%s: %s\n", se.Path, se.Msg)
		}
	}
	// Output:
	// 64 workers, 2400 calls over DescribeInstances, DescribeVolumes; provider 5 rps, burst 100 per action; latency 0.05s median, 0.15s p99; clients configured at 20 rps, burst 100 per action
	// ideal makespan: 3m40s
	// strategies: [aws-adaptive cloudg-goodput]
	// governor max_rps: 10
	// provider.rat: unknown key
	// ratelimit.aws.max_rps: must be > 0
}
