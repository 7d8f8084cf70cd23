package liveop

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/yamlconf"
	"go.yaml.in/yaml/v3"
)

// Defaults of a zero Config.
const (
	defaultCooldown           = 120 * time.Second
	defaultMaxConcurrent      = 1
	defaultMaxConcurrentTotal = 2
	defaultCallerWindow       = time.Hour
	// defaultOperationTimeout is the timeout ParseConfig gives a
	// configuration without live_operation_timeout_seconds. A Config built
	// in code has no timeout unless it sets one.
	defaultOperationTimeout = time.Hour
)

// Config holds the settings of a Guard, read from the live_* keys of the
// ratelimit section by ParseConfig. Fields left at their zero value (nil,
// for pointers) take the default each states, so the zero Config is every
// default; pointer fields are the ones where zero is a meaningful setting.
// A Config is a plain value, which Validate and New only read: one Config
// may be given to them from several goroutines at once, as long as none
// changes it meanwhile. New copies what it needs (ProviderCooldownSeconds
// too), so a Config changed after New does not change the Guard.
type Config struct {
	// CooldownSeconds is how long a scope cools down after an operation on
	// it ends. nil: 120; 0: no cooldown.
	CooldownSeconds *float64 `yaml:"live_cooldown_seconds" json:"live_cooldown_seconds,omitempty"`
	// CooldownAfterFailure: false starts no cooldown after an operation
	// that failed (returned an error, panicked, timed out or was
	// abandoned). nil: true.
	CooldownAfterFailure *bool `yaml:"live_cooldown_after_failure" json:"live_cooldown_after_failure,omitempty"`
	// MaxConcurrent caps the operations running per scope. 0: 1.
	MaxConcurrent int `yaml:"live_max_concurrent" json:"live_max_concurrent,omitempty"`
	// MaxConcurrentTotal caps the operations running in all. 0: 2.
	MaxConcurrentTotal int `yaml:"live_max_concurrent_total" json:"live_max_concurrent_total,omitempty"`
	// CallerMaxOperations caps the operations one caller starts per
	// window. 0: unlimited.
	CallerMaxOperations int `yaml:"live_caller_max_operations" json:"live_caller_max_operations,omitempty"`
	// CallerWindowSeconds is the sliding window of the caller quota.
	// 0: 3600.
	CallerWindowSeconds float64 `yaml:"live_caller_window_seconds" json:"live_caller_window_seconds,omitempty"`
	// OperationTimeoutSeconds cancels an operation that runs longer.
	// 0: no timeout (ParseConfig: 3600 when the key is absent).
	OperationTimeoutSeconds float64 `yaml:"live_operation_timeout_seconds" json:"live_operation_timeout_seconds,omitempty"`
	// ProviderCooldownSeconds overrides CooldownSeconds per provider
	// ("aws": 300; 0 turns the provider's cooldown off). In a file it is
	// ratelimit.<provider>.live_cooldown_seconds, and for a provider other
	// than aws, azure and gcp
	// ratelimit.providers.<provider>.live_cooldown_seconds.
	ProviderCooldownSeconds map[string]float64 `yaml:"-" json:"provider_cooldown_seconds,omitempty"`
}

// Validate reports every setting that cannot work, each naming its key path
// (ratelimit.live_max_concurrent: must be >= 0), joined with errors.Join:
// errors.As finds the first. A provider name of ProviderCooldownSeconds
// that no scope's provider can be is one of them, as it is to
// resilience's Config.Validate (AWS, Acme where an imported integration's
// scopes say acme, myapi beside MyAPI, a name with space around it), and
// so is one with a "/" or ":".
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"live_max_concurrent", float64(c.MaxConcurrent)},
		{"live_max_concurrent_total", float64(c.MaxConcurrentTotal)},
		{"live_caller_max_operations", float64(c.CallerMaxOperations)},
		{"live_caller_window_seconds", c.CallerWindowSeconds},
		{"live_operation_timeout_seconds", c.OperationTimeoutSeconds},
	} {
		if !nonNegative(f.v) {
			errs = append(errs, fieldErr("ratelimit."+f.key, nonNegativeMsg(f.v, "")))
		}
	}
	if c.CooldownSeconds != nil && !nonNegative(*c.CooldownSeconds) {
		errs = append(errs, fieldErr("ratelimit.live_cooldown_seconds", nonNegativeMsg(*c.CooldownSeconds, offByZero)))
	}
	for _, p := range sortedKeys(c.ProviderCooldownSeconds) {
		if p == "" {
			errs = append(errs, fieldErr("ratelimit.providers", "a provider name is not empty")) // resilience's words
		} else if err := providerKey(p, c.ProviderCooldownSeconds); err != nil {
			errs = append(errs, err)
		} else if strings.ContainsAny(p, "/:") {
			errs = append(errs, fieldErr(providerPath(p), badProviderName))
		} else if v := c.ProviderCooldownSeconds[p]; !nonNegative(v) {
			errs = append(errs, fieldErr(providerPath(p)+".live_cooldown_seconds", nonNegativeMsg(v, offByZero)))
		}
	}
	return errors.Join(errs...)
}

