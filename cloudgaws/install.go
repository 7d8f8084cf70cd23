package cloudgaws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/resilience"
)

// An Option changes how Install governs a config's clients. Options are
// values that Install only reads: one may be passed to any number of
// Install calls, from any goroutines. Install ignores a nil Option.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is what the options set.
type config struct {
	gov        *resilience.Governor
	maxRetries *int
	mode       aws.RetryMode
	logger     *slog.Logger
	names      map[string]string
	base       func() aws.Retryer
	errs       []error
}

// WithGovernor governs the clients with g instead of the process governor
// (resilience.Default, looked up at each call). Installed again without
// it, a config keeps the governor of its earlier installation.
func WithGovernor(g *resilience.Governor) Option {
	return optionFunc(func(c *config) { c.gov = g })
}

// WithMaxRetries sets the retries the SDK makes after the first attempt
// (aws.max_retries in the configuration document; default 10, so 11
// attempts). 0 sends each request once.
func WithMaxRetries(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.errs = append(c.errs, &yamlconf.Error{Path: "aws.max_retries", Msg: "must be >= 0"})
			return
		}
		c.maxRetries = &n
	})
}

// WithRetryMode sets the SDK's retry mode, aws.RetryModeStandard or
// aws.RetryModeAdaptive (aws.retry_mode in the configuration document;
// default standard: the governor paces the calls, and the adaptive mode's
// client-side limiter would add a second one under it). The mode chooses
// the SDK's retryer: a cfg.Retryer of the caller's own, which Install
// keeps and governs, is its own mode, and the option changes nothing of
// it.
func WithRetryMode(m aws.RetryMode) Option {
	return optionFunc(func(c *config) {
		if err := (Config{RetryMode: m}).Validate(); err != nil {
			c.errs = append(c.errs, err)
			return
		}
		c.mode = m
	})
}

// WithConfig applies the settings ParseConfig read from a configuration
// file: the fields it sets, as WithMaxRetries and WithRetryMode would.
func WithConfig(cfg Config) Option {
	return optionFunc(func(c *config) {
		if err := cfg.Validate(); err != nil {
			c.errs = append(c.errs, err)
			return
		}
		if cfg.MaxRetries != nil {
			n := *cfg.MaxRetries
			c.maxRetries = &n
		}
		if cfg.RetryMode != "" {
			c.mode = cfg.RetryMode
		}
	})
}

// WithLogger makes Install log a failure to install (at warn level) to l
// instead of slog.Default(). Installed again without it, a config keeps
// the logger of its earlier installation: a failure to install it again
// is logged there.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithServiceName names the service of an SDK service ID in scopes, for a
// service whose botocore name ServiceName does not know. Installed again,
// a config keeps the names of its earlier installation, the options'
// added to them. A name must be plain text as an account id must (no
// space, no character that does not print, at most 128 bytes) and not ""
// or "*", which read as no service: Install refuses any other, so that a
// name read from a file with its newline reaches no scope.
func WithServiceName(serviceID, name string) Option {
	return optionFunc(func(c *config) {
		if name == "" || name == "*" || !scopekey.Plain(name) {
			c.errs = append(c.errs, fmt.Errorf("service name %q of %q is not plain text or names no service: a space, a character that does not print (a control or format character, a byte that is not UTF-8), more than %d bytes, \"\" or \"*\"", name, serviceID, scopekey.MaxPlain))
			return
		}
		if c.names == nil {
			c.names = map[string]string{}
		}
		c.names[serviceID] = name
	})
}

// WithBaseRetryer makes the clients retry with the retryer newRetryer
// returns (one per client, as aws.Config.Retryer) instead of the SDK's
// standard or adaptive retryer. The governor still accounts for every retry
// it allows and ends its loop when the retry budget is empty; the retry
// mode does not apply, and the attempts are the retryer's own unless
// WithMaxRetries or WithConfig sets them. Its retry quota does not apply
// either (the SDK's standard retryer's, 500 tokens a client): the
// governor's retry budget takes its place, as for a retryer Install makes.
func WithBaseRetryer(newRetryer func() aws.Retryer) Option {
	return optionFunc(func(c *config) { c.base = newRetryer })
}

