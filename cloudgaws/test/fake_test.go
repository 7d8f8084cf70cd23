package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// The fake AWS endpoint: EC2 (ec2query XML), STS and IAM (awsQuery XML)
// and Secrets Manager (awsJson1.1), the three wire protocols of the clients
// the tests drive. Each operation answers from a script, attempt by
// attempt; every request is recorded.

const (
	testAccount = "123456789012"
	testRegion  = "us-east-1"
)

// reply is one scripted answer. A zero status is the operation's success.
type reply struct {
	status int
	code   string
	msg    string
	header map[string]string
	fields map[string]any // more members of a JSON error body (DynamoDB's CancellationReasons)
}

// Scripted answers.
var (
	ok              = reply{}
	ec2Throttle     = reply{status: 503, code: "RequestLimitExceeded", msg: "Request limit exceeded."}
	stsThrottle     = reply{status: 400, code: "Throttling", msg: "Rate exceeded"}
	jsonThrottle    = reply{status: 400, code: "ThrottlingException", msg: "Rate exceeded"}
	ec2Internal     = reply{status: 500, code: "InternalError", msg: "An internal error has occurred"}
	ec2Unauthorized = reply{status: 403, code: "UnauthorizedOperation", msg: "You are not authorized to perform this operation."}
	tooManyRequests = func(retryAfter string) reply {
		return reply{status: 429, code: "ThrottlingException", msg: "Too many requests", header: map[string]string{"Retry-After": retryAfter}}
	}
	amzRetryAfterThrott = func(ms string) reply {
		return reply{status: 400, code: "ThrottlingException", msg: "Rate exceeded", header: map[string]string{"X-Amz-Retry-After": ms}}
	}
)

type fakeAWS struct {
	t *testing.T // nil in benchmarks

	mu       sync.Mutex
	scripts  map[string]func(n int) reply // "DescribeVpcs" -> answer for the n-th attempt (1-based)
	counts   map[string]int
	times    map[string][]time.Time
	inFlight int
	maxIn    int
	hold     func(r *http.Request) // called while a request is in flight
	vpcPages int                   // DescribeVpcs pages (default 1)
	noTimes  bool                  // do not record send times (benchmarks)
}

func newFake(t *testing.T) *fakeAWS {
	return &fakeAWS{t: t, scripts: map[string]func(int) reply{}, counts: map[string]int{}, times: map[string][]time.Time{}}
}

// script answers op's n-th attempt with replies[n-1], and the last reply
// after that.
func (f *fakeAWS) script(op string, replies ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripts[op] = func(n int) reply { return replies[min(n, len(replies))-1] }
}

// always answers every attempt of op with r.
func (f *fakeAWS) always(op string, r reply) { f.script(op, r) }

func (f *fakeAWS) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

func (f *fakeAWS) sentAt(op string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.times[op]...)
}

func (f *fakeAWS) maxInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxIn
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	proto, op := "", ""
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		proto = "json"
		_, op, _ = strings.Cut(target, ".")
	} else {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		op = form.Get("Action")
		proto = "ec2"
		switch form.Get("Version") {
		case "2011-06-15":
			proto = "sts"
		case "2010-05-08":
			proto = "iam"
		}
		r.Form = form
	}
	f.mu.Lock()
	f.counts[op]++
	n := f.counts[op]
	if !f.noTimes {
		f.times[op] = append(f.times[op], time.Now())
	}
	script := f.scripts[op]
	f.inFlight++
	f.maxIn = max(f.maxIn, f.inFlight)
	hold := f.hold
	pages := max(f.vpcPages, 1)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if hold != nil {
		hold(r)
	}
	rep := ok
	if script != nil {
		rep = script(n)
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status != 0 {
		writeError(w, proto, rep)
		return
	}
	switch proto {
	case "json":
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(map[string]string{
			"ARN":          "arn:aws:secretsmanager:us-east-1:" + testAccount + ":secret:db-AbCdEf",
			"Name":         "db",
			"SecretString": "s3cr3t",
		})
	case "sts":
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<GetCallerIdentityResult><Arn>arn:aws:iam::%[1]s:user/alice</Arn><UserId>AIDAEXAMPLE</UserId><Account>%[1]s</Account></GetCallerIdentityResult>
<ResponseMetadata><RequestId>01234567-89ab-cdef-0123-456789abcdef</RequestId></ResponseMetadata>
</GetCallerIdentityResponse>`, testAccount)
	case "iam":
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<%[1]sResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><%[1]sResult><IsTruncated>false</IsTruncated></%[1]sResult>
<ResponseMetadata><RequestId>01234567-89ab-cdef-0123-456789abcdef</RequestId></ResponseMetadata></%[1]sResponse>`, op)
	default:
		w.Header().Set("Content-Type", "text/xml")
		switch op {
		case "DescribeVpcs":
			page := 1
			if tok := r.Form.Get("NextToken"); tok != "" {
				fmt.Sscanf(tok, "page-%d", &page)
			}
			next := ""
			if page < pages {
				next = fmt.Sprintf("<nextToken>page-%d</nextToken>", page+1)
			}
			fmt.Fprintf(w, `<DescribeVpcsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
<requestId>req-%[1]d</requestId><vpcSet><item><vpcId>vpc-%[1]d</vpcId><cidrBlock>10.%[1]d.0.0/16</cidrBlock><state>available</state></item></vpcSet>%[2]s
</DescribeVpcsResponse>`, page, next)
		default:
			fmt.Fprintf(w, `<%[1]sResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>req-1</requestId></%[1]sResponse>`, op)
		}
	}
}

