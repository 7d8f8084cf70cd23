package test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// BenchmarkDescribeVpcs is one DescribeVpcs round trip to the fake
// endpoint, ungoverned and governed, over loopback TCP (what a program
// sees) and in memory (the SDK's and the governor's own cost, without the
// network stack). The governed leaf is set far above the benchmark's rate
// so that the numbers are the governor's overhead, not its pacing.
//
//	go test -run '^$' -bench DescribeVpcs -benchmem ./cloudgaws/
func BenchmarkDescribeVpcs(b *testing.B) {
	for _, transport := range []string{"tcp", "memory"} {
		for _, governed := range []bool{false, true} {
			name := transport + "/ungoverned"
			if governed {
				name = transport + "/governed"
			}
			b.Run(name, func(b *testing.B) {
				f := newFake(nil)
				f.noTimes = true
				var srv *httptest.Server
				if transport == "tcp" {
					srv = httptest.NewServer(f)
					defer srv.Close()
				}
				client := overheadClient(b, f, srv, governed)
				ctx := context.Background()
				if err := describeVpcs(ctx, client); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := describeVpcs(ctx, client); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A governed call allocates three objects more than the same call
// ungoverned: the call's Guard, the watch that gives its slot back should
// it be dropped, and the call state that is the context of the rest of
// its stack. Nothing more on success: what runs only after an error (the
// resend's check of the SDK's attempts, the reading of whether a failed
// attempt reached the HTTP client) must not allocate before it, and the
// governor adds no middleware to the stack's Deserialize step. (Under
// -race, sync.Pool drops some of what it is given, and the counts vary
// by one from run to run: raceSlack allows it.)
func TestGovernedCallAllocations(t *testing.T) {
	allocs := func(governed bool) float64 {
		f := newFake(nil)
		f.noTimes = true
		client := overheadClient(t, f, nil, governed)
		ctx := context.Background()
		return testing.AllocsPerRun(200, func() {
			if err := describeVpcs(ctx, client); err != nil {
				t.Fatal(err)
			}
		})
	}
	bare, governed := allocs(false), allocs(true)
	if governed > bare+3+raceSlack {
		t.Fatalf("a governed DescribeVpcs allocates %v objects, the ungoverned one %v: want at most 3 more (%d more under -race)", governed, bare, raceSlack)
	}
}

// overheadClient is an EC2 client of the fake endpoint (in memory when srv
// is nil), in the SDK's standard retry mode, governed or not; the governed
// leaf is far above any test's rate, so that what is measured is the
// governor's overhead, not its pacing.
func overheadClient(tb testing.TB, f *fakeAWS, srv *httptest.Server, governed bool) *ec2.Client {
	tb.Helper()
	cfg := awsConfig(f, srv)
	cfg.RetryMode = aws.RetryModeStandard
	if governed {
		installOverhead(tb, &cfg)
	}
	return ec2.NewFromConfig(cfg)
}

// installOverhead installs cfg as overheadClient does.
func installOverhead(tb testing.TB, cfg *aws.Config) {
	tb.Helper()
	g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
		"ec2": {MaxRPS: 1e6, Burst: 1e6},
	}}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := cloudgaws.Install(cfg, testAccount, cloudgaws.WithGovernor(g)); err != nil {
		tb.Fatal(err)
	}
}

// classifyErrors are errors the classifier reads, with the package's
// reader registered: one of the program's own, an AWS API error under the
// SDK's operation error, and DynamoDB's TransactionCanceledException
// there, whose CancellationReasons the reader reads by reflection.
var classifyErrors = []struct {
	name string
	err  error
}{
	{"plain", errors.New("boom")},
	{"api error", &smithy.OperationError{ServiceID: "EC2", OperationName: "DescribeVpcs",
		Err: &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "no"}}},
	{"transaction cancelled", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "TransactWriteItems",
		Err: &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{
			{Code: aws.String("None")}, {Code: aws.String("ThrottlingError")},
		}}}},
}

// BenchmarkClassify is resilience.Classify of an error of each kind in
// classifyErrors: the cost the package's reader adds to every
// classification of the process.
//
//	cd cloudgaws/test && go test -run '^$' -bench Classify -benchmem
func BenchmarkClassify(b *testing.B) {
	for _, c := range classifyErrors {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resilience.Classify(c.err)
			}
		})
	}
}

// The package's reader runs at every error of every chain the classifier
// reads in the process: for an error that is not a
// TransactionCanceledException it reads by method and type only, and
// allocates nothing; neither does the reflection over a cancellation's
// reasons.
func TestClassifyAllocatesNothing(t *testing.T) {
	for _, c := range classifyErrors {
		if n := testing.AllocsPerRun(100, func() { resilience.Classify(c.err) }); n != 0 {
			t.Errorf("Classify(%s) allocates %v objects, want none", c.name, n)
		}
	}
}
