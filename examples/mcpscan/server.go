package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"

	"github.com/cloudg/cloudg/internal/gcpaccount"
	"github.com/cloudg/cloudg/liveop"
	"github.com/cloudg/cloudg/resilience"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scanner is the state behind the tools: the process's governor and live
// guard, the estate, and the newest dataset of each scope (the cache a
// refused scan points the agent at).
type scanner struct {
	gov    *resilience.Governor
	guard  *liveop.Guard
	estate *estate
	log    *slog.Logger // where a panicking collection's stack goes

	mu    sync.Mutex
	cache map[string]*Dataset
}

// ScanInput is the scan tool's input.
type ScanInput struct {
	Provider string `json:"provider" jsonschema:"aws, azure or gcp"`
	Account  string `json:"account" jsonschema:"the AWS account id (12 digits), Azure subscription id (a GUID) or GCP projects/<id> (a project's id, example.com:<id> or number), organizations/<number> or folders/<number> to collect"`
}

// ScanOutput is the scan tool's output: a fresh dataset, or a refusal and
// the newest cached dataset of the scope.
type ScanOutput struct {
	Dataset *Dataset `json:"dataset,omitempty" jsonschema:"the dataset this call collected, or joined"`
	Refused *Refusal `json:"refused,omitempty" jsonschema:"why no live collection ran now"`
	Cached  *Dataset `json:"cached,omitempty" jsonschema:"the newest cached dataset of the scope, when refused"`
}

// Refusal is liveop.RefusedError's JSON form, typed for the tool's output
// schema.
type Refusal struct {
	Reason            string   `json:"reason" jsonschema:"cooldown, busy, quota or timeout"`
	Message           string   `json:"message"`
	RetryAfterSeconds float64  `json:"retry_after_seconds,omitempty"`
	Scopes            []string `json:"scopes,omitempty"`
	Caller            string   `json:"caller,omitempty"`
}

// StatusInput is the rate_limit_status tool's input: nothing.
type StatusInput struct{}

// newServer returns an MCP server with the scan and rate_limit_status
// tools.
func newServer(s *scanner) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "cloudg-mcpscan", Version: "v0.1.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "scan",
		Description: "Collect a cloud account live. Identical scans running at once share one collection; " +
			"a scope collected recently, a busy guard or a spent quota refuse it with when to retry and the cached dataset.",
	}, s.scan)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "rate_limit_status",
		Description: "The live-operation guard's status and the governor's summary; calls no cloud.",
	}, s.status)
	return srv
}

// scan runs the estate walk under the guard. Its caller, for the quota, is
// the client's declared name.
func (s *scanner) scan(ctx context.Context, req *mcp.CallToolRequest, in ScanInput) (*mcp.CallToolResult, ScanOutput, error) {
	form, ok := accountForms[in.Provider]
	if !ok {
		return nil, ScanOutput{}, fmt.Errorf("unknown provider %.64q (aws, azure or gcp)", in.Provider)
	}
	if in.Account == "" {
		return nil, ScanOutput{}, errors.New("account is required")
	}
	// The account comes from the agent: one that is not of the provider's
	// form would become a scope of the governor and the guard, kept and
	// written to log lines as it is (package state's Scope asks a scope
	// function for printable parts of bounded length).
	if !form.valid(in.Account) {
		return nil, ScanOutput{}, fmt.Errorf("%s account %.64q is not %s", in.Provider, in.Account, form.what)
	}
	if in.Provider == "azure" {
		in.Account = strings.ToLower(in.Account) // as the integration's scopes write it
	}
	scope := in.Provider + "/" + in.Account
	caller := ""
	if info := req.ClientInfo(); info != nil {
		caller = info.Name
	}
	op := liveop.Request{Key: liveop.Key("scan", in), Scopes: []string{scope}, Caller: caller}
	d, err := liveop.Run(ctx, s.guard, op, func(ctx context.Context) (*Dataset, error) {
		d, err := s.estate.walk(ctx, s.gov, in.Provider, in.Account)
		if err == nil {
			s.mu.Lock()
			s.cache[scope] = d
			s.mu.Unlock()
		}
		return d, err
	})
	var refused *liveop.RefusedError
	if errors.As(err, &refused) {
		out := ScanOutput{Refused: refusal(refused)}
		s.mu.Lock()
		out.Cached = s.cache[scope]
		s.mu.Unlock()
		return &mcp.CallToolResult{IsError: true}, out, nil
	}
	var panicked *liveop.PanicError
	if errors.As(err, &panicked) {
		// The agent gets what went wrong; the stack, which it cannot act
		// on, goes to the log.
		s.log.Error("mcpscan: the scan panicked", "scope", scope, "panic", fmt.Sprint(panicked.Value), "stack", string(panicked.Stack))
		return nil, ScanOutput{}, &scanError{scope: scope, value: panicked.Value, err: err}
	}
	if err != nil {
		return nil, ScanOutput{}, err
	}
	return nil, ScanOutput{Dataset: d}, nil
}

// accountForms are the accounts each provider's scan takes: the form of
// the provider's own ids, as the SDK integrations put them in scopes. A
// GCP account is projects/<id>, organizations/<number> or
// folders/<number> by Google Cloud's grammar (gcpaccount.Valid, the rule
// cloudggcp reads accounts with): a project's id is 6 to 30 lower-case
// letters, digits and hyphens, a letter first and no hyphen last, or a
// legacy domain-scoped project's (example.com:my-project); a project, an
// organization and a folder also have a number, a 64-bit one.
// The shorter project ids cloudggcp takes for emulators' projects (p1)
// are no project of Google Cloud's, and no account to scan.
var accountForms = map[string]struct {
	valid func(string) bool
	what  string
}{
	"aws":   {regexp.MustCompile(`^[0-9]{12}$`).MatchString, "an AWS account id (12 digits)"},
	"azure": {regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`).MatchString, "an Azure subscription id (a GUID)"},
	"gcp":   {func(a string) bool { return gcpaccount.Valid(a, false) }, "projects/<id>, organizations/<id> or folders/<id>"},
}

// scanError is the scan tool's error for a collection that panicked:
// its message is the panic's value, without the stack (logged instead);
// errors.Is and errors.As see the *liveop.PanicError it wraps.
type scanError struct {
	scope string
	value any
	err   error
}

func (e *scanError) Error() string {
	return fmt.Sprintf("scan of %s failed: %v: %v", e.scope, liveop.ErrPanicked, e.value)
}

func (e *scanError) Unwrap() error { return e.err }

// refusal converts a refusal through its JSON form, the one liveop gives
// tools.
func refusal(r *liveop.RefusedError) *Refusal {
	b, err := json.Marshal(r)
	var out Refusal
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return &Refusal{Reason: string(r.Reason), Message: r.Error()}
	}
	return &out
}

// status reports the guard and the governor's lifetime summary from
// memory.
func (s *scanner) status(context.Context, *mcp.CallToolRequest, StatusInput) (*mcp.CallToolResult, any, error) {
	return nil, map[string]any{
		"guard":    s.guard.Status(),
		"governor": s.gov.Summary(nil),
	}, nil
}
