package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/examples/scan/estate"
	"github.com/cloudg/cloudg/resilience"
)

// The accounts and regions a scan covers.
var (
	accounts = []string{"111111111111", "222222222222", "333333333333"}
	regions  = []string{"us-east-1", "eu-west-1", "ap-southeast-2"}
)

// globalRegion is the region IAM, a global service, is called in.
const globalRegion = "us-east-1"

// The listings' page sizes: with the estate's default sizes, every listing
// but DescribeVpcs and DescribeSecurityGroups takes two pages.
const (
	instancesPage = 20
	subnetsPage   = 10
	groupsPage    = 10
	rolesPage     = 20
	secretsPage   = 20
	tablesPage    = 10
)

// services are the services a scan collects, each a task of its own in
// every account.
var services = []string{"ec2", "iam", "secretsmanager", "dynamodb"}

// regionClients are an account's clients in one region.
type regionClients struct {
	ec2     *ec2.Client
	secrets *secretsmanager.Client
	ddb     *dynamodb.Client
}

// accountClients are the clients of one account, all made from one
// aws.Config installed with cloudgaws.Install.
type accountClients struct {
	cfg     aws.Config // installed: the scopes of its calls (cloudgaws.Scope)
	iam     *iam.Client
	regions map[string]regionClients
}

// loopbackClient is the HTTP client of the scan's SDK clients when the
// estate is served on a loopback port.
func loopbackClient() aws.HTTPClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = 256 // one host serves every service: keep its connections
	})
}

// newClients makes the clients of every account: per account one
// aws.Config with the account's static credentials and the estate as
// endpoint, reached through httpClient, governed by cloudgaws.Install; per
// region a client of each regional service made from it.
func newClients(endpoint string, httpClient aws.HTTPClient, opts []cloudgaws.Option) (map[string]*accountClients, error) {
	out := map[string]*accountClients{}
	for _, acct := range accounts {
		cfg := aws.Config{
			Region:       globalRegion,
			Credentials:  credentials.NewStaticCredentialsProvider(estate.AccessKeyID(acct), "not-a-secret", ""),
			BaseEndpoint: aws.String(endpoint),
			HTTPClient:   httpClient,
		}
		if err := cloudgaws.Install(&cfg, acct, opts...); err != nil {
			return nil, err
		}
		ac := &accountClients{cfg: cfg, iam: iam.NewFromConfig(cfg), regions: map[string]regionClients{}}
		for _, region := range regions {
			ac.regions[region] = regionClients{
				ec2:     ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region }),
				secrets: secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.Region = region }),
				ddb:     dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.Region = region }),
			}
		}
		out[acct] = ac
	}
	return out, nil
}

// pages is the number of pages a listing of n items takes at size items
// a page (one, when there is nothing to list).
func pages(n, size int) int { return max(1, (n+size-1)/size) }

// plan is the calls a complete scan makes in each scope of an estate of
// sizes sz.
func plan(sz estate.Sizes) map[estate.Scope]int {
	p := map[estate.Scope]int{}
	for _, acct := range accounts {
		at := func(region, service, action string, n int) {
			p[estate.Scope{Account: acct, Region: region, Service: service, Action: action}] = n
		}
		at(globalRegion, "iam", "ListRoles", pages(sz.Roles, rolesPage))
		at(globalRegion, "iam", "GetRole", sz.Roles)
		for _, region := range regions {
			at(region, "ec2", "DescribeInstances", pages(sz.Instances, instancesPage))
			at(region, "ec2", "DescribeVpcs", 1)
			at(region, "ec2", "DescribeSubnets", pages(sz.Subnets, subnetsPage))
			at(region, "ec2", "DescribeSecurityGroups", pages(sz.SecurityGroups, groupsPage))
			at(region, "secretsmanager", "ListSecrets", pages(sz.Secrets, secretsPage))
			at(region, "secretsmanager", "DescribeSecret", sz.Secrets)
			at(region, "dynamodb", "ListTables", pages(sz.Tables, tablesPage))
			at(region, "dynamodb", "DescribeTable", sz.Tables)
		}
	}
	return p
}