// providerKey checks the provider name p of a Config's
// ProviderCooldownSeconds, other than aws, azure and gcp (which are
// ratelimit.aws, not keys under providers), as resilience's Validate
// checks a name under providers: against the other names of cooldowns
// and the names the imported integrations know (yamlconf.ProviderKey).
func providerKey(p string, cooldowns map[string]float64) error {
	if yamlconf.BuiltinProvider(p) {
		return nil
	}
	return yamlconf.ProviderKey(p, sortedKeys(cooldowns))
}

// badProviderName says why a provider name is refused.
const badProviderName = `a provider is a scope's text before its first "/" or ":"`

// providerPath is the key path of a provider's settings in the section:
// ratelimit.aws, or ratelimit.providers.github for a provider other than
// aws, azure and gcp.
func providerPath(p string) string {
	switch p {
	case "aws", "azure", "gcp":
		return "ratelimit." + p
	}
	return yamlconf.KeyPath("ratelimit.providers", p)
}

func nonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// nonNegativeMsg is the error of v, which nonNegative refuses: "must be
// >= 0", with why in parentheses when there is a note, or, for a number
// that is not finite (which code can set and a document cannot give),
// "must be a finite number >= 0", since +Inf is >= 0, as resilience's
// Validate says it.
func nonNegativeMsg(v float64, note string) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "must be a finite number >= 0"
	case note != "":
		return "must be >= 0 (" + note + ")"
	}
	return "must be >= 0"
}

// offByZero is why a cooldown may be 0.
const offByZero = "0 turns the cooldown off"