// installation is one Install's settings: the middleware of every call of
// the config's clients, and the factory of their retryers.
type installation struct {
	gov     *resilience.Governor // nil: resilience.Default()
	logger  *slog.Logger         // WithLogger's; nil: slog.Default()
	account string
	names   map[string]string
	cache   nameCache

	attempts    int // the SDK's max attempts: max retries + 1
	explicitMax bool
	mode        aws.RetryMode
	base        func() aws.Retryer // nil: the SDK's retryer for mode
	perAttempt  attemptMiddleware
}

// Middleware IDs in the SDK's stacks.
const (
	initializeID = "cloudgaws.Governor"
	attemptID    = "cloudgaws.Attempt"
	wireID       = "cloudgaws.Wire"
	hideID       = "cloudgaws.Hide"           // an IMDS client's stack (see hideMiddleware)
	rawID        = "AddRawResponseToMetadata" // the SDK's, which keeps an attempt's raw response (awsmiddleware.AddRawResponse)
	retryID      = "Retry"                    // the SDK's retry loop (retry.Attempt)
)

// Install puts every client later made from cfg under the governor:
// aws-sdk-go-v2 clients (ec2.NewFromConfig(*cfg) and the like), their
// paginators and waiters, and the SDK's retries inside each call. It adds
// its middleware to cfg.APIOptions, sets cfg.Retryer and records itself
// among cfg.ConfigSources (for Scope), so call it before making clients. accountID is the account the config's credentials act in,
// "*" (or "") while it is not known, before an AssumeRole: the scopes then
// have an empty account, which Scope.String shows as *.
//
// Each call is scoped aws/<account>/<region>/<service>/<Operation>, with
// the botocore-style service name (ServiceName). Before the call: the
// breaker (open: a *ThrottlingError, nothing sent), one counted call, a
// rate token, a bulkhead slot held across the SDK's retries. Each attempt:
// throttling halves the scope's rate and pauses it for Retry-After or
// x-amz-retry-after, transient errors are counted, and a throttled retry
// waits for a fresh token on top of the SDK's backoff. Every retry the SDK
// is about to make costs, after the first two of the call, a retry-budget
// token, and is counted when sent; an empty budget ends the SDK's loop
// with a *ThrottlingError, and a Retry-After that would pass the context's
// deadline ends it with the provider's error. After the call: the outcome
// the SDK's loop left open goes to the breaker, the stats and the ledger
// bound to the call's context.
//
// The SDK's retry settings come from WithMaxRetries and WithRetryMode (or
// WithConfig); without them, from cfg.RetryMaxAttempts and cfg.RetryMode
// when set (config.LoadDefaultConfig fills them from AWS_MAX_ATTEMPTS and
// AWS_RETRY_MODE), else 10 retries in standard mode. The SDK's per-client
// retry quota is turned off, a retryer of the caller's included (its quota
// no longer refuses a retry the governor lets go): the governor's retry
// budget, shared by every client of the process, takes its place.
//
// Installing again, on cfg or on a copy of it (say with the account id
// after an AssumeRole), replaces the earlier installation: every client
// made afterwards is governed once, with the latest settings. What the
// options do not set is the earlier installation's: its governor
// (WithGovernor), its logger (WithLogger), its service names
// (WithServiceName, to which the options' are added) and its retry
// settings. Install never breaks cfg: on failure (a nil cfg, an invalid
// option, an account id that is not plain text: space in it, as in one
// read from a file with its newline, another control or a format
// character, a byte that is not UTF-8, more than 128 bytes) it leaves cfg
// as it was, so that its clients work ungoverned, logs the error at warn
// level (to the logger of WithLogger, or of the earlier installation; a
// program that drops the error still hears of it) and returns it.
func Install(cfg *aws.Config, accountID string, opts ...Option) (err error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cloudgaws: install: %v", r)
		}
		if err != nil {
			logger := c.logger
			if logger == nil && cfg != nil {
				if earlier := installed(*cfg); earlier != nil {
					logger = earlier.logger
				}
			}
			if logger == nil {
				logger = slog.Default()
			}
			logger.LogAttrs(context.Background(), slog.LevelWarn, "cloudgaws: not installed; the config's clients are not governed",
				slog.String("error", err.Error()))
		}
	}()
	if cfg == nil {
		return errors.New("cloudgaws: install: nil *aws.Config")
	}
	if len(c.errs) > 0 {
		return fmt.Errorf("cloudgaws: install: %w", errors.Join(c.errs...))
	}
	if !scopekey.Plain(accountID) {
		// One read from a file with its newline: its scopes would match
		// no other install, override or scheduler's question, and it
		// would reach log lines, metric labels and the status page.
		return fmt.Errorf("cloudgaws: install: account id %q is not plain text: a space, a character that does not print (a control or format character, a byte that is not UTF-8) or more than %d bytes", accountID, scopekey.MaxPlain)
	}
	if accountID == "*" {
		accountID = "" // unknown: one scope, shown as *, whichever way it is spelled
	}
	inst := &installation{gov: c.gov, account: accountID, names: c.names, base: c.base, mode: c.mode, logger: c.logger}
	if earlier := installed(*cfg); earlier != nil {
		// Installed again (the assumed-role config, with its account):
		// the earlier installation's governor, logger and service names
		// stay, unless the options name others.
		if inst.gov == nil {
			inst.gov = earlier.gov
		}
		if inst.logger == nil {
			inst.logger = earlier.logger
		}
		if len(earlier.names) > 0 {
			names := maps.Clone(earlier.names)
			maps.Copy(names, c.names)
			inst.names = names
		}
	}

	// Settings the config already had: its own, or an earlier install's.
	var prev *retryer
	if cfg.Retryer != nil {
		r := cfg.Retryer()
		if pr, ok := r.(*retryer); ok {
			prev = pr
		} else if inst.base == nil {
			inst.base = cfg.Retryer // the user's retryer, kept and governed
		}
	}
	if inst.base == nil && prev != nil {
		inst.base = prev.inst.base
	}
	switch {
	case c.maxRetries != nil:
		// The attempts of the largest max_retries are the most there are,
		// not a sum that wraps to a negative the SDK reads as its default.
		inst.attempts, inst.explicitMax = min(*c.maxRetries, math.MaxInt-1)+1, true
	case cfg.RetryMaxAttempts > 0:
		inst.attempts, inst.explicitMax = cfg.RetryMaxAttempts, true
	case prev != nil:
		inst.attempts, inst.explicitMax = prev.inst.attempts, prev.inst.explicitMax
	default:
		inst.attempts = DefaultMaxRetries + 1
	}
	if inst.mode == "" {
		switch {
		case cfg.RetryMode != "":
			inst.mode = cfg.RetryMode
		case prev != nil:
			inst.mode = prev.inst.mode
		default:
			inst.mode = DefaultRetryMode
		}
	}
	if err := (Config{RetryMode: inst.mode}).Validate(); err != nil {
		return fmt.Errorf("cloudgaws: install: %w", err)
	}
	inst.perAttempt.inst = inst

	// A fresh slice: a copied aws.Config shares its APIOptions array with
	// the original, which must not see this installation.
	apiOpts := make([]func(*middleware.Stack) error, 0, len(cfg.APIOptions)+1)
	for _, fn := range cfg.APIOptions {
		if !isAPIOption(fn) {
			apiOpts = append(apiOpts, fn)
		}
	}
	apiOpts = append(apiOpts, inst.addTo)

	// The installation among the config's sources, for Scope; the SDK's
	// resolvers look there only for their own interfaces.
	sources := make([]any, 0, len(cfg.ConfigSources)+1)
	for _, src := range cfg.ConfigSources {
		if _, ok := src.(*installation); !ok {
			sources = append(sources, src)
		}
	}
	sources = append(sources, inst)

	cfg.APIOptions = apiOpts
	cfg.ConfigSources = sources
	cfg.Retryer = inst.newRetryer
	cfg.RetryMaxAttempts = 0 // it would override the retryer's attempts
	cfg.RetryMode = inst.mode
	return nil
}