// total is the number of calls of a plan.
func total(p map[estate.Scope]int) int {
	n := 0
	for _, c := range p {
		n += c
	}
	return n
}

// collection is one account's collection of one service: the task whose
// coverage a ledger records. Its calls are spread over many pool tasks.
type collection struct {
	name   string // <account>/<service>
	ctx    context.Context
	ledger *resilience.Ledger
	failed atomic.Int64 // calls that returned an error to the scanner

	fails map[string]int // failed calls per outcome, under the run's mu

	// The collection's tasks: submitted to the pool, and those that ended
	// with every call a success, at a failed call, or in a panic. The
	// others were dropped unrun, by the pool or by the task itself, when
	// the scan was cancelled before their turn came.
	submitted, done, failedTasks, panicked atomic.Int64
}

// dropped is the number of the collection's tasks that never ran: the
// scan was cancelled first. Each is in the ledger as cancelled.
func (c *collection) dropped() int64 {
	return c.submitted.Load() - c.done.Load() - c.failedTasks.Load() - c.panicked.Load()
}

// silent is the number of the collection's failed calls its ledger did
// not count. The ledger also holds a loss for each task dropped unrun,
// recorded by the pool or the task, and for each panic: a task's,
// recorded as the pool recovers it, and a call's, recorded by the
// governor as well when the panic came from inside a governed call. None
// is a failed call: they do not count against the failed calls.
func (c *collection) silent() int64 {
	calls := int64(c.ledger.Lost()-c.ledger.Count(resilience.LossPanicked)) - c.dropped()
	return max(0, c.failed.Load()-calls)
}

// Outcomes of a call, as the scanner sees its error.
const (
	outcomeOK       = "ok"
	outcomeThrottle = "throttled"
	outcomeCircuit  = "circuit open"
	outcomeBudget   = "retry budget exhausted"
	outcomeDeadline = "deadline exceeded"
	outcomeCanceled = "canceled"
	outcomeOther    = "other error"
)

// outcomeOf names what happened to a call that returned err.
func outcomeOf(err error) string {
	var open *resilience.CircuitOpenError
	var budget *resilience.RetryBudgetExhaustedError
	var api smithy.APIError
	switch {
	case err == nil:
		return outcomeOK
	case errors.As(err, &open):
		return outcomeCircuit
	case errors.As(err, &budget):
		return outcomeBudget
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeDeadline
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	case errors.As(err, &api) && slices.Contains([]string{"RequestLimitExceeded", "Throttling", "ThrottlingException"}, api.ErrorCode()):
		return outcomeThrottle
	default:
		return outcomeOther
	}
}

// scanner is what the runs of a scan share: the clients, governed by one
// governor, the estate they call and the pool that runs their tasks.
type scanner struct {
	gov         *resilience.Governor
	clients     map[string]*accountClients
	est         *estate.Estate
	pool        Pool
	taskTimeout time.Duration
	knobs       []estate.Scope                               // the scopes a scenario makes worse: dead or paused
	beforeTask  func(*resilience.Governor, resilience.Scope) // options.beforeTask
}

// scanRun is one run of the scan.
type scanRun struct {
	s        *scanner
	start    time.Time
	makespan time.Duration
	stats    *resilience.Stats
	colls    map[string]*collection
	done     atomic.Int64 // calls made, for the progress line
	deferred atomic.Int64 // first calls the pool's admission refused, not made, whose tasks the pool ran again
	rerun    int          // tasks the pool queued again (Progress.Deferred), a cancellation's drops among them
	// cancelled is set when the scan's context ended before the run did,
	// cancelledAt then being when, from the start.
	cancelled   bool
	cancelledAt time.Duration

	mu         sync.Mutex
	outcomes   map[string]int
	examples   map[string]string // an error of each failed outcome
	unaffected time.Duration     // when the last task of an unaffected scope returned
}

