// Package sim is a throttling simulator: it runs a workload of cloud API
// calls against a simulated provider that throttles, once per client
// strategy, and measures what each strategy got out of the provider.
//
// The provider (Provider) models an EC2-like API: a token bucket per action,
// refilled at the true rate, which may change mid-run or be shared with an
// invisible second tenant whose share may move over time (a seeded random
// walk); log-normal latency; a share of transient 500s; outage windows
// answering 503; optional Retry-After hints; pauses, in which an action is
// throttled with the time left as Retry-After; and actions throttled for
// good. Its answers
// have the shapes the AWS SDK returns (APIError), so that every client
// classifies them as it would a real answer.
//
// The strategies (StrategyNames) are the clients compared: the AWS SDK's
// standard and adaptive retryers, run through the SDK's own retry
// middleware; an x/time/rate limiter with a hand-written retry loop;
// failsafe-go's retry policy, circuit breaker and rate limiter; this
// repository's governor (resilience.Do) with its AIMD controller
// (CloudgAIMD) and its goodput controller (CloudgGoodput); and what a user
// of the AWS SDK installs, cloudgaws.Install at its defaults under the
// SDK's retry middleware (CloudgAWS, CloudgAWSGoodput). One reference runs
// only when a scenario names it (ReferenceNames): Oracle, which knows the
// provider's limit at every instant and sends at it, the measure of what
// following the limit perfectly gives.
//
// The estate scenarios (ScenarioEstateUniform and its paused, dead and
// tenant variants) are a scan instead: accounts x regions x services,
// each with a listing task that pages and submits a detail task per item,
// every scope throttled at its own limit (1 to 20 rps), run by a
// scheduler over 16 workers (EstateStrategyNames): a plain FIFO pool over
// resilience.Do or over the AWS SDK's adaptive mode, CloudQuery's shuffle
// and random queue, and package pool with either controller. Their
// figures are the makespan against the ideal, when the scopes a pause or
// a dead operation does not touch were done, and the calls lost and
// recorded in the scan's resilience.Ledger.
//
// A Scenario describes one run: the workload (workers, calls, actions), the
// provider, the settings of the clients that are not the governor, the
// governor's ratelimit configuration and cloudgaws's aws section. Builtin returns a built-in scenario by
// name (BuiltinNames lists them); Parse and LoadFile read one from YAML,
// starting from a built-in one, with errors (*Error) naming the key path.
//
// NewRun(sc, strategy).Execute(ctx, clock) runs one strategy and returns its
// Result: makespan, goodput (successful calls over what the provider could
// have served), requests rejected, calls lost, latency quantiles, and a
// sample per second of the run. WriteTable, WriteRates and WriteChart report
// results side by side; a Sweep holds the runs of several seeds, and
// WriteSweep and WriteCSV report each figure's spread over them and the
// seeds on which a strategy beat a baseline.
//
// Everything in a run (the provider, the workers, the strategies and the
// governor) reads and sleeps on one Clock. Inside a testing/synctest bubble,
// SystemClock is the bubble's virtual time: a run is reproducible and costs
// only its CPU time, and its figures do not depend on the scheduler (the
// AWS SDK's sleeps end on a 10 microsecond grid, a nanosecond apart per
// call; runs that wait for a breaker's verdict are the exception, since
// the waiters wake at one instant). The command cloudg-sim
// (sim/cmd/cloudg-sim) runs every strategy at once on a ScaledClock, in
// real time made faster, and prints the table, or over several seeds the
// sweep, and a PNG chart when asked. The AWS SDK reads the time through
// package variables of its own: UseSDKClock points them at the run's
// clock.
package sim