func writeError(w http.ResponseWriter, proto string, rep reply) {
	switch proto {
	case "json":
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(rep.status)
		body := map[string]any{"__type": rep.code, "message": rep.msg}
		for k, v := range rep.fields {
			body[k] = v
		}
		_ = json.NewEncoder(w).Encode(body)
	case "sts", "iam":
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>req-err</RequestId></ErrorResponse>`, rep.code, rep.msg)
	default:
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>req-err</RequestID></Response>`, rep.code, rep.msg)
	}
}

// memClient is an aws.HTTPClient that serves each request with the fake's
// handler on the calling goroutine, without sockets, so that whole calls
// run inside a testing/synctest bubble (in virtual time).
type memClient struct{ h http.Handler }

func (c memClient) Do(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, &url.Error{Op: req.Method, URL: req.URL.String(), Err: err}
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// awsConfig is a config for the fake endpoint: in memory when srv is nil,
// else over srv's loopback socket.
func awsConfig(f *fakeAWS, srv *httptest.Server) aws.Config {
	cfg := aws.Config{
		Region: testRegion,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test"}, nil
		}),
	}
	if srv != nil {
		cfg.HTTPClient = srv.Client()
		cfg.BaseEndpoint = aws.String(srv.URL)
	} else {
		cfg.HTTPClient = memClient{f}
		cfg.BaseEndpoint = aws.String("http://aws.fake")
	}
	return cfg
}

// loopbackConfig is a config for a loopback server of f, closed when the
// test ends.
func loopbackConfig(t *testing.T, f *fakeAWS) aws.Config {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return awsConfig(f, srv)
}

// governed returns an in-memory config for the fake endpoint, installed
// with a fresh governor at rc, and the governor. Its clients retry in
// standard mode unless opts say otherwise: the adaptive retryer's
// client-side token bucket can spin without advancing a synctest bubble's
// clock (a wait that rounds to 0 ns while its bucket holds 0.99999...
// tokens; the wall clock always moves on), so adaptive mode is tested
// over loopback TCP (TestAdaptiveModeOverTCP).
func governed(t *testing.T, f *fakeAWS, rc resilience.Config, opts ...cloudgaws.Option) (aws.Config, *resilience.Governor) {
	t.Helper()
	g, err := resilience.NewGovernor(rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := awsConfig(f, nil)
	base := []cloudgaws.Option{cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard)}
	if err := cloudgaws.Install(&cfg, testAccount, append(base, opts...)...); err != nil {
		t.Fatal(err)
	}
	return cfg, g
}

func ptr[T any](v T) *T { return &v }

// scopeStats returns the counters of a service scope in s.
func scopeStats(g *resilience.Governor, s *resilience.Stats, key string) resilience.Counters {
	return g.Summary(s).Scopes[mustScope(key)]
}

const ec2Key = "aws/" + testAccount + "/" + testRegion + "/ec2"

// vpcsScope is the scope of EC2's DescribeVpcs (describeVpcs) in the
// fake's account and region.
var vpcsScope = resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "ec2", Operation: "DescribeVpcs"}

func describeVpcs(ctx context.Context, c *ec2.Client) error {
	_, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	return err
}

func getCallerIdentity(ctx context.Context, c *sts.Client) error {
	_, err := c.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	return err
}

func getSecret(ctx context.Context, c *secretsmanager.Client) error {
	_, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("db")})
	return err
}