// affected reports whether a knob of the scenario selects sc.
func (s *scanner) affected(sc estate.Scope) bool {
	return slices.ContainsFunc(s.knobs, func(k estate.Scope) bool { return k.Matches(sc) })
}

// serviceIDs are the SDK's service IDs of the estate's services.
var serviceIDs = map[string]string{
	"ec2": ec2.ServiceID, "iam": iam.ServiceID, "secretsmanager": secretsmanager.ServiceID, "dynamodb": dynamodb.ServiceID,
}

// governed is the governor's scope of a call to sc, as cloudgaws.Scope
// says the account's clients' middleware computes it: IAM, a global
// service, is governed in aws-global, not in the region it is called in.
func (s *scanner) governed(sc estate.Scope) resilience.Scope {
	cfg := s.clients[sc.Account].cfg
	cfg.Region = sc.Region
	gs, err := cloudgaws.Scope(cfg, serviceIDs[sc.Service], sc.Action)
	if err != nil {
		panic(err) // not reached: every account's config is installed
	}
	return gs
}

// scan runs the scan once through the scanner's pool. progress, when not
// nil, is called with the calls made so far every half second.
func (s *scanner) scan(ctx context.Context, progress func(calls int64, elapsed time.Duration)) *scanRun {
	ctx, stats := resilience.WithStats(ctx)
	r := &scanRun{s: s, stats: stats, colls: map[string]*collection{}, outcomes: map[string]int{}, examples: map[string]string{}}
	for _, acct := range accounts {
		for _, svc := range services {
			name := acct + "/" + svc
			cctx, ledger := resilience.WithLedger(ctx, name)
			r.colls[name] = &collection{name: name, ctx: cctx, ledger: ledger, fails: map[string]int{}}
		}
	}
	r.start = time.Now()
	cancelledAt := make(chan time.Duration, 1)
	stopCancelled := context.AfterFunc(ctx, func() { cancelledAt <- time.Since(r.start) })
	defer stopCancelled()
	if progress != nil {
		// Stopped and waited for before scan returns: a tick late after
		// it would print a progress line over the report.
		stop := make(chan struct{})
		var ticking sync.WaitGroup
		defer ticking.Wait()
		defer close(stop)
		ticking.Add(1)
		go func() {
			defer ticking.Done()
			t := time.NewTicker(500 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					progress(r.done.Load(), time.Since(r.start))
				}
			}
		}()
	}
	r.rerun = s.pool.Run(ctx, r.tasks())
	r.makespan = time.Since(r.start)
	if !stopCancelled() { // the scan's context ended: when, once the AfterFunc has said
		r.cancelled, r.cancelledAt = true, <-cancelledAt
	}
	return r
}

// tasks are the scan's first tasks, its listings: per account IAM's, then
// per region the EC2, Secrets Manager and DynamoDB listings.
func (r *scanRun) tasks() []Task {
	var out []Task
	for _, acct := range accounts {
		ac := r.s.clients[acct]
		out = append(out, r.listRoles(acct, ac.iam))
		for _, region := range regions {
			rc := ac.regions[region]
			for _, action := range []string{"DescribeInstances", "DescribeVpcs", "DescribeSubnets", "DescribeSecurityGroups"} {
				out = append(out, r.describeEC2(estate.Scope{Account: acct, Region: region, Service: "ec2", Action: action}, rc.ec2))
			}
			out = append(out, r.listSecrets(acct, region, rc.secrets), r.listTables(acct, region, rc.ddb))
		}
	}
	return out
}

// taskRun is one run of a task of collection c: whether a call failed,
// and whether its first call was deferred (the pool runs the task again).
// A task's calls are made one after the other, by the goroutine running
// it.
type taskRun struct {
	c                *collection
	failed, deferred bool
}

