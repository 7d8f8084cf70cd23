// Command install shows cloudgaws's one-line install on an aws.Config.
//
// By default it lists VPCs from a fake EC2 endpoint it starts on
// 127.0.0.1, which throttles the first request for the second page, and
// prints what the governor saw, with a config of its own: your AWS
// configuration (profile, environment) is not read:
//
//	go run ./cloudgaws/examples/install
//
// With -real it uses your AWS configuration (credentials, region) instead.
// The account the credentials act in is read from them, or asked of STS
// once (cloudgaws.AccountID), unless -account names it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

func main() {
	useAWS, account, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // written with the usage
	}
	if err := run(context.Background(), os.Stdout, useAWS, account); err != nil {
		fmt.Fprintln(os.Stderr, "install:", err)
		os.Exit(1)
	}
}

// parseArgs reads the command line: -real and -account, nothing else. A
// word that is no flag (an account given without -account) is an error,
// written to stderr with the usage, not a run that asks STS instead.
func parseArgs(args []string, stderr io.Writer) (useAWS bool, account string, err error) {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&useAWS, "real", false, "call AWS with your configuration instead of a local fake endpoint")
	fs.StringVar(&account, "account", "", "the account the credentials act in (default: ask STS GetCallerIdentity)")
	if err := fs.Parse(args); err != nil {
		return false, "", err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments %q (an account is given with -account)", fs.Args())
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return false, "", err
	}
	return useAWS, account, nil
}

func run(ctx context.Context, w io.Writer, useAWS bool, account string) error {
	var cfg aws.Config
	if useAWS {
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return err
		}
	} else {
		// The fake's config is made here, not loaded: the machine's AWS
		// configuration (a profile, AWS_MAX_ATTEMPTS, a CA bundle) is for
		// its accounts, not for the fake, and would change what this prints
		// or fail it.
		srv := httptest.NewServer(fakeEC2())
		defer srv.Close()
		cfg = aws.Config{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(srv.URL),
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		}
	}

	var err error
	if account == "" {
		if account, err = cloudgaws.AccountID(ctx, cfg); err != nil {
			return err
		}
	}
	if err := cloudgaws.Install(&cfg, account); err != nil {
		return err // every client made from cfg would work, ungoverned
	}
	fmt.Fprintln(w, "account", account)

	ctx, stats := resilience.WithStats(ctx)
	pages := ec2.NewDescribeVpcsPaginator(ec2.NewFromConfig(cfg), &ec2.DescribeVpcsInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, v := range page.Vpcs {
			fmt.Fprintln(w, aws.ToString(v.VpcId))
		}
	}
	t := resilience.Default().Summary(stats).Totals
	fmt.Fprintf(w, "calls %d, throttled %d, retries %d, gave up %d\n", t.Calls, t.Throttled, t.Retries, t.GaveUp)
	return nil
}

// fakeEC2 answers DescribeVpcs with three pages of one VPC each, and
// throttles the first request for page 2 (RequestLimitExceeded, 503); it
// also answers STS's GetCallerIdentity, for account 123456789012.
func fakeEC2() http.Handler {
	var throttled atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		if form.Get("Action") == "GetCallerIdentity" {
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprint(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`)
			return
		}
		page := strings.TrimPrefix(form.Get("NextToken"), "page-")
		if page == "" {
			page = "1"
		}
		w.Header().Set("Content-Type", "text/xml")
		if page == "2" && throttled.CompareAndSwap(false, true) {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>r</RequestID></Response>`)
			return
		}
		next := map[string]string{"1": "<nextToken>page-2</nextToken>", "2": "<nextToken>page-3</nextToken>"}[page]
		fmt.Fprintf(w, `<DescribeVpcsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><vpcSet><item><vpcId>vpc-%s</vpcId></item></vpcSet>%s</DescribeVpcsResponse>`, page, next)
	})
}
