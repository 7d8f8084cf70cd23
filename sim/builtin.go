package sim

import (
	"sort"
	"time"
)

// Builtin scenario names.
const (
	ScenarioDefault   = "default"    // 64 workers, 2,400 calls over two EC2 actions, true 10 rps per action vs a configured 20
	ScenarioDrop      = "drop"       // the limit drops from 20 to 8 per action at t = 60 s
	ScenarioTenant    = "tenant"     // 20 rps per action, of which an invisible second tenant takes a share that moves every 10 s
	ScenarioOutage    = "outage"     // the default plus 2% transient 5xx, a 30 s outage and Retry-After hints; breaker_wait on
	ScenarioModel10   = "model-10"   // the discrete-event model's setup, true 10 rps, one action
	ScenarioModelDrop = "model-drop" // the discrete-event model's setup, 20 -> 8 rps at 60 s, one action
)

var builtins = map[string]func() *Scenario{
	ScenarioDefault:   defaultScenario,
	ScenarioDrop:      dropScenario,
	ScenarioTenant:    tenantScenario,
	ScenarioOutage:    outageScenario,
	ScenarioModel10:   model10Scenario,
	ScenarioModelDrop: modelDropScenario,

	ScenarioEstateUniform: estateUniformScenario,
	ScenarioEstatePaused:  estatePausedScenario,
	ScenarioEstateDead:    estateDeadScenario,
	ScenarioEstateTenant:  estateTenantScenario,
}

// BuiltinNames lists the built-in scenarios.
func BuiltinNames() []string {
	var out []string
	for k := range builtins {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Builtin returns a fresh copy of a built-in scenario.
func Builtin(name string) (*Scenario, bool) {
	f, ok := builtins[name]
	if !ok {
		return nil, false
	}
	return f(), true
}

// base is an EC2-like estate: a token bucket of burst 100 refilled at 20
// per second per action, 50 ms median latency, and clients configured with
// the EC2 default of the governor (20 rps, burst 100) and its retry bounds
// (8 retries, 0.5 s base, 60 s cap, breaker after 5 failures for 60 s).
func base() *Scenario {
	return &Scenario{
		Seed:      1,
		TimeLimit: time.Hour,
		Workload: Workload{
			Workers: 64,
			Calls:   2400,
			Actions: []string{"DescribeInstances", "DescribeVolumes"},
		},
		Provider: ProviderSpec{
			Service:       "ec2",
			Account:       "123456789012",
			Region:        "us-east-1",
			Rate:          20,
			Burst:         100,
			LatencyMedian: 50 * time.Millisecond,
			LatencyP99:    150 * time.Millisecond,
		},
		Client: ClientSpec{
			Rate:             20,
			Burst:            100,
			MaxRetries:       8,
			BaseDelay:        500 * time.Millisecond,
			MaxBackoff:       60 * time.Second,
			BreakerThreshold: 5,
			BreakerDelay:     60 * time.Second,
		},
	}
}

func defaultScenario() *Scenario {
	s := base()
	s.Name = ScenarioDefault
	s.Description = "64 workers, 2,400 describe calls over two EC2 actions; true limit 10 rps per action (burst 100) against a configured 20"
	s.Provider.Rate = 10
	// The discrete-event model's figures for true 10 (one bucket, 2,400
	// calls, fixed 50 ms).
	s.Model = map[string]ModelFigures{
		AWSAdaptive:   {Efficiency: 0.91, Rejected: 0.29},
		CloudgAIMD:    {Efficiency: 0.62, Rejected: 0.035},
		CloudgGoodput: {Efficiency: 1.00, Rejected: 0.030},
	}
	return s
}

func dropScenario() *Scenario {
	s := base()
	s.Name = ScenarioDrop
	s.Description = "64 workers, 4,800 describe calls over two EC2 actions; limit 20 rps per action (burst 100), dropping to 8 at t = 60 s"
	// 2,400 calls per action: per action the model's drop scenario, and
	// enough work left at 60 s for the drop to matter.
	s.Workload.Calls = 4800
	s.Provider.Changes = []Change{{At: 60 * time.Second, Rate: 8}}
	s.Model = map[string]ModelFigures{
		CloudgAIMD:    {Makespan: 309 * time.Second, Rejected: 0.036},
		CloudgGoodput: {Makespan: 203 * time.Second, Rejected: 0.035},
	}
	return s
}

// tenantScenario is the default workload against a limit that moves: an
// invisible second tenant takes from 0 to 16 of the 20 rps of each action,
// a level drawn every 10 s by a random walk from the seed (from 10 rps, by
// up to 4 rps a step), so that the limit left to the client moves between
// 4 and 20 rps at times no client is told.
func tenantScenario() *Scenario {
	s := base()
	s.Name = ScenarioTenant
	s.Description = "default workload; provider 20 rps per action, of which an invisible second tenant takes 0 to 16, moving every 10 s (a random walk from 10 by up to 4, seeded)"
	s.Provider.Tenant = &Tenant{Rate: 16, Walk: &Walk{Every: 10 * time.Second, Step: 0.25, Start: 0.625}}
	return s
}

func outageScenario() *Scenario {
	s := defaultScenario()
	s.Name = ScenarioOutage
	s.Description = "the default scenario plus 2% transient 500s, a full outage from 30 s to 60 s, and Retry-After hints; the governor waits for its breakers' verdicts (breaker_wait)"
	s.Model = nil
	s.Provider.TransientRate = 0.02
	s.Provider.Outages = []Window{{From: 30 * time.Second, To: 60 * time.Second}}
	s.Provider.RetryAfter = true
	// The calls wait out the outage within their deadline rather than
	// fail on an open breaker (scenarios/outage-failfast.yaml turns it
	// off: the governor's default).
	s.Governor.AWS.BreakerWait = true
	return s
}

func model10Scenario() *Scenario {
	s := base()
	s.Name = ScenarioModel10
	s.Description = "the discrete-event model's setup: one bucket (burst 100, 10 rps), 64 workers, 2,400 calls, fixed 50 ms latency"
	s.Workload.Actions = []string{"DescribeInstances"}
	s.Provider.Rate = 10
	s.Provider.LatencyP99 = s.Provider.LatencyMedian
	s.Model = defaultScenario().Model
	return s
}

func modelDropScenario() *Scenario {
	s := model10Scenario()
	s.Name = ScenarioModelDrop
	s.Description = "the discrete-event model's setup: one bucket (burst 100) at 20 rps dropping to 8 at t = 60 s, 64 workers, 2,400 calls"
	s.Provider.Rate = 20
	s.Provider.Changes = []Change{{At: 60 * time.Second, Rate: 8}}
	s.Model = dropScenario().Model
	return s
}
