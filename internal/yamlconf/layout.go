package yamlconf

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cloudg/cloudg/internal/scopenames"
	"go.yaml.in/yaml/v3"
)

// The layout of a configuration document. A whole configuration has
// sections at its top level: ratelimit (the governor's, read by
// resilience.ParseConfig and liveop.ParseConfig), aws (the AWS SDK's own
// retry settings, read by cloudgaws.ParseConfig), and any others a
// program keeps there (the long form). The governor's section may also
// stand alone, as the whole document, with enabled, aws, azure, gcp,
// providers and the live_* keys at its top level (the short form). Every
// reader finds its section with Layout, so that each reads the same
// document the same way.
//
// A document with a ratelimit key is a whole configuration. Without it,
// the top-level aws tells the two forms apart, by the keys it holds:
//
//   - retry_mode, which only the SDK's section has: the SDK's section, in
//     a whole configuration without a ratelimit section. A governor
//     setting beside it would be read by neither reader, so it is an
//     error, and so is a top-level key that only the governor's section
//     has (providers, live_*), or a likely misspelling of ratelimit
//     (NearRatelimit), whose settings no reader would read.
//   - max_retries alone, a key of both sections: the governor's section
//     alone when the document has another key of it (enabled, azure, gcp,
//     providers, live_*); otherwise nothing tells the SDK's retries from
//     the governor's, and the document is an error for every reader,
//     which says how to write either (retry_mode beside it for the SDK's;
//     ratelimit: {aws: ...}, or max_attempts, for the governor's).
//   - any other key of the governor's (max_rps, services): the governor's
//     section alone, which then has no SDK section.
//
// The rule looks for keys that prove a section rather than for keys a
// section lacks, so that a misspelt key of a governor section standing
// alone is still reported, not taken as the sign of another section.
//
// sdkKeys are the settings of the SDK's section; sdkOnlyKey is the one
// the governor's aws section lacks.
var sdkKeys = map[string]bool{"max_retries": true, "retry_mode": true}

const sdkOnlyKey = "retry_mode"

// sectionKeys are the keys of the governor's section besides aws and the
// live_* keys: a document holding one is the governor's section alone
// unless it has a ratelimit key or its aws holds retry_mode.
var sectionKeys = map[string]bool{"enabled": true, "azure": true, "gcp": true, "providers": true}

// SectionKeys returns the keys that Layout takes for keys of the
// governor's section, besides aws and those starting with live_; package
// resilience checks them against its Config.
func SectionKeys() []string {
	keys := make([]string, 0, len(sectionKeys))
	for k := range sectionKeys {
		keys = append(keys, k)
	}
	return keys
}

// Layout finds the sections of a document's top node (see Document): the
// governor's section (the value of the ratelimit key, the node itself in
// the short form, or nil for a whole configuration without one) and the
// AWS SDK's (the top-level aws of a whole configuration, or nil). A
// governor setting in a top-level aws that retry_mode makes the SDK's is
// an error naming its key path, and so is a ratelimit key given twice, or
// a top-level aws given twice where it is the SDK's section or beside
// one: only the first would be read.
func Layout(top *yaml.Node) (ratelimit, sdk *yaml.Node, err error) {
	if err := duplicate(top, "ratelimit"); err != nil {
		return nil, nil, err
	}
	if sec := Section(top, "ratelimit"); sec != nil {
		return sec, Section(top, "aws"), duplicate(top, "aws")
	}
	aws := Section(top, "aws")
	if aws == nil || aws.Kind != yaml.MappingNode || len(aws.Content) == 0 {
		return top, nil, nil
	}
	if Section(aws, sdkOnlyKey) != nil {
		if err := duplicate(top, "aws"); err != nil {
			return nil, nil, err
		}
		var errs []error
		for i := 0; i+1 < len(aws.Content); i += 2 {
			if k := deref(aws.Content[i]).Value; !sdkKeys[k] {
				errs = append(errs, errorf(KeyPath("aws", k), "not a setting of the AWS SDK's section, which retry_mode makes this "+
					"top-level aws (max_retries, retry_mode); the governor's settings go under ratelimit.aws"))
			}
		}
		// Nor is the governor's section the document's top, where its
		// keys that no other section could have are read by no reader.
		for i := 0; i+1 < len(top.Content); i += 2 {
			k := deref(top.Content[i]).Value
			if k == "providers" || strings.HasPrefix(k, "live_") {
				errs = append(errs, errorf(KeyPath("", k), "a setting of the governor's section, which this document does not have at its top: "+
					"retry_mode makes its top-level aws the AWS SDK's section; the governor's settings go under "+KeyPath("ratelimit", k)))
			}
			// Nor is a misspelt ratelimit another section, whose
			// governor settings no reader would read.
			if hint := NearRatelimit(k); hint != "" {
				errs = append(errs, errorf(KeyPath("", k), "unknown key"+hint))
			}
		}
		return nil, aws, errors.Join(errs...)
	}
	for i := 0; i+1 < len(aws.Content); i += 2 {
		if !sdkKeys[deref(aws.Content[i]).Value] {
			return top, nil, nil // a governor setting: the short form
		}
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := deref(top.Content[i]).Value; sectionKeys[k] || strings.HasPrefix(k, "live_") {
			return top, nil, nil
		}
	}
	return nil, nil, errorf("aws.max_retries", "ambiguous in a document without a ratelimit key: the AWS SDK's retries "+
		"(write retry_mode beside it: aws: {max_retries: N, retry_mode: standard}) or the governor's "+
		"(write ratelimit: {aws: {max_retries: N}}, or aws: {max_attempts: N+1})")
}