// apiOptionPC identifies the function Install adds to APIOptions, the
// method value inst.addTo: every method value of a method shares one code
// pointer, which is how Install recognises an earlier installation's entry
// (a function of anyone else's never has it).
var apiOptionPC = reflect.ValueOf((*installation)(nil).addTo).Pointer()

func isAPIOption(fn func(*middleware.Stack) error) bool {
	return fn != nil && reflect.ValueOf(fn).Pointer() == apiOptionPC
}

// addTo adds the middleware to one call's stack: once per logical call in
// Initialize (after the SDK's input validation), the call's own
// initializeMiddleware, which holds its state; and once per attempt in
// Finalize right after the SDK's Retry middleware (after its backoff
// sleep, before signing). The mark of an attempt that reached the HTTP
// client, which a stack without the SDK's AddRawResponseToMetadata needs,
// is added as the call begins, once the call's options that run after
// this one have (see initializeMiddleware.markWire). A stack that already
// has them, from an installation that APIOptions still lists, gets this
// installation's instead. A stack without the SDK's Retry middleware sends
// nothing to govern (a presigner's stack signs a URL locally) and is left
// alone. An IMDS client's stack is not governed either, but gets
// hideMiddleware. It never fails the call.
func (inst *installation) addTo(stack *middleware.Stack) error {
	if _, ok := stack.Finalize.Get(retryID); !ok {
		return nil
	}
	if isIMDS(stack) {
		if _, ok := stack.Initialize.Get(hideID); !ok {
			_ = stack.Initialize.Add(hideMiddleware{}, middleware.After)
		}
		return nil
	}
	m := &initializeMiddleware{inst: inst, deser: stack.Deserialize}
	if _, ok := stack.Initialize.Get(initializeID); ok {
		_, _ = stack.Initialize.Swap(initializeID, m)
	} else {
		_ = stack.Initialize.Add(m, middleware.After)
	}
	if _, ok := stack.Finalize.Get(attemptID); ok {
		_, _ = stack.Finalize.Swap(attemptID, &inst.perAttempt)
	} else {
		_ = stack.Finalize.Insert(&inst.perAttempt, retryID, middleware.After)
	}
	return nil
}

