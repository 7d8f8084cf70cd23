package test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// Installing again on a copy of an installed config with the target
// account id, as the README says to after an AssumeRole
// (cloudgaws.Install(&assumed, account)), changes the account and keeps
// the rest of the earlier installation: its governor (WithGovernor), not
// the process governor, whose buckets, breakers, budget and stats the
// program does not look at, and its service names (WithServiceName), as it
// keeps the retry settings. An option given again replaces the earlier
// installation's.
func TestReinstallKeepsTheGovernorAndServiceNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		base := awsConfig(f, nil)
		if err := cloudgaws.Install(&base, "*", cloudgaws.WithGovernor(g), cloudgaws.WithServiceName("EC2", "compute")); err != nil {
			t.Fatal(err)
		}
		assumed := base.Copy()
		if err := cloudgaws.Install(&assumed, testAccount); err != nil {
			t.Fatal(err)
		}
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(assumed)); err != nil {
			t.Fatal(err)
		}
		want := "aws/" + testAccount + "/" + testRegion + "/compute"
		if s := g.Summary(stats).Scopes[mustScope(want)]; s.Calls != 1 {
			t.Fatalf("scopes %v, want one call in %s: the reinstall dropped the installation's service name", g.Summary(stats).Scopes, want)
		}
		if tokens(g, "compute") != tokens(g, "unused")-1 {
			t.Fatalf("the installation's governor spent no token of the call's leaf: the reinstall governed it with the process governor")
		}
		if sc, err := cloudgaws.Scope(assumed, ec2.ServiceID, "DescribeVpcs"); err != nil || sc.String() != want+"/DescribeVpcs" {
			t.Fatalf("Scope = %v, %v; want %s/DescribeVpcs", sc, err, want)
		}

		// Options given again replace the earlier installation's.
		g2, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		other := base.Copy()
		if err := cloudgaws.Install(&other, testAccount, cloudgaws.WithGovernor(g2), cloudgaws.WithServiceName("EC2", "ec2x")); err != nil {
			t.Fatal(err)
		}
		ctx, stats = resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(other)); err != nil {
			t.Fatal(err)
		}
		if s := g2.Summary(stats).Scopes[mustScope("aws/"+testAccount+"/"+testRegion+"/ec2x")]; s.Calls != 1 || tokens(g2, "ec2x") != tokens(g2, "unused")-1 {
			t.Fatalf("scopes %v, want one call under the new name, governed by the new governor", g2.Summary(stats).Scopes)
		}
	})
}

// tokens is what g's leaf of DescribeVpcs under the service name holds
// now, in virtual time that has not moved.
func tokens(g *resilience.Governor, service string) float64 {
	return g.Inspect(resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: service, Operation: "DescribeVpcs"}).Leaf.Tokens
}

// A failure to install again (an account id read with its newline, after
// an AssumeRole) is logged to the logger of the earlier installation
// (WithLogger), as the installation's other settings are kept, not to
// slog.Default, where a program that gave its own logger does not look.
func TestReinstallFailureLogsToTheInstallationsLogger(t *testing.T) {
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var dflt bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&dflt, nil)))

	base := awsConfig(newFake(t), nil)
	if err := cloudgaws.Install(&base, "*", cloudgaws.WithLogger(logger)); err != nil {
		t.Fatal(err)
	}
	assumed := base.Copy()
	if err := cloudgaws.Install(&assumed, testAccount+"\n"); err == nil {
		t.Fatal("an account id with its newline: no error")
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "account id") {
		t.Fatalf("the installation's logger got %q, slog.Default %q; want the failure in the installation's", logged.String(), dflt.String())
	}

	// A logger given again replaces the installation's.
	logged.Reset()
	var other bytes.Buffer
	if err := cloudgaws.Install(&assumed, testAccount+"\n", cloudgaws.WithLogger(slog.New(slog.NewTextHandler(&other, nil)))); err == nil {
		t.Fatal("an account id with its newline: no error")
	}
	if logged.Len() != 0 || !strings.Contains(other.String(), "account id") {
		t.Fatalf("the installation's logger got %q, the option's %q; want the failure in the option's", logged.String(), other.String())
	}
}
