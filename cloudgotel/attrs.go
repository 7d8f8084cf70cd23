package cloudgotel

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.38.0"

	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/resilience"
)

// The attributes of cloudg's own, where the semantic conventions have none.
const (
	levelKey      = attribute.Key("cloudg.level")       // the bucket a wait was for: provider, account or leaf
	reasonKey     = attribute.Key("cloudg.reason")      // what stopped a call that gave up; why a breaker opened
	lossKey       = attribute.Key("cloudg.loss")        // how a call was lost: gave_up, skipped, failed, refused, cancelled, errored, panicked, denied
	retryAfterKey = attribute.Key("cloudg.retry_after") // a throttle's hint, in seconds
	errorKey      = attribute.Key("cloudg.error")       // a throttle's answer, as its error reads
	retryKey      = attribute.Key("cloudg.retry")       // a retry's number, 1 for the first
	delayKey      = attribute.Key("cloudg.delay")       // a retry's delay, in seconds
	waitKey       = attribute.Key("cloudg.wait")        // a wait, in seconds
)

// scopeAttrs returns the attributes of sc, less those the configuration
// drops. A part is caller data, which may hold any bytes; an attribute's
// value is valid UTF-8 (text), which the OpenTelemetry attribute values
// and the exporters' formats require (Prometheus's registry refuses a
// whole scrape for one label value that is not): each run of bytes that
// is not is written U+FFFD, so that scopes that differ only there share
// their series, added up as WithoutAccount's are.
func (c *config) scopeAttrs(sc resilience.Scope) []attribute.KeyValue {
	return c.attrsOf(c.values(sc))
}

// values returns sc as its attributes say it: each part its attribute's
// value (text; the account accountID's), "" for those the configuration
// drops.
func (c *config) values(sc resilience.Scope) resilience.Scope {
	v := resilience.Scope{Provider: text(sc.Provider)}
	if sc.Account != "" && !c.noAccount {
		v.Account = text(accountID(sc))
	}
	if sc.Region != "" {
		v.Region = text(sc.Region)
	}
	if sc.Service != "" {
		v.Service = text(sc.Service)
	}
	if sc.Operation != "" && !c.noOperation {
		v.Operation = text(sc.Operation)
	}
	return v
}

// attrsOf returns the attributes of v, a scope as values says it.
func (c *config) attrsOf(v resilience.Scope) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 6)
	kv = append(kv, semconv.CloudProviderKey.String(v.Provider))
	if v.Account != "" {
		kv = append(kv, semconv.CloudAccountID(v.Account))
	}
	if v.Region != "" {
		kv = append(kv, semconv.CloudRegion(v.Region))
	}
	if v.Service != "" {
		kv = append(kv, semconv.RPCService(v.Service))
	}
	if v.Operation != "" {
		kv = append(kv, semconv.RPCMethod(v.Operation))
	}
	return kv
}

// accountID returns sc's account as cloud.account.id says it: a GCP
// project's (projects/<id>, as cloudggcp's scopes name it) is its bare
// id, as OpenTelemetry's GCP resource detectors write it (the metadata
// server's project id), so that a scope's series join the resources of
// its project; any other account (a GCP organization's or folder's, which
// is no project, organizations/<id>; another provider's) is as written.
func accountID(sc resilience.Scope) string {
	if id, ok := strings.CutPrefix(sc.Account, "projects/"); ok && sc.Provider == "gcp" && id != "" {
		return id
	}
	return sc.Account
}

// maxValue is the most bytes of a scope part's attribute: more than any
// provider's name of a service, an operation, an account or a region, and
// within the label values of Cloud Monitoring and CloudWatch (1,024
// characters), so that a part of caller data 10 KB long makes no 10 KB
// label on each of its series. maxErrorText is a throttle's answer's, on a span.
const (
	maxValue     = 256
	maxErrorText = 1 << 10
)

// text returns s as a scope part's attribute value: valid UTF-8, with
// U+FFFD for each run of bytes that is not, and at most maxValue bytes,
// cut short at a rune and ended with … when longer.
func text(s string) string { return bounded(s, maxValue) }

// bounded returns s as valid UTF-8 (U+FFFD for each run of bytes that is
// not) of at most n bytes: s itself when it is, else cut short at a rune
// and ended with … (three bytes).
func bounded(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// errorText is err's message, as a throttle's cloudg.error attribute says
// it (text). When err's Error method panics (a typed nil pointer of the
// caller's or an SDK's, which the governor reads as an unreadable error,
// see resilience.Classify), it says so, as the governor's descriptions
// do: the observer does not panic on an error a caller made.
func errorText(err error) string {
	msg, r := errread.Message(err)
	if r != nil {
		return fmt.Sprintf("unreadable error (a method of %T (Error) panicked: %v)", err, r)
	}
	return bounded(msg, maxErrorText)
}

// maxCached bounds the attribute sets an Observer keeps: a sweep over a
// million scopes makes its sets anew rather than holding a million.
const maxCached = 1 << 14

// attrCache keeps the attribute set of each scope (with one more
// attribute for some instruments) so that recording an event makes none;
// the scopes whose parts the configuration drops share their entry.
// It is safe for concurrent use.
type attrCache struct {
	c *config
	m sync.Map // cacheKey -> *cached
	n atomic.Int64
}

type cacheKey struct {
	scope resilience.Scope // as its attributes say it (config.values)
	key   attribute.Key    // "" for the scope's own
	val   string
}

// cached is a scope's attribute set, and the options that pass it: kept as
// slices, since a variadic argument made at each call would be allocated.
type cached struct {
	set    attribute.Set
	add    []metric.AddOption
	record []metric.RecordOption
}

// of returns the measurement options of sc's attributes, with key=val added
// when key is set.
func (a *attrCache) of(sc resilience.Scope, key attribute.Key, val string) *cached {
	// Keyed by what the attributes show, so that the scopes that share a
	// set (WithoutAccount's accounts, WithoutOperation's operations, parts
	// that differ only past maxValue) share one entry: an estate of more
	// accounts than the cache holds keeps its few sets cached, and an
	// entry holds no more of a part than its attribute (not 10 KB of a
	// caller's string).
	k := cacheKey{a.c.values(sc), key, val}
	if v, ok := a.m.Load(k); ok {
		return v.(*cached)
	}
	kv := a.c.attrsOf(k.scope)
	if key != "" {
		kv = append(kv, key.String(val))
	}
	set := attribute.NewSet(kv...)
	opt := metric.WithAttributeSet(set)
	v := &cached{set: set, add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	if a.n.Add(1) > maxCached {
		a.m.Clear()
		a.n.Store(1)
	}
	a.m.Store(k, v)
	return v
}
