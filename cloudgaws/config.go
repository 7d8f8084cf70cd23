package cloudgaws

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/cloudg/cloudg/resilience"
	"go.yaml.in/yaml/v3"
)

// The SDK retry settings' defaults (the spec's aws.max_retries and
// aws.retry_mode).
const (
	// DefaultMaxRetries is the retries the SDK makes after the first
	// attempt: 10, so up to 11 attempts per call.
	DefaultMaxRetries = 10
	// DefaultRetryMode is the SDK's adaptive retry mode.
	DefaultRetryMode = aws.RetryModeAdaptive
)

// Config is the spec's top-level aws section as far as the SDK's own retry
// loop goes: how many retries the SDK makes after the first attempt and in
// which mode. These are not ratelimit.aws.max_retries, which bounds the
// retries of resilience.Call. Zero fields take the defaults (10 retries,
// adaptive), unless the aws.Config being instrumented already says
// otherwise (see Install).
type Config struct {
	// MaxRetries is the retries after the first attempt; nil: the default.
	MaxRetries *int `yaml:"max_retries,omitempty" json:"max_retries,omitempty"`
	// RetryMode is standard or adaptive; "": the default.
	RetryMode aws.RetryMode `yaml:"retry_mode,omitempty" json:"retry_mode,omitempty"`
}

// Validate reports the first setting that cannot work, naming its key path
// (aws.retry_mode: ...), as a *resilience.ConfigError.
func (c Config) Validate() error {
	if c.MaxRetries != nil && *c.MaxRetries < 0 {
		return &resilience.ConfigError{Path: "aws.max_retries", Msg: "must be >= 0"}
	}
	switch c.RetryMode {
	case "", aws.RetryModeStandard, aws.RetryModeAdaptive:
	default:
		return &resilience.ConfigError{Path: "aws.retry_mode",
			Msg: fmt.Sprintf("unknown retry mode %q (standard or adaptive)", c.RetryMode)}
	}
	return nil
}

// ParseConfig reads max_retries and retry_mode from the top-level aws
// section of a YAML or JSON configuration document (the whole document, as
// the core's resilience.ParseConfig reads its ratelimit section from it).
// The section's other keys belong to other parts of the program and are
// ignored; a document without an aws section is the zero Config. Malformed
// values are *resilience.ConfigError values naming the key path:
//
//	aws.max_retries: "three" is not a whole number
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil
		}
		return Config{}, &resilience.ConfigError{Path: "aws", Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	n := deref(&doc)
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return cfg, nil
		}
		n = deref(n.Content[0])
	}
	if isNull(n) {
		return cfg, nil
	}
	if n.Kind != yaml.MappingNode {
		return Config{}, &resilience.ConfigError{Path: "aws", Msg: "the document must be a mapping"}
	}
	var section *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).Value == "aws" {
			section = deref(n.Content[i+1])
			break
		}
	}
	if section == nil || isNull(section) {
		return cfg, nil
	}
	if section.Kind != yaml.MappingNode {
		return Config{}, &resilience.ConfigError{Path: "aws", Msg: "must be a mapping"}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(section.Content); i += 2 {
		key := deref(section.Content[i]).Value
		val := deref(section.Content[i+1])
		path := "aws." + key
		switch key {
		case "max_retries", "retry_mode":
		default:
			continue
		}
		if seen[key] {
			return Config{}, &resilience.ConfigError{Path: path, Msg: "duplicate key"}
		}
		seen[key] = true
		if isNull(val) {
			continue
		}
		if val.Kind != yaml.ScalarNode {
			return Config{}, &resilience.ConfigError{Path: path, Msg: "must be a single value"}
		}
		switch key {
		case "max_retries":
			n, err := wholeNumber(val, path)
			if err != nil {
				return Config{}, err
			}
			cfg.MaxRetries = &n
		case "retry_mode":
			if val.ShortTag() != "!!str" {
				return Config{}, &resilience.ConfigError{Path: path, Msg: fmt.Sprintf("%q is not a string", val.Value)}
			}
			cfg.RetryMode = aws.RetryMode(strings.ToLower(strings.TrimSpace(val.Value)))
		}
	}
	if err := cfg.Validate(); err != nil {
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

func wholeNumber(n *yaml.Node, path string) (int, error) {
	bad := &resilience.ConfigError{Path: path, Msg: fmt.Sprintf("%q is not a whole number", n.Value)}
	switch n.ShortTag() {
	case "!!int", "!!float":
	default:
		return 0, bad
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		var x float64
		if derr := n.Decode(&x); derr != nil {
			return 0, bad
		}
		f = x
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, bad
	}
	if f < 0 {
		return 0, &resilience.ConfigError{Path: path, Msg: "must be >= 0"}
	}
	return int(f), nil
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}
