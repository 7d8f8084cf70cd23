package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/liveop"
	"github.com/cloudg/cloudg/resilience"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect returns a client session named name on the server, over the SDK's
// in-memory transport.
func connect(t *testing.T, srv *mcp.Server, name string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool and decodes its structured output into out.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return res
}

func newTestScanner(t *testing.T) *scanner {
	t.Helper()
	gov, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := liveop.ParseConfig(nil) // the defaults of a configuration file
	if err != nil {
		t.Fatal(err)
	}
	guard, err := liveop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &scanner{gov: gov, guard: guard, estate: newEstate(), log: slog.New(slog.DiscardHandler), cache: map[string]*Dataset{}}
}

// Two agents ask for the same scan at once: one collection runs and both
// get its dataset. A third scan right after is refused with the cooldown
// message and when to retry, and points at the cached dataset. The status
// tool reports all of it without calling the cloud.
func TestConcurrentScansShareOneRunThenCoolDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScanner(t)
		srv := newServer(s)
		a, b := connect(t, srv, "agent-a"), connect(t, srv, "agent-b")
		args := map[string]any{"provider": "aws", "account": "123456789012"}

		outs := make(chan ScanOutput, 2)
		for _, cs := range []*mcp.ClientSession{a, b} {
			go func() {
				var out ScanOutput
				if res := call(t, cs, "scan", args, &out); res.IsError {
					t.Errorf("scan refused: %+v", out.Refused)
				}
				outs <- out
			}()
			synctest.Wait() // the first scan is running before the second asks
		}
		if st := s.guard.Status(); st.Started != 1 || st.Joined != 1 || len(st.InFlight) != 1 || st.InFlight[0].Callers != 2 {
			t.Fatalf("guard status while scanning: %+v", st)
		}
		first, second := <-outs, <-outs
		if first.Dataset == nil || second.Dataset == nil || !first.Dataset.CollectedAt.Equal(second.Dataset.CollectedAt) ||
			first.Dataset.Total != 48 || second.Dataset.Total != 48 || first.Dataset.Throttled != 1 {
			t.Fatalf("datasets %+v / %+v", first.Dataset, second.Dataset)
		}
		attempts := s.estate.attempts.Load()
		if attempts != 7 { // 2 regions x 3 services, one throttled and retried
			t.Fatalf("the estate answered %d attempts, want one walk's 7", attempts)
		}

		var third ScanOutput
		res := call(t, a, "scan", args, &third)
		if !res.IsError || third.Refused == nil || third.Dataset != nil {
			t.Fatalf("third scan: error %v, %+v", res.IsError, third)
		}
		want := Refusal{Reason: "cooldown", RetryAfterSeconds: 120, Scopes: []string{"aws/123456789012"}, Caller: "agent-a",
			Message: "live collection of aws/123456789012 ran recently; cooling down, retry in 120s or use the cached dataset"}
		if b1, b2 := mustJSON(t, third.Refused), mustJSON(t, want); b1 != b2 {
			t.Fatalf("refusal\n got %s\nwant %s", b1, b2)
		}
		if third.Cached == nil || !third.Cached.CollectedAt.Equal(first.Dataset.CollectedAt) {
			t.Fatalf("cached %+v", third.Cached)
		}
		text, ok := res.Content[0].(*mcp.TextContent)
		if !ok || text.Text == "" {
			t.Fatalf("content %+v", res.Content)
		}

		time.Sleep(30 * time.Second)
		var status struct {
			Guard    liveop.Status `json:"guard"`
			Governor struct {
				Totals        map[string]any `json:"totals"`
				SlowedBuckets map[string]any `json:"slowed_buckets"`
			} `json:"governor"`
		}
		if res := call(t, b, "rate_limit_status", map[string]any{}, &status); res.IsError {
			t.Fatal("status failed")
		}
		if g := status.Guard; g.Started != 1 || g.Joined != 1 || g.Active != 0 || g.Cooling["aws/123456789012"] != 90 {
			t.Fatalf("guard %+v", g)
		}
		if tot := status.Governor.Totals; tot["calls"] != 7.0 || tot["throttled"] != 1.0 || tot["retries"] != 1.0 ||
			len(status.Governor.SlowedBuckets) != 1 {
			t.Fatalf("governor %+v", status.Governor)
		}
		if s.estate.attempts.Load() != attempts {
			t.Fatal("a refused scan or the status tool called the cloud")
		}
	})
}

func TestScanRejectsBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScanner(t)
		cs := connect(t, newServer(s), "agent")
		for _, args := range []map[string]any{
			{"provider": "oracle", "account": "1"},
			{"provider": "aws", "account": ""},
		} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "scan", Arguments: args})
			if err != nil || !res.IsError {
				t.Fatalf("%v: %+v %v", args, res, err)
			}
		}
		if s.estate.attempts.Load() != 0 || s.guard.Status().Started != 0 {
			t.Fatal("bad input reached the guard")
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A collection that panics gives the agent the panic's value in a short
// message, as the scan tool's error, and writes its stack to the log, not
// to the agent: a stack is for whoever runs the server, and in a tool
// result it costs the agent tokens and tells it nothing it can act on.
func TestAPanickingScanGivesTheAgentItsValueAndLogsItsStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScanner(t)
		var logged bytes.Buffer
		s.log = slog.New(slog.NewTextHandler(&logged, nil))
		s.estate.panics = "us-east-1/iam"
		cs := connect(t, newServer(s), "agent")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "scan", Arguments: map[string]any{"provider": "aws", "account": "123456789012"}})
		if err != nil || !res.IsError || len(res.Content) != 1 {
			t.Fatalf("scan: %+v, %v; want a tool error", res, err)
		}
		text, _ := res.Content[0].(*mcp.TextContent)
		const want = "scan of aws/123456789012 failed: liveop: the operation panicked: no lister for us-east-1/iam"
		if text == nil || text.Text != want {
			t.Fatalf("the agent got %q\nwant %q", text.Text, want)
		}
		if log := logged.String(); !strings.Contains(log, "no lister for us-east-1/iam") || !strings.Contains(log, "goroutine ") || !strings.Contains(log, "(*estate).list") {
			t.Fatalf("the log %q; want the panic's value and stack", log)
		}
	})
}

// The scan tool's account comes from an agent: an account no provider
// has (a newline, a space, a bidirectional override, 4 KB of digits, a
// path) is refused before it becomes a scope of the governor (which
// would keep its state, and write it to log lines and metric labels as
// it is) or of the guard, as package state's Scope asks of a scope
// function; each provider's own form is taken, an Azure subscription in
// the lower case its integration's scopes use.
func TestScanRefusesAnAccountNoProviderHas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScanner(t)
		cs := connect(t, newServer(s), "agent")
		for _, args := range []map[string]any{
			{"provider": "aws", "account": "123456789012\nINFO forged=1"},
			{"provider": "aws", "account": "1234 5678901"},
			{"provider": "aws", "account": "\u202e123456789012"},
			{"provider": "aws", "account": strings.Repeat("1", 4096)},
			{"provider": "aws", "account": "12345678901"},
			{"provider": "gcp", "account": "projects/p1/../../x"},
			{"provider": "gcp", "account": "p1"},
			{"provider": "azure", "account": "8f1c2d3e-4a5b-6c7d-8e9f"},
		} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "scan", Arguments: args})
			if err != nil || !res.IsError {
				t.Errorf("%s account %.40q: scanned (%v); want a tool error", args["provider"], args["account"], err)
			}
		}
		if n, sum := s.estate.attempts.Load(), s.gov.Summary(nil); n != 0 || len(sum.Scopes) != 0 || s.guard.Status().Started != 0 {
			t.Fatalf("the estate answered %d attempts, the governor keeps %d scopes, the guard started %d scans; want none",
				n, len(sum.Scopes), s.guard.Status().Started)
		}
		for _, c := range []struct{ provider, account, scope string }{
			{"gcp", "projects/inventory-prod", "gcp/projects/inventory-prod"},
			{"gcp", "organizations/123456789", "gcp/organizations/123456789"},
			{"azure", "8F1C2D3E-4A5B-6C7D-8E9F-0A1B2C3D4E5F", "azure/8f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f"},
		} {
			var out ScanOutput
			if res := call(t, cs, "scan", map[string]any{"provider": c.provider, "account": c.account}, &out); res.IsError || out.Dataset == nil || out.Dataset.Scope != c.scope {
				t.Errorf("%s %s: error %v, %+v; want a dataset of %s", c.provider, c.account, res.IsError, out.Dataset, c.scope)
			}
		}
	})
}