func fieldErr(path, msg string) error { return &yamlconf.Error{Path: path, Msg: msg} }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseConfig reads the live_* keys of the ratelimit section from YAML or
// JSON: live_cooldown_seconds, live_cooldown_after_failure,
// live_max_concurrent, live_max_concurrent_total,
// live_caller_max_operations, live_caller_window_seconds and
// live_operation_timeout_seconds at the top level of the section, and
// live_cooldown_seconds under a provider's key (ratelimit.aws,
// ratelimit.providers.github). As with
// resilience.ParseConfig, a document with a top-level ratelimit key is read
// as that section (and one whose top-level aws is the AWS SDK's section,
// holding retry_mode, has none), and keys ending in _seconds take seconds
// or a Go duration ("90s"). The other keys of the section are
// resilience.ParseConfig's and are not read here.
//
// Unknown live_* keys (live_cooldown_secs, a provider's
// live_max_concurrent, any in a service's mapping, or one in another case:
// LIVE_MAX_CONCURRENT), a
// live_* key of a provider other than aws, azure and gcp at the top of
// the section or of a name under providers that resilience.ParseConfig
// refuses there, in its words (aws, azure or gcp in any case, a name with
// space around it, or one that differs in case alone from one an
// imported integration knows, GitHub where cloudghttp is imported, or
// from another name under providers, myapi and MyAPI), a provider's key or providers given twice with a live_* key in
// it, a merge key (<<) that brings live_* keys into the section, a
// provider's mapping or providers (ratelimit.aws.<<: unknown key, as
// resilience.ParseConfig says),
// malformed values, negative ones, a null (live_cooldown_seconds: ~, or
// live_cooldown_after_failure: with nothing after it, which would read as
// the default, true, that leaving the key out says), and an
// explicit zero live_max_concurrent, live_max_concurrent_total,
// live_caller_window_seconds or live_operation_timeout_seconds are errors
// that name the key path (ratelimit.live_max_concurrent: must be > 0), all
// of a document's at once (joined with errors.Join; errors.As finds the
// first *resilience.ConfigError). The operation timeout is 3600 s when the
// key is absent.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	n, err := yamlconf.Document(data, "ratelimit")
	if err != nil || n == nil {
		return Config{OperationTimeoutSeconds: defaultOperationTimeout.Seconds()}, err
	}
	if n, err = yamlconf.RatelimitSection(n); err != nil || n == nil {
		return Config{OperationTimeoutSeconds: defaultOperationTimeout.Seconds()}, err
	}
	// Every mistake is reported, not only the first: what failed to decode
	// is left at its default, so Validate adds none for it.
	//
	// Lenient: the section's other keys belong to resilience.ParseConfig.
	// The live_* ones are this reader's, so a misspelt one is an error
	// here too, not only where resilience.ParseConfig reads the file.
	errs := unknownLiveKeys(n, "ratelimit", topLevelKeys)
	errs = append(errs, configDecoder.Decode(&cfg, n, "ratelimit", true))
	// A provider's cooldown: under its key (ratelimit.aws), or, for a
	// provider other than aws, azure and gcp, under providers
	// (ratelimit.providers.github).
	providers := func(n *yaml.Node, path string, yield func(name, path string, value *yaml.Node)) {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			name, _ := keyName(n.Content[i])
			if yamlconf.IsMerge(n.Content[i]) {
				continue // reported by mergedLiveKeys
			}
			if name == "" && path == "ratelimit" {
				continue // no string, or empty: reported by the decoder
			}
			if name != "" && seen[name] {
				continue // reported by duplicateLiveKeys
			}
			seen[name] = true
			if value := yamlconf.Deref(n.Content[i+1]); value.Kind == yaml.MappingNode {
				yield(name, yamlconf.KeyPath(path, name), value)
			}
		}
		errs = append(errs, duplicateLiveKeys(n, path)...)
	}
	// The names under providers, against which each is checked
	// (yamlconf.ProviderKey: myapi and MyAPI).
	var providerNames []string
	var provider func(name, path string, value *yaml.Node)
	provider = func(name, path string, value *yaml.Node) {
		if path == "ratelimit.providers" {
			for i := 0; i+1 < len(value.Content); i += 2 {
				if k, _ := keyName(value.Content[i]); k != "" && !yamlconf.IsMerge(value.Content[i]) {
					providerNames = append(providerNames, k)
				}
			}
			sort.Strings(providerNames) // as resilience's Validate has them
			// A merge key here brings in providers' mappings.
			errs = append(errs, mergedLiveKeys(value, path, 2)...)
			// A live setting here, not under a provider's name, is read
			// by neither reader: refused in resilience's words.
			for i := 0; i+1 < len(value.Content); i += 2 {
				k, _ := keyName(value.Content[i])
				if v := yamlconf.Deref(value.Content[i+1]); isLive(k) && v.Kind != yaml.MappingNode && v.ShortTag() != "!!null" {
					errs = append(errs, fieldErr(yamlconf.KeyPath(path, k), "must be a mapping"))
				}
			}
			providers(value, path, provider)
			return
		}
		if path == yamlconf.KeyPath("ratelimit", name) && !yamlconf.BuiltinProvider(name) {
			// Another provider's settings at the top of the section:
			// resilience.ParseConfig refuses them, so a live key among
			// them is refused here too, not read.
			switch {
			case !hasLiveKey(value):
			case name == "enabled": // a setting, not a mapping
				errs = append(errs, fieldErr(path, "must be a single value"))
			default:
				errs = append(errs, fieldErr(path, "unknown key"+yamlconf.SectionHint(name)))
			}
			return
		}
		if path == yamlconf.KeyPath("ratelimit.providers", name) && name != "" {
			// A name no call goes by (aws, which has its own key, AWS,
			// Acme where an integration's scopes say acme, myapi beside
			// MyAPI, one with space around it): resilience.ParseConfig
			// refuses it, so a live key under it is refused too, in its
			// words, not read.
			if err := yamlconf.ProviderKey(name, providerNames); err != nil {
				if hasLiveKey(value) {
					errs = append(errs, err)
				}
				return
			}
		}
		if path == yamlconf.KeyPath("ratelimit.providers", name) && (name == "" || strings.ContainsAny(name, "/:")) {
			// A name no scope's provider can have: reported here, at its
			// path, rather than by Validate, which knows no path.
			switch {
			case !hasLiveKey(value):
			case name == "":
				errs = append(errs, fieldErr("ratelimit.providers", "keys must be non-empty strings"))
			default:
				errs = append(errs, fieldErr(path, badProviderName))
			}
			return
		}
		errs = append(errs, unknownLiveKeys(value, path, providerKeys)...)
		errs = append(errs, mergedLiveKeys(value, path, 1)...)
		// A service's mapping has no live key (the guard has no cooldown
		// per service): each is unknown, as resilience.ParseConfig says;
		// one directly under services, not under a service's name, is
		// refused in its words too.
		if services := yamlconf.Section(value, "services"); services != nil && services.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(services.Content); i += 2 {
				svc, _ := keyName(services.Content[i])
				switch sv := yamlconf.Deref(services.Content[i+1]); {
				case sv.Kind == yaml.MappingNode:
					errs = append(errs, unknownLiveKeys(sv, yamlconf.KeyPath(path+".services", svc), nil)...)
				case isLive(svc) && sv.ShortTag() != "!!null":
					errs = append(errs, fieldErr(yamlconf.KeyPath(path+".services", svc), "must be a mapping"))
				}
			}
		}
		if yamlconf.Section(value, "live_cooldown_seconds") == nil {
			return
		}
		var p struct {
			CooldownSeconds *float64 `yaml:"live_cooldown_seconds"`
		}
		if err := configDecoder.Decode(&p, value, path, true); err != nil {
			errs = append(errs, err)
			return
		}
		if p.CooldownSeconds != nil {
			if cfg.ProviderCooldownSeconds == nil {
				cfg.ProviderCooldownSeconds = map[string]float64{}
			}
			cfg.ProviderCooldownSeconds[name] = *p.CooldownSeconds
		}
	}
	// A merge key at the section's top brings in live keys of the
	// section (<<: {live_max_concurrent: 2}), of a provider's mapping
	// (<<: {aws: {live_cooldown_seconds: 5}}) or under providers.
	errs = append(errs, mergedLiveKeys(n, "ratelimit", 3)...)
	providers(n, "ratelimit", provider)
	if cfg.OperationTimeoutSeconds == 0 { // absent or null; an explicit 0 is an error
		cfg.OperationTimeoutSeconds = defaultOperationTimeout.Seconds()
	}
	if err := errors.Join(append(errs, cfg.Validate())...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// The live_* keys of the section's top level (Config's yaml names) and
// of a provider's mapping.
var (
	topLevelKeys = yamlKeys(reflect.TypeFor[Config]())
	providerKeys = map[string]bool{"live_cooldown_seconds": true}
)

func yamlKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

// keyName returns the name of the key node k, an alias followed, and
// whether it is a string at all (not a sequence or a mapping: then "").
func keyName(k *yaml.Node) (string, bool) {
	if k = yamlconf.Deref(k); k.Kind != yaml.ScalarNode {
		return "", false
	}
	return k.Value, true
}

// isLive reports whether the key k is one of this reader's, known or
// not: it starts with live_, in any case (LIVE_MAX_CONCURRENT is no key
// of resilience.ParseConfig's either, and is refused, not passed over).
func isLive(k string) bool {
	return len(k) >= len("live_") && strings.EqualFold(k[:len("live_")], "live_")
}

// hasLiveKey reports whether the mapping n holds a key that starts with
// live_, in any case.
func hasLiveKey(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, _ := keyName(n.Content[i]); isLive(k) {
			return true
		}
	}
	return false
}