// task makes a pool task of body, which calls sc for collection c: its
// calls are bound to the run's stats and the collection's ledger, and to
// the task timeout from the moment the task starts. A task whose context
// is done when it starts (the scan was cancelled while it was queued) is
// dropped unrun, its loss in the ledger, as the scope pool drops the
// tasks it still holds. A run whose first call the pool deferred is
// counted in the run's deferred as the task runs again: a task the
// cancellation drops before that is dropped unrun, not run again.
func (r *scanRun) task(sc estate.Scope, body func(ctx context.Context, t *taskRun, submit func(Task))) Task {
	c := r.colls[sc.Account+"/"+sc.Service]
	gs := r.s.governed(sc)
	c.submitted.Add(1) // every task made is submitted, once
	// Whether the task's last run ended with its first call deferred.
	// The pool runs a task's runs one after the other.
	deferredRun := false
	return Task{Scope: gs, Context: c.ctx, Run: func(ctx context.Context, submit func(Task)) {
		if ctx.Err() != nil {
			c.ledger.Record(resilience.LossCancelled, fmt.Sprintf("%s: task not run: %v", gs, context.Cause(ctx)))
			return
		}
		if deferredRun {
			r.deferred.Add(1) // run again
		}
		t := &taskRun{c: c}
		returned := false
		defer func() {
			deferredRun = returned && t.deferred
			switch {
			case !returned:
				c.panicked.Add(1)
			case t.deferred: // to be run again by the pool, or dropped
			case t.failed:
				c.failedTasks.Add(1)
			default:
				c.done.Add(1)
			}
		}()
		if r.s.beforeTask != nil {
			r.s.beforeTask(r.s.gov, gs)
		}
		if r.s.taskTimeout > 0 {
			var stop context.CancelFunc
			ctx, stop = context.WithTimeout(ctx, r.s.taskTimeout)
			defer stop()
		}
		body(ctx, t, submit)
		returned = true
		if !r.s.affected(sc) {
			r.mu.Lock()
			r.unaffected = max(r.unaffected, time.Since(r.start))
			r.mu.Unlock()
		}
	}}
}

// deferred reports whether err is a task's first call that the scope
// pool's admission refused before sending (resilience.WithAdmission): the
// call was not made, nothing was lost, and the pool runs the task again.
func deferred(err error) bool { return errors.Is(err, resilience.ErrDeferred) }

// record counts a call of task run t that returned err, and reports
// whether it succeeded. A call the pool deferred is no call made: it is
// not counted (the task's next run counts it: see task), and reported as
// not succeeded, so that the task stops and returns to the pool.
func (r *scanRun) record(t *taskRun, err error) bool {
	c := t.c
	if deferred(err) {
		t.deferred = true
		return false
	}
	o := outcomeOf(err)
	r.mu.Lock()
	r.outcomes[o]++
	if err != nil {
		c.fails[o]++
		if r.examples[o] == "" {
			r.examples[o] = err.Error()
		}
	}
	r.mu.Unlock()
	if err != nil {
		t.failed = true
		c.failed.Add(1)
	}
	r.done.Add(1)
	return err == nil
}

// walk lists pages with next until none is left or one fails, and calls
// each (if not nil) with the items of every page. A first page the pool
// deferred ends the walk too: the pool runs the task again from the start.
func (r *scanRun) walk(t *taskRun, more func() bool, next func() ([]string, error), each func(string)) {
	for more() {
		items, err := next()
		if !r.record(t, err) {
			return // the rest of the listing is lost with this page
		}
		if each != nil {
			for _, it := range items {
				each(it)
			}
		}
	}
}

// detail is the task of one detail call to sc.
func (r *scanRun) detail(sc estate.Scope, call func(ctx context.Context) error) Task {
	return r.task(sc, func(ctx context.Context, t *taskRun, _ func(Task)) {
		r.record(t, call(ctx))
	})
}