// duplicate reports key when the mapping n holds it more than once: the
// section Section finds is the first, and no reader would see the others.
// A section's own keys are the decoder's to report.
func duplicate(n *yaml.Node, key string) error {
	seen := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).Value != key {
			continue
		}
		if seen {
			return errorf(key, "duplicate key")
		}
		seen = true
	}
	return nil
}

// RatelimitSection returns the governor's section of a document's top
// node, as Layout finds it.
func RatelimitSection(top *yaml.Node) (*yaml.Node, error) {
	sec, _, err := Layout(top)
	return sec, err
}

// NearRatelimit returns what an error about the unknown key name at the
// top of a document without a ratelimit key adds when name is a likely
// misspelling of ratelimit, " (did you mean ratelimit?)", and ""
// otherwise: beside the SDK's section (Layout) it would be passed over as
// another section, and as the short form's key (SectionHint) taken for
// another provider. A likely misspelling is one edit from ratelimit once
// case, "_" and "-" are set aside (RateLimit, rate_limit, ratelimits,
// ratelimt); a program's own section one more edit away (ratelimiter) is
// not one.
func NearRatelimit(name string) string {
	norm := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
	if name == "ratelimit" || distance(norm, "ratelimit") > 1 {
		return ""
	}
	return " (did you mean ratelimit?)"
}

// OtherProvider returns what an error about the key name at the top of
// the governor's section, holding a mapping, adds: a provider other than
// aws, azure and gcp is tuned under providers. Both readers of the
// section (resilience.ParseConfig and liveop.ParseConfig) say it alike.
func OtherProvider(name string) string {
	return " (a provider other than aws, azure and gcp is tuned under providers: ratelimit.providers." + name + ")"
}

// SectionHint returns what an error about the unknown key name at the top
// of the governor's section, holding a mapping, adds, as the decoder of
// resilience.ParseConfig words it: the key of the section that name is a
// likely misspelling of (see Nearest), " (did you mean aws?)", or
// NearRatelimit's, or else OtherProvider's. package liveop, which reads
// the live keys of such a mapping, refuses it in these words.
func SectionHint(name string) string {
	near := Nearest(name, func(yield func(string) bool) {
		if !yield("aws") {
			return
		}
		for k := range sectionKeys {
			if !yield(k) {
				return
			}
		}
	})
	if near != "" {
		return " (did you mean " + near + "?)"
	}
	if hint := NearRatelimit(name); hint != "" {
		return hint
	}
	return OtherProvider(name)
}

// BuiltinProvider reports whether name is a provider the governor's
// section tunes under its own key (aws, azure, gcp).
func BuiltinProvider(name string) bool { return name == "aws" || name == "azure" || name == "gcp" }

// ProviderKey returns the error of name, a non-empty key under
// ratelimit.providers beside the keys names (name among them or not), at
// its path, when no call can go by it, and nil otherwise: aws, azure and
// gcp, which have keys of their own; one of them in another case or with
// space around it (AWS); another name with space around it; a name that
// differs in case alone from one an imported integration knows (GitHub,
// where cloudghttp is imported and its scopes say github: see
// scopenames.Providers) or from another of names (myapi and MyAPI, each
// reported naming the other). Provider names are case-sensitive. Both
// readers of the section (resilience's Config.Validate and liveop's
// ParseConfig and Config.Validate) check a name with it, so that they
// refuse the same names in the same words.
func ProviderKey(name string, names []string) error {
	path := KeyPath("ratelimit.providers", name)
	if BuiltinProvider(name) {
		return errorf(path, name+" has its own key: ratelimit."+name)
	}
	for _, own := range []string{"aws", "azure", "gcp"} {
		if strings.EqualFold(strings.TrimSpace(name), own) {
			// Another provider to the governor (names are compared as
			// they are), which no call of the integrations uses.
			return errorf(path, fmt.Sprintf("%q is not %s, whose calls go by ratelimit.%s (provider names are case-sensitive)", name, own, own))
		}
	}
	if trimmed := strings.TrimSpace(name); trimmed != name {
		return errorf(path, fmt.Sprintf("a provider name has no space around it (%s)", KeyPath("", trimmed)))
	}
	for _, known := range scopenames.Providers() {
		if known != name && strings.EqualFold(known, name) {
			// As for aws, azure and gcp: an integration's scopes say
			// known, so no call goes by name.
			return errorf(path, fmt.Sprintf("%q is not %s, whose calls go by ratelimit.providers.%s (provider names are case-sensitive)", name, known, known))
		}
	}
	for _, twin := range names {
		if twin != name && strings.EqualFold(twin, name) {
			return errorf(path, fmt.Sprintf("%q and %q differ in case alone, and name two providers (provider names are case-sensitive): keep the one your scopes say", name, twin))
		}
	}
	return nil
}