// Google Cloud's own account forms are all taken, each as the scope
// cloudggcp writes for it: a project's id (6 to 30 lower-case letters,
// digits and hyphens, a letter first, no hyphen last), a legacy
// domain-scoped project's id (example.com:my-project), a project's
// number, an organization's or a folder's number (a 64-bit one),
// by the one rule cloudggcp reads them with (internal/gcpaccount). A
// refusal reaches the agent as a tool error whose text says which account
// and why, quoted.
func TestScanTakesEveryGoogleCloudAccountForm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestScanner(t)
		cs := connect(t, newServer(s), "agent")
		for _, account := range []string{
			"projects/abcdef",
			"projects/a23456789012345678901234567890",
			"projects/my-project-1",
			"projects/example.com:my-project",
			"projects/google.com:inventory-prod",
			"projects/123456789012",
			"organizations/123456789012",
			"folders/987654321098",
		} {
			var out ScanOutput
			if res := call(t, cs, "scan", map[string]any{"provider": "gcp", "account": account}, &out); res.IsError || out.Dataset == nil || out.Dataset.Scope != "gcp/"+account {
				t.Errorf("gcp %s: error %v %s; want a dataset of gcp/%s", account, res.IsError, toolText(res), account)
			}
		}
		for _, c := range []struct{ account, text string }{
			{"projects/abcde", `gcp account "projects/abcde" is not projects/<id>`},
			{"projects/my-project-", `gcp account "projects/my-project-" is not`},
			{"projects/1project", `gcp account "projects/1project" is not`},
			{"projects/example.com:My-Project", `gcp account "projects/example.com:My-Project" is not`},
			{"projects/.com:my-project", `gcp account "projects/.com:my-project" is not`},
			{"projects/example.com:my-project\n", `gcp account "projects/example.com:my-project\n" is not`},
			// A domain of more than 253 characters, no domain's name, which
			// cloudggcp names no account.
			{"projects/" + strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com:my-project", `is not projects/<id>`},
		} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "scan", Arguments: map[string]any{"provider": "gcp", "account": c.account}})
			if err != nil || !res.IsError || !strings.Contains(toolText(res), c.text) {
				t.Errorf("gcp %q: %v, %q; want a tool error saying %q", c.account, err, toolText(res), c.text)
			}
		}
	})
}

// toolText is the text content of a tool's result, what an agent reads.
func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// What the agent sent is quoted back in a refusal at most 64 characters
// long, the provider as the account: a megabyte of provider would
// otherwise come back whole, in the tool's error, costing the agent what
// it cost to send.
func TestARefusalQuotesTheAgentsInputBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := connect(t, newServer(newTestScanner(t)), "agent")
		for _, args := range []map[string]any{
			{"provider": strings.Repeat("p", 1<<20), "account": "123456789012"},
			{"provider": "aws", "account": strings.Repeat("1", 1<<20)},
		} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "scan", Arguments: args})
			if err != nil || !res.IsError {
				t.Fatalf("scan: %v, %v; want a tool error", res, err)
			}
			if text := toolText(res); len(text) > 200 || !strings.Contains(text, `"ppp`) && !strings.Contains(text, `"111`) {
				t.Errorf("the agent got %d bytes: %.120q...; want the input quoted, at most 64 characters of it", len(text), text)
			}
		}
	})
}
