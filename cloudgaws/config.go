package cloudgaws

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/cloudg/cloudg/internal/yamlconf"
)

// The defaults of the SDK's retry settings, aws.max_retries and
// aws.retry_mode.
const (
	// DefaultMaxRetries is the retries the SDK makes after the first
	// attempt: 10, so up to 11 attempts per call.
	DefaultMaxRetries = 10
	// DefaultRetryMode is the SDK's standard retry mode. Its adaptive
	// mode adds a client-side rate limiter of its own under the
	// governor's buckets; in the simulator (sim/README.md, "cloudgaws: the
	// SDK's standard or adaptive mode under the governor") that second
	// limiter cost goodput in every scenario, so the governor paces alone
	// unless aws.retry_mode asks for adaptive.
	DefaultRetryMode = aws.RetryModeStandard
)

// Config is the top-level aws section of the configuration document as
// far as the SDK's own retry loop goes: how many retries the SDK makes
// after the first attempt and in which mode. These are not
// ratelimit.aws.max_retries, which bounds the retries of resilience.Call.
// Zero fields take the defaults (10 retries, standard), unless the
// aws.Config being instrumented already says
// otherwise (see Install): the zero Config changes nothing. A Config is a
// plain value; Validate only reads it, so goroutines may share one that
// none of them changes.
type Config struct {
	// MaxRetries is the retries after the first attempt; nil: the default.
	MaxRetries *int `yaml:"max_retries,omitempty" json:"max_retries,omitempty" range:">=0"`
	// RetryMode is standard or adaptive; "": the default.
	RetryMode aws.RetryMode `yaml:"retry_mode,omitempty" json:"retry_mode,omitempty"`
}

// Validate reports every setting that cannot work, each naming its key
// path (aws.retry_mode: ...), joined with errors.Join.
func (c Config) Validate() error {
	errs := yamlconf.CheckRanges(&c, "aws")
	switch c.RetryMode {
	case "", aws.RetryModeStandard, aws.RetryModeAdaptive:
	default:
		errs = append(errs, &yamlconf.Error{Path: "aws.retry_mode",
			Msg: fmt.Sprintf("unknown retry mode %q (standard or adaptive)", c.RetryMode)})
	}
	return errors.Join(errs...)
}

// ParseConfig reads max_retries and retry_mode from the AWS SDK's section
// of a YAML or JSON configuration document, the same document the core's
// resilience.ParseConfig and liveop.ParseConfig read, in either of its
// forms. In the long form (a whole configuration, with a ratelimit key)
// the SDK's section is the top-level aws. In the short form (the
// governor's ratelimit section alone: aws: {max_rps: 5}) there is none,
// and ParseConfig returns the zero Config. A document without a ratelimit
// key is the short form unless its top-level aws holds retry_mode, which
// only the SDK's section has: aws: {max_retries: 3, retry_mode: standard}
// alone is the SDK's. A top-level aws holding max_retries alone, which
// either section has, is an error that says how to write each.
//
// The section is strict: a key other than those two is an error, not
// ignored. A document without an aws section is the zero Config.
// Malformed values, and a null max_retries or retry_mode (which would
// read as the default that leaving the key out says), are errors naming
// the key path,
// all of them at once (errors.Join):
//
//	aws.max_retries: "three" is not a number
//	aws.max_retires: unknown key (did you mean max_retries?)
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	top, err := yamlconf.Document(data, "aws")
	if err != nil || top == nil {
		return Config{}, err
	}
	_, sec, err := yamlconf.Layout(top)
	if err != nil || sec == nil {
		return Config{}, err
	}
	err = (yamlconf.Decoder{}).Decode(&cfg, sec, "aws", false)
	cfg.RetryMode = aws.RetryMode(strings.ToLower(strings.TrimSpace(string(cfg.RetryMode))))
	if err := errors.Join(err, cfg.Validate()); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

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
