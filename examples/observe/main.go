// Command observe runs a workload through the governor against an
// in-process fake cloud that throttles, and serves what the governor does:
// Prometheus metrics at /metrics (cloudgotel's instruments through the
// OpenTelemetry Prometheus exporter) and the live status page at
// /debug/cloudg (package statuspage). It prints both URLs, and after the
// duration the run's report, and exits.
//
//	go run ./examples/observe -addr 127.0.0.1:8089 -duration 30s
//
// It needs no credentials and sends nothing anywhere.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/statuspage"
)

// options are the command's flags.
type options struct {
	addr     string
	duration time.Duration
	perScope int
	verbose  bool
}

func main() {
	o, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // written with the usage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "observe:", err)
		os.Exit(1)
	}
}

// parseArgs reads the command line. A -duration that is not positive, a
// -workers under 1 or a word that is no flag is an error, written to
// stderr with the usage, not a run of nothing or of other settings.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("observe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8089", "where to serve /metrics and /debug/cloudg")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long to run the workload")
	fs.IntVar(&o.perScope, "workers", 2, "calls at once per scope")
	fs.BoolVar(&o.verbose, "v", false, "log the governor's events (Info and above) to stderr")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.duration <= 0:
		err = fmt.Errorf("-duration %s: want a duration > 0", o.duration)
	case o.perScope < 1:
		err = fmt.Errorf("-workers %d: want at least 1", o.perScope)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		fs.Usage()
	}
	return o, err
}

// run serves the endpoints on o.addr and runs the workload for
// o.duration, or until ctx is done, then prints the run's report to w.
func run(ctx context.Context, w io.Writer, o options) error {
	// The OpenTelemetry pipeline: a meter provider whose reader is the
	// Prometheus exporter, registered in a registry of its own.
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())

	// The governor, instrumented by cloudgotel in one call: the Observer
	// records its events, and its gauges read the governor made with it.
	obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(mp))
	if err != nil {
		return err
	}
	defer obs.Unregister()
	govOpts := []resilience.GovernorOption{resilience.WithObserver(obs)}
	if o.verbose {
		govOpts = append(govOpts, resilience.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	}
	cfg, err := resilience.ParseConfig([]byte(config))
	if err != nil {
		return err
	}
	gov, err := resilience.NewGovernor(cfg, govOpts...)
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("GET /debug/cloudg", statuspage.New(statuspage.WithGovernor(gov)))
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(w, "metrics: %s/metrics\nstatus:  %s/debug/cloudg\n", base, base)

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	ctx, stats := resilience.WithStats(ctx)
	start := time.Now()
	work(ctx, gov, newFakeCloud(estate, gov.Clock()), max(1, o.perScope))

	shut, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(w, "after %s:\n", time.Since(start).Round(time.Second))
	for _, line := range stats.Messages() {
		fmt.Fprintln(w, " ", line)
	}
	fmt.Fprintln(w, "totals:", gov.Summary(stats).Totals)
	return nil
}