func (r *scanRun) listRoles(acct string, cl *iam.Client) Task {
	sc := estate.Scope{Account: acct, Region: globalRegion, Service: "iam", Action: "ListRoles"}
	get := sc
	get.Action = "GetRole"
	return r.task(sc, func(ctx context.Context, t *taskRun, submit func(Task)) {
		p := iam.NewListRolesPaginator(cl, &iam.ListRolesInput{MaxItems: aws.Int32(rolesPage)})
		r.walk(t, p.HasMorePages, func() ([]string, error) {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			var names []string
			for _, role := range out.Roles {
				names = append(names, aws.ToString(role.RoleName))
			}
			return names, nil
		}, func(name string) {
			submit(r.detail(get, func(ctx context.Context) error {
				_, err := cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(name)})
				return err
			}))
		})
	})
}

func (r *scanRun) describeEC2(sc estate.Scope, cl *ec2.Client) Task {
	return r.task(sc, func(ctx context.Context, t *taskRun, _ func(Task)) {
		var more func() bool
		var next func() ([]string, error)
		switch sc.Action {
		case "DescribeInstances":
			p := ec2.NewDescribeInstancesPaginator(cl, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(instancesPage)})
			more, next = p.HasMorePages, func() ([]string, error) { _, err := p.NextPage(ctx); return nil, err }
		case "DescribeVpcs":
			p := ec2.NewDescribeVpcsPaginator(cl, &ec2.DescribeVpcsInput{})
			more, next = p.HasMorePages, func() ([]string, error) { _, err := p.NextPage(ctx); return nil, err }
		case "DescribeSubnets":
			p := ec2.NewDescribeSubnetsPaginator(cl, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(subnetsPage)})
			more, next = p.HasMorePages, func() ([]string, error) { _, err := p.NextPage(ctx); return nil, err }
		case "DescribeSecurityGroups":
			p := ec2.NewDescribeSecurityGroupsPaginator(cl, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(groupsPage)})
			more, next = p.HasMorePages, func() ([]string, error) { _, err := p.NextPage(ctx); return nil, err }
		default:
			panic(fmt.Sprintf("scan: no EC2 listing %s", sc.Action))
		}
		r.walk(t, more, next, nil)
	})
}

func (r *scanRun) listSecrets(acct, region string, cl *secretsmanager.Client) Task {
	sc := estate.Scope{Account: acct, Region: region, Service: "secretsmanager", Action: "ListSecrets"}
	describe := sc
	describe.Action = "DescribeSecret"
	return r.task(sc, func(ctx context.Context, t *taskRun, submit func(Task)) {
		p := secretsmanager.NewListSecretsPaginator(cl, &secretsmanager.ListSecretsInput{MaxResults: aws.Int32(secretsPage)})
		r.walk(t, p.HasMorePages, func() ([]string, error) {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			var arns []string
			for _, s := range out.SecretList {
				arns = append(arns, aws.ToString(s.ARN))
			}
			return arns, nil
		}, func(arn string) {
			submit(r.detail(describe, func(ctx context.Context) error {
				_, err := cl.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(arn)})
				return err
			}))
		})
	})
}

func (r *scanRun) listTables(acct, region string, cl *dynamodb.Client) Task {
	sc := estate.Scope{Account: acct, Region: region, Service: "dynamodb", Action: "ListTables"}
	describe := sc
	describe.Action = "DescribeTable"
	return r.task(sc, func(ctx context.Context, t *taskRun, submit func(Task)) {
		p := dynamodb.NewListTablesPaginator(cl, &dynamodb.ListTablesInput{Limit: aws.Int32(tablesPage)})
		r.walk(t, p.HasMorePages, func() ([]string, error) {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			return out.TableNames, nil
		}, func(name string) {
			submit(r.detail(describe, func(ctx context.Context) error {
				_, err := cl.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
				return err
			}))
		})
	})
}