// imdsPkg is the package of the EC2 instance metadata service's client.
const imdsPkg = "github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

// isIMDS reports whether stack is a call of the EC2 instance metadata
// service's client (package feature/ec2/imds), which a client made from
// an installed config carries APIOptions into: the instance's own
// service, not an account's API, which no account's limits, slots or
// breakers are about. Such a stack is ungoverned: it gets hideMiddleware
// alone. The client
// names no service in the call's context; its stack is known by its
// operation timeout and its serializer's package.
func isIMDS(stack *middleware.Stack) bool {
	if _, ok := stack.Initialize.Get("OperationTimeout"); !ok {
		return false
	}
	m, ok := stack.Serialize.Get("OperationSerializer")
	if !ok {
		return false
	}
	t := reflect.TypeOf(m)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == imdsPkg
}

// hideMiddleware is the one middleware of an IMDS client's call (see
// isIMDS), which is not governed but retries with the retryer of the
// installed config it was made from, the governed one. It hides from
// that retryer the state of a governed call in whose attempt the IMDS
// call is made, with the attempt's context: the credentials of an
// ec2rolecreds provider over imds.NewFromConfig of the installed config,
// fetched while the attempt is signed. The IMDS client's operations name
// no service or operation of their own in the context, so nothing else
// tells the retryer that the state it finds is not its call's: it would
// ask the enclosing call's guard for the IMDS call's retries, and watch
// its breaker while the enclosing call's attempt is in flight, which the
// guard forbids (a data race on the guard).
type hideMiddleware struct{}

func (hideMiddleware) ID() string { return hideID }

func (hideMiddleware) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	if stateFrom(ctx) != nil {
		ctx = hiddenState{ctx}
	}
	return next.HandleInitialize(ctx, in)
}

// hiddenState is a context without the state of an enclosing governed
// call (see hideMiddleware): every other value is its parent's.
type hiddenState struct{ context.Context }

func (c hiddenState) Value(key any) any {
	if key == (stateKey{}) {
		return nil
	}
	return c.Context.Value(key)
}

// governor returns the governor of a call.
func (inst *installation) governor() *resilience.Governor {
	if inst.gov != nil {
		return inst.gov
	}
	return resilience.Default()
}
