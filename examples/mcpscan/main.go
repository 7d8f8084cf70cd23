// Command mcpscan is an MCP server whose scan tool collects a (fake) cloud
// account through the governor, under a live-operation guard: identical
// scans running at once share one collection, a scope collected recently
// is refused with when to retry and the newest cached dataset, and a
// caller's quota and the guard's caps bound what an agent can start. The
// rate_limit_status tool reports the guard and the governor without
// calling any cloud.
//
// It serves MCP over standard input and output, newline-delimited
// JSON-RPC; a line that is no JSON-RPC message is answered with its
// JSON-RPC error, and the session goes on:
//
//	go run ./examples/mcpscan [-config cloudg.yaml]
//
// The configuration's ratelimit section sets the governor
// (resilience.LoadConfig) and the guard (its live_* keys, liveop.LoadConfig).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/cloudg/cloudg/liveop"
	"github.com/cloudg/cloudg/resilience"
)

func main() {
	config, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // written by the flag package, with the usage
	}
	s, err := newScanner(config)
	if err == nil {
		err = serve(context.Background(), s, os.Stdin, os.Stdout, 0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpscan:", err)
		os.Exit(1)
	}
}

// parseArgs reads the command line: -config and nothing else. A word that
// is no flag (a configuration file given without -config) is an error,
// not a server started without the configuration. Errors are written to
// stderr with the usage.
func parseArgs(args []string, stderr io.Writer) (config string, err error) {
	fs := flag.NewFlagSet("mcpscan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&config, "config", "", "a YAML or JSON file with a ratelimit section")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments %q (a configuration file is given with -config)", fs.Args())
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return "", err
	}
	return config, nil
}

// serve serves the tools of s over in and out, newline-delimited JSON-RPC,
// until in ends; a line that is no JSON-RPC message is answered with its
// JSON-RPC error, and the session goes on (lineTransport). max bounds a
// line (0: the SDK's bound).
func serve(ctx context.Context, s *scanner, in io.Reader, out io.Writer, max int) error {
	return newServer(s).Run(ctx, lineTransport(in, out, max))
}

// newScanner reads the configuration file, when there is one, and builds
// the governor and the guard.
func newScanner(path string) (*scanner, error) {
	var (
		rc  resilience.Config
		lc  liveop.Config
		err error
	)
	if path != "" {
		if rc, err = resilience.LoadConfig(path); err != nil {
			return nil, err
		}
		lc, err = liveop.LoadConfig(path)
	} else {
		lc, err = liveop.ParseConfig(nil)
	}
	if err != nil {
		return nil, err
	}
	gov, err := resilience.NewGovernor(rc)
	if err != nil {
		return nil, err
	}
	guard, err := liveop.New(lc)
	if err != nil {
		return nil, err
	}
	// Standard output carries the protocol: the log goes to standard error.
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	return &scanner{gov: gov, guard: guard, estate: newEstate(), log: log, cache: map[string]*Dataset{}}, nil
}