// duplicateLiveKeys reports every key the mapping n holds more than once
// where one of its values holds a live_* key (a provider's, or one under
// providers): only the first would be read.
func duplicateLiveKeys(n *yaml.Node, path string) []error {
	count := map[string]int{}
	live := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, ok := keyName(n.Content[i])
		if !ok {
			continue // not a string: reported as such
		}
		count[k]++
		live[k] = live[k] || holdsLiveKey(n.Content[i+1], 2)
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, ok := keyName(n.Content[i]); ok && count[k] > 1 && live[k] {
			errs = append(errs, fieldErr(yamlconf.KeyPath(path, k), "duplicate key"))
			count[k] = 0 // once
		}
	}
	return errs
}

// holdsLiveKey reports whether the value n, aliases followed, is a
// mapping holding a key that starts with live_, itself or in the values
// of its keys, down to depth levels.
func holdsLiveKey(n *yaml.Node, depth int) bool {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode || depth <= 0 {
		return false
	}
	if hasLiveKey(n) {
		return true
	}
	for i := 1; i < len(n.Content); i += 2 {
		if holdsLiveKey(n.Content[i], depth-1) {
			return true
		}
	}
	return false
}

// unknownLiveKeys reports every key of the mapping n that starts with
// live_, in any case, and is not one of known.
func unknownLiveKeys(n *yaml.Node, path string, known map[string]bool) []error {
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, _ := keyName(n.Content[i]); isLive(k) && !known[k] {
			errs = append(errs, fieldErr(yamlconf.KeyPath(path, k), "unknown key"))
		}
	}
	return errs
}

