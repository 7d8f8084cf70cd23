// Package sim is a throttling simulator: it runs a workload of cloud API
// calls against a simulated provider that throttles, once per client
// strategy, and measures what each strategy got out of the provider.
//
// The provider (Provider) models an EC2-like API: a token bucket per action,
// refilled at the true rate, which may change mid-run or be shared with an
// invisible second tenant; log-normal latency; a share of transient 500s;
// outage windows answering 503; and optional Retry-After hints. Its answers
// have the shapes the AWS SDK returns (APIError), so that every client
// classifies them as it would a real answer.
//
// The strategies (StrategyNames) are the clients compared: the AWS SDK's
// standard and adaptive retryers, run through the SDK's own retry
// middleware; an x/time/rate limiter with a hand-written retry loop;
// failsafe-go's retry policy, circuit breaker and rate limiter; and this
// repository's governor (resilience.Do) with its AIMD controller
// (CloudgAIMD) and its goodput controller (CloudgGoodput).
//
// A Scenario describes one run: the workload (workers, calls, actions), the
// provider, the settings of the clients that are not the governor, and the
// governor's ratelimit configuration. Builtin returns a built-in scenario by
// name (BuiltinNames lists them); Parse and LoadFile read one from YAML,
// starting from a built-in one, with errors (*Error) naming the key path.
//
// NewRun(sc, strategy).Execute(ctx, clock) runs one strategy and returns its
// Result: makespan, goodput (successful calls over what the provider could
// have served), requests rejected, calls lost, latency quantiles, and a
// sample per second of the run. WriteTable, WriteRates and WriteChart report
// results side by side.
//
// Everything in a run (the provider, the workers, the strategies and the
// governor) reads and sleeps on one Clock. Inside a testing/synctest bubble,
// SystemClock is the bubble's virtual time: a run is reproducible and costs
// only its CPU time. The command cloudg-sim (sim/cmd/cloudg-sim) runs every
// strategy at once on a ScaledClock, in real time made faster, and prints the
// table and a PNG chart. The AWS SDK reads the time through package variables
// of its own: UseSDKClock points them at the run's clock.
package sim