// mergedLiveKeys reports a YAML merge key (<<) of the mapping n that
// brings in a live_* key, down to depth levels of the mappings it merges
// (1: their own keys): neither this reader nor resilience.ParseConfig
// reads through a merge key, and resilience refuses it in these words.
func mergedLiveKeys(n *yaml.Node, path string, depth int) []error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !yamlconf.IsMerge(n.Content[i]) {
			continue
		}
		v := n.Content[i+1]
		for j := 0; v.Kind == yaml.AliasNode && v.Alias != nil && j < 16; j++ {
			v = v.Alias
		}
		merged := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode { // <<: [*a, *b]
			merged = v.Content
		}
		for _, m := range merged {
			if holdsLiveKey(m, depth) {
				return []error{fieldErr(path+".<<", "unknown key")}
			}
		}
	}
	return nil
}

// configDecoder decodes the live keys; those it lists must be > 0 when
// given at all.
var configDecoder = yamlconf.Decoder{Positive: map[string]bool{
	"live_max_concurrent": true, "live_max_concurrent_total": true,
	"live_caller_window_seconds": true, "live_operation_timeout_seconds": true,
}}

// LoadConfig reads a YAML or JSON file with ParseConfig.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// settings are a Config with its defaults applied.
type settings struct {
	cooldown          time.Duration
	providerCooldown  map[string]time.Duration
	coolAfterFailure  bool
	maxPerScope       int
	maxTotal          int
	callerMax         int
	callerWindow      time.Duration
	operationTimeout  time.Duration
	callerWindowLabel string // seconds, as the quota message prints them
}

func (c Config) settings() settings {
	s := settings{
		cooldown:         defaultCooldown,
		coolAfterFailure: c.CooldownAfterFailure == nil || *c.CooldownAfterFailure,
		maxPerScope:      orDefault(c.MaxConcurrent, defaultMaxConcurrent),
		maxTotal:         orDefault(c.MaxConcurrentTotal, defaultMaxConcurrentTotal),
		callerMax:        c.CallerMaxOperations,
		callerWindow:     defaultCallerWindow,
		operationTimeout: seconds(c.OperationTimeoutSeconds),
	}
	if c.CooldownSeconds != nil {
		s.cooldown = seconds(*c.CooldownSeconds)
	}
	if c.CallerWindowSeconds > 0 {
		s.callerWindow = seconds(c.CallerWindowSeconds)
	}
	s.callerWindowLabel = formatSeconds(s.callerWindow)
	if len(c.ProviderCooldownSeconds) > 0 {
		s.providerCooldown = make(map[string]time.Duration, len(c.ProviderCooldownSeconds))
		for p, v := range c.ProviderCooldownSeconds {
			s.providerCooldown[p] = seconds(v)
		}
	}
	return s
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// seconds converts a validated number of seconds, saturating at the
// longest Duration; a positive number below a nanosecond is one, not zero
// (which means none).
func seconds(v float64) time.Duration {
	ns := v * float64(time.Second)
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns > 0 && ns < 1:
		return 1
	}
	return time.Duration(ns)
}

// formatSeconds prints a duration as the messages do: 3600, 90.5.
func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// cooldownOf returns the cooldown of a scope: its provider's override, or
// the guard's.
func (s *settings) cooldownOf(scope string) time.Duration {
	if d, ok := s.providerCooldown[provider(scope)]; ok {
		return d
	}
	return s.cooldown
}

// provider returns the text of a scope before its first "/" or ":".
func provider(scope string) string {
	if i := strings.IndexAny(scope, "/:"); i >= 0 {
		return scope[:i]
	}
	return scope
}
